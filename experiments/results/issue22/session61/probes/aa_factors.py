"""Is an application's speed a factor of its own, or the sum of independent per-statement
noise? Per position, each replica's seconds over the position's mean: the mean coefficient
of variation of those, then each replica's mean factor over the even and over the odd
positions (a persistent factor shows in both halves alike).

    python aa_factors.py REPLAY.json ...
"""

from __future__ import annotations

import json
import statistics
import sys


def main(paths: list[str]) -> None:
    for path in paths:
        modes = json.load(open(path))["modes"]
        names = sorted(modes)
        relative = []
        for i in range(len(modes[names[0]]["queries"])):
            secs = [modes[n]["queries"][i]["seconds"] for n in names]
            mean = statistics.mean(secs)
            relative.append([s / mean for s in secs])
        cv = statistics.mean(statistics.pstdev(r) for r in relative)
        halves = [
            [round(statistics.mean(r[k] for r in relative[start::2]), 3) for k in range(len(names))]
            for start in (0, 1)
        ]
        print(
            f"{path.split('/')[-1]} mean per-position CV {cv:.3f} even {halves[0]} odd {halves[1]}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
