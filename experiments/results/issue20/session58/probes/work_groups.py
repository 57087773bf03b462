"""Two replays of one stream (``criss replay --out``), position by position, grouped by
the work Criss did in both: the same work with reuse, the same work caching only, the same
work doing nothing, or different work. Per group, Criss's and plain Spark's seconds in each
run, so a change of total can be told from a change of what Criss did.

    python experiments/results/issue20/session58/probes/work_groups.py OLD.json NEW.json
"""

from __future__ import annotations

import json
import sys

WORK = (
    "operators_cached_in_action",
    "operators_reused",
    "partitions_reused",
    "aggregates_lifted",
    "selections_widened",
)


def _work(query: dict) -> tuple[int, ...]:
    return tuple(query["criss"].get(key, 0) for key in WORK)


def _group(before: tuple[int, ...], after: tuple[int, ...]) -> str:
    if before != after:
        return "different work"
    if before[1]:
        return "same work, reuse"
    if before[0]:
        return "same work, caching only"
    return "same work, nothing"


def main() -> None:
    old, new = (json.load(open(path)) for path in sys.argv[1:3])
    modes = [run["modes"][m]["queries"] for run in (old, new) for m in ("criss", "spark")]
    groups: dict[str, list[float]] = {}
    for criss_old, plain_old, criss_new, plain_new in zip(*modes, strict=True):
        sums = groups.setdefault(_group(_work(criss_old), _work(criss_new)), [0] * 5)
        sums[0] += 1
        for i, query in enumerate((criss_old, criss_new, plain_old, plain_new), start=1):
            sums[i] += query["seconds"]
    print(
        "group | positions | Criss old (s) | Criss new (s) | plain old (s) | plain new (s)"
        " | Criss/plain old | Criss/plain new"
    )
    for name, (n, c_old, c_new, p_old, p_new) in sorted(groups.items()):
        print(
            f"{name} | {n} | {c_old:.1f} | {c_new:.1f} | {p_old:.1f} | {p_new:.1f}"
            f" | {c_old / p_old:.3f} | {c_new / p_new:.3f}"
        )


if __name__ == "__main__":
    main()
