"""The positions of a replay where Criss did nothing (cached, reused and lifted nothing):
Criss's seconds over plain Spark's there, per pair of a Criss application and the plain
one of the same replica. Criss plans such a statement and hands Spark the query as it
was, so what they add beyond Criss's planning is how much faster one application ran
the same work than the other: a share of plain Spark's time that the whole replay's
comparison carries too. With replicas, every pairing of plain and Criss applications.

    python -m experiments.results.issue22.session37.probes.idle_positions FILE...
"""

import json
import statistics
import sys

from criss.workload.replay import base_mode, is_plain

#: Counters of a query at which Criss did something.
DOING = ("operators_cached", "operators_cached_in_action", "operators_reused", "aggregates_lifted")


def _idle(criss: dict) -> bool:
    counters = criss.get("criss") or {}
    return not any(counters.get(name) for name in DOING)


def main(paths: list[str]) -> None:
    for path in paths:
        modes = json.load(open(path))["modes"]
        plains = [m for m in modes if is_plain(m)]
        crisses = [m for m in modes if base_mode(m) == "criss"]
        for criss_mode in crisses:
            for plain_mode in plains:
                pairs = [
                    (base["seconds"], mine["seconds"], (mine.get("criss") or {}))
                    for base, mine in zip(
                        modes[plain_mode]["queries"], modes[criss_mode]["queries"], strict=True
                    )
                    if _idle(mine)
                ]
                if not pairs:
                    continue
                plain = sum(p[0] for p in pairs)
                extra = sum(p[1] - p[0] for p in pairs)
                planning = sum(p[2].get("planning_seconds") or 0.0 for p in pairs)
                median = statistics.median(p[1] - p[0] for p in pairs)
                total = sum(q["seconds"] for q in modes[plain_mode]["queries"])
                print(
                    f"{path.split('/')[-1]} {criss_mode} vs {plain_mode}: {len(pairs)} idle"
                    f" positions, plain {plain:.1f} s, Criss {extra:+.2f} s"
                    f" ({extra / plain:+.1%}; median {median:+.3f} s; planning {planning:.2f} s);"
                    f" plain's whole stream {total:.1f} s"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
