"""Positions of replay files that cached without reusing, against those that did neither:
how many, and the sum and median of Criss's seconds minus plain Spark's."""

import json
import statistics
import sys


def main(paths: list[str]) -> None:
    for path in paths:
        data = json.load(open(path))
        plain = {q["position"]: q["seconds"] for q in data["modes"]["spark"]["queries"]}
        rows: dict[str, list[tuple]] = {"cache_only": [], "nothing": []}
        for query in data["modes"]["criss"]["queries"]:
            counters = query.get("criss") or {}
            cached = counters.get("operators_cached") or 0
            reused = counters.get("operators_reused") or 0
            seconds = plain[query["position"]]
            if query["position"] < 5:
                continue
            extra = query["seconds"] - seconds
            if cached and not reused:
                rows["cache_only"].append((extra, seconds, query["query"], query["position"]))
            if not cached and not reused:
                rows["nothing"].append((extra, seconds))
        for kind, found in rows.items():
            if found:
                diffs = [x[0] for x in found]
                print(
                    path.split("/")[-1][:40],
                    kind,
                    len(found),
                    f"sum diff {sum(diffs):.2f}",
                    f"median diff {statistics.median(diffs):.3f}",
                    f"sum plain {sum(x[1] for x in found):.1f}",
                )
        for row in sorted(rows["cache_only"]):
            print("   ", row)


if __name__ == "__main__":
    main(sys.argv[1:])
