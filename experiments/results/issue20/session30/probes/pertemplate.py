"""Per template of a replay file: plain and Criss seconds, with each position as
plain/Criss and C (cached), R (reused), F (fell back)."""

import collections
import json
import sys


def main(path: str) -> None:
    data = json.load(open(path))
    plain = {q["position"]: q for q in data["modes"]["spark"]["queries"]}
    criss = {q["position"]: q for q in data["modes"]["criss"]["queries"]}
    by_template = collections.defaultdict(lambda: [0, 0.0, 0.0, []])
    for position, query in criss.items():
        row = by_template[query["query"]]
        row[0] += 1
        row[1] += plain[position]["seconds"]
        row[2] += query["seconds"]
        counters = query.get("criss") or {}
        tag = ""
        if counters.get("operators_cached") or counters.get("operators_cached_in_action"):
            tag += "C"
        if counters.get("operators_reused"):
            tag += "R"
        if counters.get("fallback"):
            tag += "F"
        row[3].append(f"{position}:{plain[position]['seconds']:.2f}/{query['seconds']:.2f}{tag}")
    total_plain = sum(v[1] for v in by_template.values())
    total_criss = sum(v[2] for v in by_template.values())
    print(f"plain {total_plain:.1f} criss {total_criss:.1f}")
    for name, (n, p, c, cells) in sorted(
        by_template.items(), key=lambda kv: kv[1][2] - kv[1][1], reverse=True
    ):
        head = f"{name:4} n={n:2} plain {p:6.2f} criss {c:6.2f} diff {c - p:+6.2f}"
        print(f"{head} ratio {c / p:.2f}  " + " ".join(cells[:8]))


if __name__ == "__main__":
    main(sys.argv[1])
