"""Two ``tpcds_planning`` runs side by side, over the queries both measured: totals of
plain Spark's optimizer, Criss's planning, the action and the work after it, and the
queries whose planning or after-action work moved most.

    .venv/bin/python PROBE BEFORE.json AFTER.json
"""

import json
import sys

KEYS = ("optimize", "planning", "action", "after")


def load(path: str) -> dict[str, dict]:
    return {r["query"]: r for r in json.load(open(path))["queries"] if "planning" in r}


def main(before_path: str, after_path: str) -> None:
    before, after = load(before_path), load(after_path)
    common = [q for q in before if q in after]
    print(f"{len(common)} queries measured by both")
    for key in KEYS:
        old, new = (sum(run[q][key] for q in common) for run in (before, after))
        print(f"  {key:9s} {old:7.2f} s -> {new:7.2f} s ({new - old:+.2f})")
    for key in ("planning", "after"):
        moved = sorted(common, key=lambda q: after[q][key] - before[q][key])[:8]
        shown = ", ".join(f"{q} {before[q][key]:.2f}->{after[q][key]:.2f}" for q in moved)
        print(f"  most {key} saved: {shown}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
