"""The first occurrences of a replay file: plain Spark's and Criss's seconds over them, and
the eight that cost Criss the most against plain Spark (what each cached, its planning and
the bytes it wrote).

    python experiments/results/issue22/session34/probes/first_occurrences.py FILE...
"""

import json
import sys


def _firsts(data: dict) -> list[tuple]:
    plain = {q["position"]: q for q in data["modes"]["spark"]["queries"]}
    seen, rows = set(), []
    for query in data["modes"]["criss"]["queries"]:
        if query["statement"] in seen:
            continue
        seen.add(query["statement"])
        counters, base = query["criss"], plain[query["position"]]
        rows.append(
            (
                query["seconds"] - base["seconds"],
                query["position"],
                query["query"],
                base["seconds"],
                query["seconds"],
                counters.get("operators_cached"),
                counters.get("operators_reused"),
                counters.get("planning_seconds"),
                counters.get("bytes_written"),
            )
        )
    return rows


def main(paths: list[str]) -> None:
    for path in paths:
        rows = _firsts(json.load(open(path)))
        plain, criss = sum(r[3] for r in rows), sum(r[4] for r in rows)
        name = path.split("/")[-1]
        ratio = criss / plain
        print(f"{name} firsts {len(rows)} plain {plain:.1f} criss {criss:.1f} ratio {ratio:.3f}")
        for extra, position, query, base, mine, cached, reused, plan, written in sorted(
            rows, reverse=True
        )[:8]:
            print(
                f"   {extra:+.2f} pos {position} {query} {base:.2f}->{mine:.2f} cached {cached}"
                f" reused {reused} plan {plan} bytes {written}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
