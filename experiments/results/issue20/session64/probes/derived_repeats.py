"""Repeats served by a derivation (an aggregate roll-up, a filter subsumption) rather than
by their own cached result, in replays' JSON (session 64): how many, and what they took
against repeats read exactly. A statement served from a lifted aggregate is not itself
cached, so its repeat is derived again. From the repository root:

    python -m experiments.results.issue20.session64.probes.derived_repeats FILE...
"""

import json
import statistics
import sys
from pathlib import Path


def main(paths: list[str]) -> None:
    derived: list[float] = []
    exact: list[float] = []
    repeats = 0
    for path in paths:
        result = json.loads(Path(path).read_text())
        modes = result.get("modes", {})
        if "spark" not in modes or "criss" not in modes:
            continue
        seen: set[str] = set()
        here = 0
        plain, criss = modes["spark"]["queries"], modes["criss"]["queries"]
        for plain_query, query in zip(plain, criss, strict=True):
            key = plain_query["statement"]
            if key not in seen:
                seen.add(key)
                continue
            repeats += 1
            counters = query.get("criss", {})
            if any(name.startswith("rewrites_") for name in counters):
                here += 1
                derived.append(query["seconds"])
            elif counters.get("operators_reused"):
                exact.append(query["seconds"])
        print(f"{Path(path).name}: {here} of the repeats derived")
    if derived and exact:
        print(
            f"repeats {repeats}; derived {len(derived)}, median {statistics.median(derived):.3f} s "
            f"({sum(derived):.2f} s in all); read exactly {len(exact)}, median "
            f"{statistics.median(exact):.3f} s"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
