"""Two Criss modes of one replay side by side (``criss`` and a variant, e.g. ``criss-base``):
each mode's saving, share of the oracle and first occurrences against plain Spark, the
shared bases each cached or declined, and the positions where the two modes' work differed
(what they cached or reused), apart from those where it did not (the applications' speeds).

    python -m experiments.results.issue20.session68.probes.base_ab FILE [VARIANT]
"""

from __future__ import annotations

import json
import sys

from experiments.summary import first_positions, statement_keys, summarize

WORK = ("operators_cached", "operators_reused", "shared_bases_cached", "aggregates_lifted")


def _work(query: dict) -> tuple:
    counters = query.get("criss") or {}
    return tuple(counters.get(name, 0) for name in WORK)


def main() -> None:
    path = sys.argv[1]
    variant = sys.argv[2] if len(sys.argv) > 2 else "criss-base"
    with open(path) as handle:
        result = json.load(handle)
    summary = summarize(result)
    keys = statement_keys(result)
    firsts = set(first_positions(keys))
    plain = result["modes"]["spark"]["queries"]
    print(path.rsplit("/", 1)[-1], f"plain {summary['plain_seconds']:.1f} s,", end=" ")
    print(f"oracle saved {summary.get('oracle_time_saved', 0):.1%}")
    for mode in ("criss", variant):
        row = summary["modes"][mode]
        queries = result["modes"][mode]["queries"]
        first = sum(q["seconds"] for i, q in enumerate(queries) if i in firsts)
        first_plain = sum(q["seconds"] for i, q in enumerate(plain) if i in firsts)
        bases = sum((q.get("criss") or {}).get("shared_bases_cached", 0) for q in queries)
        declined = sum((q.get("criss") or {}).get("shared_bases_declined", 0) for q in queries)
        print(
            f"  {mode:12s} {row['total_seconds']:7.1f} s saved {row['time_saved']:.1%} "
            f"share of oracle {row.get('oracle_share')} first occurrences "
            f"{first / first_plain:.3f}x bases cached {bases} declined {declined} "
            f"checksums {row['checksums_match']}"
        )
    mine, other = result["modes"]["criss"]["queries"], result["modes"][variant]["queries"]
    same = [i for i in range(len(mine)) if _work(mine[i]) == _work(other[i])]
    differ = [i for i in range(len(mine)) if i not in same]
    for name, positions in (("same work", same), ("work differed", differ)):
        a = sum(mine[i]["seconds"] for i in positions)
        b = sum(other[i]["seconds"] for i in positions)
        print(f"  {name:14s} n={len(positions):3d} criss {a:7.2f} s {variant} {b:7.2f} s")
    for i in differ:
        print(
            f"    {i:3d} {mine[i]['query']:4s} {mine[i]['variant']:5s} "
            f"{'first ' if i in firsts else 'repeat'} plain {plain[i]['seconds']:6.3f} "
            f"criss {mine[i]['seconds']:6.3f} {_work(mine[i])} "
            f"{variant} {other[i]['seconds']:6.3f} {_work(other[i])}"
        )


if __name__ == "__main__":
    main()
