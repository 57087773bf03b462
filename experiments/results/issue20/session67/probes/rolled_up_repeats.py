"""Repeats a roll-up served, and what caching their results as themselves did, per replay.

For each replay JSON: the statements whose result a roll-up of a finer cached result
served (first sights and repeats apart, with Criss's seconds), the decisions to cache such
a result as itself (``kind`` ``result`` in ``lift_decisions``), and the repeats of a
statement whose result was cached that way, read exactly afterwards.

    python -m experiments.results.issue20.session67.probes.rolled_up_repeats FILE...
"""

from __future__ import annotations

import json
import statistics
import sys

from experiments.summary import first_positions, statement_keys


def main() -> None:
    for path in sys.argv[1:]:
        with open(path) as handle:
            result = json.load(handle)
        keys = statement_keys(result)
        firsts = set(first_positions(keys))
        queries = result["modes"]["criss"]["queries"]
        rolled_first, rolled_repeat, exact_after, decisions = [], [], [], []
        cached_as_itself: set[str] = set()
        for position, (key, query) in enumerate(zip(keys, queries, strict=True)):
            counters = query.get("criss") or {}
            if counters.get("rewrites_aggregate_rollup"):
                (rolled_first if position in firsts else rolled_repeat).append(query["seconds"])
            elif key in cached_as_itself and counters.get("operators_reused"):
                exact_after.append(query["seconds"])
            for decision in counters.get("lift_decisions", []):
                if decision.get("kind") == "result":
                    decisions.append((position, query["query"], decision["reason"]))
                    if decision["reason"] == "rolled_up_result_cached":
                        cached_as_itself.add(key)
        print(path.rsplit("/", 1)[-1])
        for name, seconds in (
            ("first sights rolled up", rolled_first),
            ("repeats rolled up", rolled_repeat),
            ("repeats read exactly once cached as itself", exact_after),
        ):
            median = f"{statistics.median(seconds):.3f}" if seconds else "-"
            print(f"  {name:44s} n={len(seconds):3d} total {sum(seconds):6.2f} s median {median} s")
        cached = sum(reason == "rolled_up_result_cached" for _, _, reason in decisions)
        print(f"  weighed for caching as itself: {len(decisions)}, cached {cached}")
        for position, template, reason in decisions:
            print(f"    {position:3d} {template:4s} {reason}")


if __name__ == "__main__":
    main()
