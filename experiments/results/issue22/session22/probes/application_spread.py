"""Probe (session 22): how far Spark applications running the same plans differ.

Three applications replay one stream as ``criss replay --isolation application`` does
(each mode in a child process with a Spark application of its own, the modes in
``run_order``, an idle machine before each timed statement, after each application's
warm-up): two plain Spark ones and one with Criss disabled (``enabled=False``: its
listener registered, nothing planned). Found (SF 1, Zipf-QS seed 23, 60 queries): the
two plain applications 113.77 s and 113.85 s, the disabled-Criss one 105.55 s (median
position 0.931x plain); the same comparison through ``criss replay --variant
off:enabled=false`` an hour earlier: 112.7 s against plain's 107.8 s (1.077x).

    .venv/bin/python experiments/results/issue22/session22/probes/application_spread.py \
        data/tpch/sf1 23 application-spread-zipf-sf1-60-seed23.json
"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

from criss.workload.applications import ApplicationPlayer
from criss.workload.idle import wait_for_idle
from criss.workload.replay import ReplayConfig, run_order


def main(data_dir: str, seed: int, out: str) -> None:
    config = ReplayConfig(
        stream="zipf",
        queries=60,
        sf=1.0,
        seed=seed,
        modes=("spark", "criss-off"),
        variants={"criss-off": {"enabled": False}},
        warmup=True,
        isolation="application",
        idle_wait=3.0,
    )
    stream = config.stream_queries()
    home = Path(tempfile.mkdtemp(prefix="application-spread-"))
    players = {
        "a": ApplicationPlayer(config, "spark", None, Path(data_dir), stream),
        "b": ApplicationPlayer(config, "spark", None, Path(data_dir), stream),
        "off": ApplicationPlayer(config, "criss-off", home / "off", Path(data_dir), stream),
    }
    for player in players.values():
        player.describe()
    for player in players.values():
        player.warm_up(None)
    runs: dict[str, list[dict]] = {k: [] for k in players}
    for item in stream:
        for key in run_order(tuple(players), item.position):
            wait_for_idle(3.0)
            runs[key].append(players[key].run(item))
    for player in players.values():
        player.close()
    summary = _summary(stream, runs, seed)
    print(json.dumps(summary))
    Path(out).write_text(json.dumps({"summary": summary, "runs": runs}))


def _summary(stream, runs: dict[str, list[dict]], seed: int) -> dict:
    seen: set[str] = set()
    first = dict.fromkeys(runs, 0.0)
    for i, item in enumerate(stream):
        if item.sql not in seen:
            seen.add(item.sql)
            for key in runs:
                first[key] += runs[key][i]["seconds"]

    def median_ratio(x: str, y: str) -> float:
        pairs = zip(runs[y], runs[x], strict=True)
        return round(statistics.median(a["seconds"] / b["seconds"] for b, a in pairs), 3)

    return {
        "seed": seed,
        "total": {k: round(sum(r["seconds"] for r in v), 2) for k, v in runs.items()},
        "first": {k: round(v, 2) for k, v in first.items()},
        "median_ratio_b_a": median_ratio("b", "a"),
        "median_ratio_off_a": median_ratio("off", "a"),
        "median_ratio_off_b": median_ratio("off", "b"),
    }


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
