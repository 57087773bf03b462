"""Per template of a replay with replicas: each application's seconds summed over the
template's positions, and what the two plain applications (and the two Criss ones) differ
by, largest plain difference first. Two plain applications running the same statements in
the same order differ by this much: what a single run's per-template gains and losses are
measured against.

    python -m experiments.results.issue22.session37.probes.per_template_replicas FILE
"""

import collections
import json
import sys

from criss.workload.replay import REPLICA_MARK


def main(path: str) -> None:
    modes = json.load(open(path))["modes"]
    names = list(modes)
    sums: dict[str, dict[str, float]] = collections.defaultdict(lambda: dict.fromkeys(names, 0.0))
    for mode, played in modes.items():
        for query in played["queries"]:
            sums[query["query"]][mode] += query["seconds"]
    print("template  " + "  ".join(f"{m:>8}" for m in names) + "  plain diff  Criss diff")

    def apart(template: str, mode: str) -> float:
        """The first application of ``mode`` less its second replica, on ``template``."""
        row = sums[template]
        return row[mode] - row.get(f"{mode}{REPLICA_MARK}2", row[mode])

    for template in sorted(sums, key=lambda t: -apart(t, "spark")):
        row = sums[template]
        plain, criss = apart(template, "spark"), apart(template, "criss")
        cells = "  ".join(f"{row[m]:8.2f}" for m in names)
        print(f"{template:<8}  {cells}  {plain:+10.2f}  {criss:+10.2f}")
    totals = "  ".join(f"{sum(r[m] for r in sums.values()):8.2f}" for m in names)
    print(f"{'total':<8}  {totals}")


if __name__ == "__main__":
    main(sys.argv[1])
