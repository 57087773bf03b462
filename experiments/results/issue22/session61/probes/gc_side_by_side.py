"""Plain Spark applications under two JVM settings, side by side on one seeded stream.

Four applications (two per setting), each a child process like a replay's, warmed up, then
alternated statement by statement in the replay's rotating order, each statement after the
replay's wait for idle CPUs. Prints each application's total and the two settings' means.

    python gc_side_by_side.py STREAM SEED QUERIES OUT.json
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import replace

from criss.workload.applications import ApplicationPlayer
from criss.workload.idle import wait_for_idle
from criss.workload.replay import ReplayConfig, _data, run_order

SETTINGS = {
    "g1": "-XX:+UseG1GC",  # the replay's default (criss.sparksession.LOCAL_DEFAULTS)
    "parallel": "-XX:+UseParallelGC",
}


def main(stream: str, seed: str, queries: str, out: str) -> None:
    base = ReplayConfig(
        stream=stream,
        seed=int(seed),
        queries=int(queries),
        sf=1.0,
        modes=("spark",),
        isolation="application",
        spark_conf={"spark.driver.memory": "4g"},
        idle_wait=3.0,  # the CLI's default
    )
    items = base.stream_queries()
    data_dir = _data(base)
    players = {}
    for name, options in SETTINGS.items():
        conf = {**base.spark_conf, "spark.driver.extraJavaOptions": options}
        config = replace(base, spark_conf=conf)
        for replica in ("", "#2"):
            players[name + replica] = ApplicationPlayer(
                config, "spark" + replica, None, data_dir, items
            )
    try:
        for player in players.values():
            player.describe()
        for player in players.values():
            player.warm_up()
        seconds: dict[str, list[float]] = {label: [] for label in players}
        for position, item in enumerate(items):
            for label in run_order(list(players), position):
                wait_for_idle(base.idle_wait)
                seconds[label].append(players[label].run(item)["seconds"])
    finally:
        for player in players.values():
            player.close()
    totals = {label: round(sum(s), 2) for label, s in seconds.items()}
    means = {name: statistics.mean(totals[name + r] for r in ("", "#2")) for name in SETTINGS}
    print(f"{stream} seed {seed}, {queries} queries, SF 1: totals {totals}")
    print(f"means {means}; parallel ÷ g1 {means['parallel'] / means['g1']:.3f}")
    with open(out, "w") as f:
        json.dump(
            {
                "stream": stream,
                "seed": int(seed),
                "settings": SETTINGS,
                "queries": [i.sql for i in items],
                "seconds": seconds,
            },
            f,
            indent=1,
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
