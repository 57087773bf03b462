"""First occurrences over many replays (issue 22's "first occurrences, Criss ÷ plain Spark"):
each replay's ratio (every pair of a Criss application and the plain one of the same
replica), and over all of them the median, the worst, the pooled ratio (all Criss seconds
÷ all plain seconds) with a bootstrap interval over replays, and the pooled ratio split by
whether Criss ran before or after plain Spark at the position (``run_order`` rotates the
order; a replay's first occurrences fall on either unevenly).

    python -m experiments.results.issue22.session37.probes.first_occurrences_pooled FILE...
"""

import json
import random
import statistics
import sys

from experiments.summary import first_positions, replica_views, statement_keys

#: Resamples of the replays for the pooled ratio's interval.
RESAMPLES = 2000


def first_sights(data: dict) -> list[tuple[float, float, bool]]:
    """(plain seconds, Criss seconds, Criss ran after plain) of each statement's first
    position, in a replay of the two modes (one replica's, see ``replica_views``)."""
    plain, criss = data["modes"]["spark"]["queries"], data["modes"]["criss"]["queries"]
    rows = []
    for position in first_positions(statement_keys(data)):
        base, mine = plain[position], criss[position]
        after = mine.get("turn", 0) > base.get("turn", 0)
        rows.append((base["seconds"], mine["seconds"], after))
    return rows


def _ratio(rows: list[tuple[float, float, bool]]) -> float:
    return sum(r[1] for r in rows) / sum(r[0] for r in rows)


def main(paths: list[str]) -> None:
    replays: list[tuple[str, list[tuple[float, float, bool]]]] = []
    for path in paths:
        data = json.load(open(path))
        if not {"spark", "criss"} <= set(data.get("modes", {})):
            continue
        for replica, view in replica_views(data):
            if replica != "mean":  # each application pair counts, not their average
                name = f"{path.split('/')[-1]} ({replica or 1})"
                replays.append((name, first_sights(view)))
    if not replays:
        print("no replay with plain Spark and Criss")
        return
    for name, rows in replays:
        after = sum(1 for r in rows if r[2])
        print(f"{_ratio(rows):.3f}  {len(rows):3d} first occurrences ({after} after plain)  {name}")
    ratios = [_ratio(rows) for _, rows in replays]
    pooled = [row for _, rows in replays for row in rows]
    rng = random.Random(0)
    resampled = sorted(
        _ratio([row for _, rows in rng.choices(replays, k=len(replays)) for row in rows])
        for _ in range(RESAMPLES)
    )
    low, high = resampled[int(0.05 * RESAMPLES)], resampled[int(0.95 * RESAMPLES) - 1]
    print(
        f"{len(replays)} replays: median {statistics.median(ratios):.3f}, worst {max(ratios):.3f};"
        f" pooled {_ratio(pooled):.3f} (90% interval over replays {low:.3f}-{high:.3f})"
    )
    for label, after in (("after", True), ("before", False)):
        rows = [row for row in pooled if row[2] is after]
        if rows:
            print(f"  Criss ran {label} plain Spark: {len(rows)} occurrences, {_ratio(rows):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
