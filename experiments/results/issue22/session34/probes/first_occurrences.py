"""The first occurrences of a replay file: plain Spark's and Criss's seconds over them, and
the eight that cost Criss the most against plain Spark (what each cached, its planning and
the bytes it wrote).

    python -m experiments.results.issue22.session34.probes.first_occurrences FILE...
"""

import json
import sys

from experiments.summary import first_positions, split_first_and_repeats, statement_keys


def _firsts(data: dict, keys: list[str]) -> list[tuple]:
    plain, mine = data["modes"]["spark"]["queries"], data["modes"]["criss"]["queries"]
    rows = []
    for position in first_positions(keys):
        base, query = plain[position], mine[position]
        counters = query["criss"]
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
        data = json.load(open(path))
        keys = statement_keys(data)
        rows = _firsts(data, keys)
        plain, _ = split_first_and_repeats(data["modes"]["spark"]["queries"], keys)
        criss, _ = split_first_and_repeats(data["modes"]["criss"]["queries"], keys)
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
