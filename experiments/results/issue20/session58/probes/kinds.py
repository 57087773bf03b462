"""One replay's Criss mode (``criss replay --out``), its positions grouped by what Criss
did there: reused a cached entry, cached on first sight (nothing reused), or neither; per
group, Criss's and plain Spark's seconds. ``FILE:MODE`` picks a variant (``criss-share``).

    python experiments/results/issue20/session58/probes/kinds.py RUN.json [RUN.json:MODE ...]
"""

from __future__ import annotations

import json
import sys


def _kind(query: dict) -> str:
    if query["criss"].get("operators_reused"):
        return "reuse"
    return "cache" if query["criss"].get("operators_cached_in_action") else "neither"


def main() -> None:
    for spec in sys.argv[1:]:
        path, _, mode = spec.partition(":")
        modes = json.load(open(path))["modes"]
        groups: dict[str, list[float]] = {}
        pairs = zip(modes[mode or "criss"]["queries"], modes["spark"]["queries"], strict=True)
        for criss, plain in pairs:
            sums = groups.setdefault(_kind(criss), [0, 0.0, 0.0])
            sums[0] += 1
            sums[1] += criss["seconds"]
            sums[2] += plain["seconds"]
        criss_total = sum(s[1] for s in groups.values())
        plain_total = sum(s[2] for s in groups.values())
        shown = "; ".join(
            f"{kind}: {n} positions, {c:.1f} s against {p:.1f} s = {c / p:.3f}x"
            for kind, (n, c, p) in sorted(groups.items())
        )
        print(f"{spec}: saved {1 - criss_total / plain_total:.1%}; {shown}")


if __name__ == "__main__":
    main()
