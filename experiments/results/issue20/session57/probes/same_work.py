"""Two replays of one stream (``criss replay --out``) side by side: at how many positions
Criss did the same work in both (what it cached, reused, lifted, widened), and what those
positions took in each run, so that a change of ratio can be told from a change of work.

    python experiments/results/issue20/session57/probes/same_work.py OLD.json NEW.json
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


def _work(run: dict) -> tuple[int, ...]:
    return tuple(run["criss"].get(key, 0) for key in WORK)


def _totals(replay: dict, positions: set[int]) -> tuple[float, float]:
    criss, plain = (replay["modes"][m]["queries"] for m in ("criss", "spark"))
    pick = [
        (c["seconds"], p["seconds"])
        for c, p in zip(criss, plain, strict=True)
        if c["position"] in positions
    ]
    return sum(c for c, _ in pick), sum(p for _, p in pick)


def main() -> None:
    old, new = (json.load(open(path)) for path in sys.argv[1:3])
    pairs = zip(old["modes"]["criss"]["queries"], new["modes"]["criss"]["queries"], strict=True)
    same, differ = set(), []
    for before, after in pairs:
        if _work(before) == _work(after):
            same.add(before["position"])
        else:
            differ.append((before["position"], before["query"], _work(before), _work(after)))
    print(f"same work at {len(same)} positions; differing ({', '.join(WORK)}):")
    for row in differ:
        print("  ", *row)
    for name, replay in (("old", old), ("new", new)):
        criss, plain = _totals(replay, same)
        print(f"{name}: at the same-work positions Criss {criss:.1f} s, plain {plain:.1f} s")


if __name__ == "__main__":
    main()
