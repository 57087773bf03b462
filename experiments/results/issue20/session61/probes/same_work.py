"""Two replays of one stream, split by position into those where Criss did the same work in
both (the same operators reused and cached, the same bytes read or not, the same lifts) and
those where it did not: how much of the difference between the runs is the applications'
speed, and how much Criss's decisions.

    python same_work.py RUN_A.json RUN_B.json [MODE]
"""

from __future__ import annotations

import json
import sys


def work(counters: dict) -> tuple:
    return (
        counters.get("operators_reused", 0),
        counters.get("operators_cached", 0),
        counters.get("bytes_read", 0) > 0,
        counters.get("aggregates_lifted", 0),
    )


def main(first: str, second: str, mode: str = "criss") -> None:
    a = json.load(open(first))["modes"]
    b = json.load(open(second))["modes"]
    groups: dict[str, list[float]] = {"same": [0] * 5, "different": [0] * 5}
    pairs = zip(
        a[mode]["queries"],
        a["spark"]["queries"],
        b[mode]["queries"],
        b["spark"]["queries"],
        strict=True,
    )
    for criss_a, plain_a, criss_b, plain_b in pairs:
        same = work(criss_a["criss"]) == work(criss_b["criss"])
        group = groups["same" if same else "different"]
        for i, q in enumerate((None, criss_a, criss_b, plain_a, plain_b)):
            group[i] += 1 if q is None else q["seconds"]
    for name, (n, ca, cb, pa, pb) in groups.items():
        print(
            f"{name} work, {n} positions: Criss {ca:.1f} / {cb:.1f} s, plain {pa:.1f} / "
            f"{pb:.1f} s, Criss ÷ plain {ca / pa:.3f} / {cb / pb:.3f}"
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
