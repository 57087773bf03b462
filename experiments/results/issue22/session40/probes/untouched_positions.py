"""Criss ÷ plain Spark over the positions of a replay where Criss neither cached nor reused
anything (its planning and the statistics it reads are all it added), per pair of
applications, in the stream's first and second halves, with the JVM's GC seconds.

    python experiments/results/issue22/session40/probes/untouched_positions.py REPLAY.json ...
"""

import json
import sys


def untouched(criss_queries, plain_by_position):
    rows = []
    for query in criss_queries:
        counters = query.get("criss", {})
        if any(
            counters.get(k)
            for k in ("operators_reused", "operators_cached", "rewrites_aggregate_rollup")
        ):
            continue
        plain = plain_by_position[query["position"]]
        rows.append(
            (
                plain["seconds"],
                query["seconds"],
                plain.get("jvm_gc_seconds", 0.0),
                query.get("jvm_gc_seconds", 0.0),
            )
        )
    return rows


def ratio(rows):
    plain = sum(r[0] for r in rows)
    return sum(r[1] for r in rows) / plain if plain else float("nan")


def main() -> None:
    for path in sys.argv[1:]:
        modes = json.load(open(path))["modes"]
        for plain_mode in (m for m in modes if m.startswith("spark")):
            criss_mode = plain_mode.replace("spark", "criss")
            if criss_mode not in modes:
                continue
            plain = {q["position"]: q for q in modes[plain_mode]["queries"]}
            rows = untouched(modes[criss_mode]["queries"], plain)
            half = len(rows) // 2
            print(
                f"{path.rsplit('/', 1)[-1]} {plain_mode}/{criss_mode}: {len(rows)} positions, "
                f"Criss ÷ plain {ratio(rows):.3f} (first half {ratio(rows[:half]):.3f}, "
                f"second {ratio(rows[half:]):.3f}); GC plain {sum(r[2] for r in rows):.1f} s, "
                f"Criss {sum(r[3] for r in rows):.1f} s"
            )


if __name__ == "__main__":
    main()
