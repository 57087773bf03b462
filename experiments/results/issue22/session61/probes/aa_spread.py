"""Spread of per-application speed among the plain replicas of one replay: each
application's total, the largest over the smallest, each one's median per-statement factor
over the applications' mean, and its JVM collection seconds.

    python aa_spread.py REPLAY.json ...
"""

from __future__ import annotations

import json
import statistics
import sys


def main(paths: list[str]) -> None:
    for path in paths:
        modes = json.load(open(path))["modes"]
        secs = {n: [q["seconds"] for q in modes[n]["queries"]] for n in sorted(modes)}
        totals = {n: sum(v) for n, v in secs.items()}
        mean = [statistics.mean(x) for x in zip(*secs.values(), strict=True)]
        factors = {
            n: statistics.median(a / b for a, b in zip(v, mean, strict=True))
            for n, v in secs.items()
        }
        gc = {n: sum(q["jvm_gc_seconds"] for q in modes[n]["queries"]) for n in secs}
        print(
            path.split("/")[-1],
            "totals",
            {n: round(t, 1) for n, t in totals.items()},
            f"max/min {max(totals.values()) / min(totals.values()):.3f}",
            "median factors",
            {n: round(f, 3) for n, f in factors.items()},
            "gc",
            {n: round(g, 1) for n, g in gc.items()},
        )


if __name__ == "__main__":
    main(sys.argv[1:])
