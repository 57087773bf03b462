"""A replay's first sights split by what Criss did (session 65): those that reused a cached
entry, those that cached more than their result, and those that cached only their result;
per group, plain Spark's and Criss's seconds and Criss's recorded planning. Criss ÷ the
oracle's saving is 1 + (what the first sights saved) ÷ (the oracle's saving): the oracle
prices every repeat at Criss's own cost. From the repository root:

    python -m experiments.results.issue20.session65.probes.first_sights_split FILE...
"""

import json
import sys


def kind(counters: dict) -> str:
    if counters.get("operators_reused", 0):
        return "reused an entry"
    if counters.get("operators_cached", 0) > 1:
        return "cached more"
    return "result only"


def main() -> None:
    for name in sys.argv[1:]:
        modes = json.load(open(name))["modes"]
        groups: dict[str, list[float]] = {}
        seen: set[str] = set()
        for p, c in zip(modes["spark"]["queries"], modes["criss"]["queries"], strict=True):
            if c["statement"] in seen:
                continue
            seen.add(c["statement"])
            counters = c.get("criss", {})
            group = groups.setdefault(kind(counters), [0, 0.0, 0.0, 0.0])
            group[0] += 1
            group[1] += p["seconds"]
            group[2] += c["seconds"]
            group[3] += counters.get("planning_seconds", 0.0)
        print(name.rsplit("/", 1)[-1])
        for group_name, (n, plain, criss, planning) in groups.items():
            print(
                f"  {group_name:16s} n={n:2d} plain {plain:6.2f} s, Criss {criss:6.2f} s "
                f"({criss - plain:+.2f} s, {criss / plain:.3f}x), planning {planning:.2f} s"
            )


if __name__ == "__main__":
    main()
