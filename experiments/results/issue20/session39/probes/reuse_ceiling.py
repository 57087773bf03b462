"""How far a drift replay's Criss time is from what its own reuse kinds could give, and
where the difference goes.

A template is *served* in a replay when Criss read at least one of its later occurrences
from the cache (a lifted aggregate, a parameter-free subtree, a roll-up: whatever kind).
The ceiling with those kinds replays the stream with foresight: every first occurrence and
every occurrence of a template never served at plain Spark's time, every later occurrence of
a served template at the median time Criss took to serve that template. Criss's own time is
then split into what it spent beyond that ceiling:

* ``never served``: templates Criss never served, Criss's time minus plain Spark's;
* ``first sights``: the first occurrence of each served template, the same;
* ``learning sights``: later occurrences of a served template that Criss did not serve, or
  served from an aggregate it lifted in that same query (the sight that measures, lifts or
  caches what the others read), minus the served time;
* ``served``: the served occurrences, minus that template's served median.

    python experiments/results/issue20/session39/probes/reuse_ceiling.py FILE.json [...]
"""

import json
import re
import statistics
import sys
from collections import defaultdict


def served(query: dict) -> bool:
    """Read from the cache, and not the occurrence that computed a lifted aggregate to be
    served from (which reads it in the same query: a learning sight)."""
    counters = query.get("criss") or {}
    return bool(counters.get("operators_reused")) and not counters.get("aggregates_lifted")


def ceiling(plain: list[dict], criss: list[dict]) -> tuple[float, dict[str, float], list]:
    """The ceiling's seconds, Criss's seconds beyond it by kind, and per template."""
    served_times = defaultdict(list)
    for query in criss:
        if served(query):
            served_times[query["query"]].append(query["seconds"])
    median = {t: statistics.median(s) for t, s in served_times.items()}
    seen: set[str] = set()
    best, beyond = 0.0, defaultdict(float)
    by_template: dict[str, float] = defaultdict(float)
    for p, c in zip(plain, criss, strict=True):
        template = c["query"]
        later = template in seen
        seen.add(template)
        if template not in median:
            kind, cost = "never served", p["seconds"]
        elif not later:
            kind, cost = "first sights", p["seconds"]
        else:
            kind = "served" if served(c) else "learning sights"
            cost = median[template]
        best += cost
        beyond[kind] += c["seconds"] - cost
        by_template[template] += c["seconds"] - cost
    ranked = sorted(by_template.items(), key=lambda kv: -kv[1])
    return best, beyond, ranked


def main(paths: list[str]) -> None:
    for path in paths:
        data = json.load(open(path))
        modes = data["modes"]
        for mode in sorted(m for m in modes if re.fullmatch(r"criss(#\d+)?", m)):
            plain_mode = mode.replace("criss", "spark")
            plain, criss = modes[plain_mode]["queries"], modes[mode]["queries"]
            total_plain = sum(q["seconds"] for q in plain)
            total_criss = sum(q["seconds"] for q in criss)
            best, beyond, ranked = ceiling(plain, criss)
            print(
                f"{path.rsplit('/', 1)[-1]} {plain_mode}/{mode}: plain {total_plain:.1f} s, "
                f"Criss {total_criss:.1f} s ({1 - total_criss / total_plain:.1%} saved), "
                f"ceiling {best:.1f} s ({1 - best / total_plain:.1%})"
            )
            kinds = ("never served", "first sights", "learning sights", "served")
            print("  beyond the ceiling: " + ", ".join(f"{k} {beyond[k]:+.1f} s" for k in kinds))
            print("  by template: " + ", ".join(f"{t} {s:+.1f}" for t, s in ranked[:8]))


if __name__ == "__main__":
    main(sys.argv[1:])
