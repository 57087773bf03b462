"""Each replay position classed by what Criss did there, and Criss ÷ plain Spark per class.

Usage: python classes.py RESULT.json ...  (replay results files; no Spark needed)
Classes: "reused" (something served from the cache), "cached-result-on-driver" (only the
statement's own result cached, written on the driver), "cached-intermediate" (an operator
below the result cached), "nothing".
"""

import collections
import json
import sys

PAIRS = (("spark", "criss"), ("spark", "criss-results"), ("spark#2", "criss#2"))


def position_class(counters: dict) -> str:
    cached = counters.get("operators_cached")
    if counters.get("operators_reused"):
        return "reused"
    if cached and counters.get("entries_written_on_driver") == cached:
        return "cached-result-on-driver"
    return "cached-intermediate" if cached else "nothing"


def classes(plain: list[dict], criss: list[dict]) -> dict[str, list[float]]:
    """class → [positions, plain seconds, Criss seconds, Criss planning seconds]."""
    found: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for base, record in zip(plain, criss, strict=True):
        counters = record.get("criss") or {}
        row = found[position_class(counters)]
        row[0] += 1
        row[1] += base["seconds"]
        row[2] += record["seconds"]
        row[3] += counters.get("planning_seconds", 0.0)
    return found


for path in sys.argv[1:]:
    modes = {m: v["queries"] for m, v in json.load(open(path))["modes"].items()}
    for plain, criss in ((p, c) for p, c in PAIRS if p in modes and c in modes):
        cells = [
            f"{name} n={n} {p:.1f}/{c:.1f}={c / p:.3f} pl {pl:.2f}"
            for name, (n, p, c, pl) in classes(modes[plain], modes[criss]).items()
        ]
        print(path.split("/")[-1][:34], criss, " | ".join(cells))
