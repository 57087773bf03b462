"""Paired differences between the paths of ``first_sight_paths`` outputs, pooled: per pair
of paths the mean difference per first sight with its standard error, the median, and the
ratio of totals with a 90 % interval from resampling the template rounds, and the mean
difference where ``a`` ran before ``b`` and where after (a path that runs earlier runs
slower: their average is the estimate the order does not bias).

    python -m experiments.results.issue22.session38.probes.first_sight_paths_pooled \\
        first-sight-paths-fresh-57e9bf6.out first-sight-paths-same-57e9bf6.out
"""

import json
import random
import statistics
import sys

PAIRS = (
    ("not-cached", "plain"),
    ("cached", "plain"),
    ("cached", "not-cached"),
    ("cached", "uncompressed"),
    ("uncompressed", "not-cached"),
)
RESAMPLES = 2000


def ratio(rows: list[dict], a: str, b: str) -> float:
    return sum(r[a]["seconds"] for r in rows) / sum(r[b]["seconds"] for r in rows)


def ran_before(row: dict, a: str, b: str) -> bool:
    """Whether path ``a`` ran before ``b`` (each line lists the paths in the order run)."""
    order = list(row)
    return order.index(a) < order.index(b)


def main(paths: list[str]) -> None:
    rows = [json.loads(line) for p in paths for line in open(p) if line.startswith("{")]
    draw = random.Random(1)
    print(f"{len(rows)} template rounds from {len(paths)} files")
    for a, b in PAIRS:
        diffs = [r[a]["seconds"] - r[b]["seconds"] for r in rows]
        error = statistics.stdev(diffs) / len(diffs) ** 0.5
        ratios = sorted(ratio([draw.choice(rows) for _ in rows], a, b) for _ in range(RESAMPLES))
        low, high = ratios[RESAMPLES // 20], ratios[RESAMPLES - RESAMPLES // 20]
        print(
            f"{a} - {b}: mean {statistics.fmean(diffs) * 1e3:+.1f} ms (s.e. {error * 1e3:.1f}),"
            f" median {statistics.median(diffs) * 1e3:+.1f} ms; {ratio(rows, a, b):.3f}x"
            f" (90 % {low:.3f}-{high:.3f})"
        )
        split = [
            [d for d, r in zip(diffs, rows, strict=True) if ran_before(r, a, b) == first]
            for first in (True, False)
        ]
        if all(split):
            means = [statistics.fmean(d) * 1e3 for d in split]
            print(
                f"  {a} first: {means[0]:+.1f} ms ({len(split[0])}), after {b}:"
                f" {means[1]:+.1f} ms ({len(split[1])}); order-balanced {sum(means) / 2:+.1f} ms"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
