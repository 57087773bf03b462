"""The repeats of a replay (``criss replay --out``) and whether Criss served each: the
unserved ones with what their run did instead.

    python experiments/results/issue22/session57/probes/unserved.py REPLAY.json
"""

from __future__ import annotations

import json
import sys

QUIET = ("phase_seconds", "planning_seconds", "operators_seen")


def main() -> None:
    replay = json.load(open(sys.argv[1]))
    criss, plain = (replay["modes"][m]["queries"] for m in ("criss", "spark"))
    first_seen: dict[str, int] = {}
    for run, spark in zip(criss, plain, strict=True):
        statement, counters = run["statement"], run["criss"]
        if statement not in first_seen:
            first_seen[statement] = run["position"]
            continue
        served = bool(counters.get("operators_reused"))
        did = {k: v for k, v in counters.items() if v and k not in QUIET}
        print(
            run["position"],
            run["query"],
            run.get("variant"),
            "first at",
            first_seen[statement],
            f"plain {spark['seconds']:.2f} criss {run['seconds']:.2f}",
            "served" if served else f"UNSERVED {did}",
        )


if __name__ == "__main__":
    main()
