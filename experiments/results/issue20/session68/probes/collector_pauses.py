"""The JVM collector's long pauses in a replay: per application, the collector's seconds
over the first sights, and every position where one application spent more than
``PAUSE`` seconds collecting (a full collection lands in one application or the other,
wherever its old generation fills).

    python -m experiments.results.issue20.session68.probes.collector_pauses FILE...
"""

from __future__ import annotations

import json
import sys

from experiments.summary import first_positions, statement_keys

PAUSE = 0.25


def main() -> None:
    for path in sys.argv[1:]:
        with open(path) as handle:
            result = json.load(handle)
        firsts = set(first_positions(statement_keys(result)))
        plain = result["modes"]["spark"]["queries"]
        mine = result["modes"]["criss"]["queries"]
        totals = [
            sum(q.get("jvm_gc_seconds", 0) for i, q in enumerate(mode) if i in firsts)
            for mode in (plain, mine)
        ]
        print(path.rsplit("/", 1)[-1])
        print(f"  first sights' collector seconds: plain {totals[0]:.2f}, Criss {totals[1]:.2f}")
        for i, (a, b) in enumerate(zip(plain, mine, strict=True)):
            pauses = (a.get("jvm_gc_seconds", 0), b.get("jvm_gc_seconds", 0))
            if i in firsts and max(pauses) > PAUSE:
                print(
                    f"  {i:3d} {a['query']:4s} {a['variant']:5s} plain {a['seconds']:6.3f} s "
                    f"(collector {pauses[0]:.3f}) Criss {b['seconds']:6.3f} s "
                    f"(collector {pauses[1]:.3f})"
                )


if __name__ == "__main__":
    main()
