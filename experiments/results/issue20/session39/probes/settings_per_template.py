"""Plain Spark's seconds per template in two replays of one stream under different
settings, each summed over every plain application of its file (``spark``, ``spark#2``),
largest difference first.

    python experiments/results/issue20/session39/probes/settings_per_template.py A.json B.json
"""

import json
import sys
from collections import defaultdict


def per_template(path: str) -> tuple[dict[str, float], int]:
    data = json.load(open(path))
    plain = [m for m in data["modes"] if m.split("#")[0] == "spark"]
    seconds: dict[str, float] = defaultdict(float)
    for mode in plain:
        for query in data["modes"][mode]["queries"]:
            seconds[query["query"]] += query["seconds"]
    return seconds, len(plain)


def main(first: str, second: str) -> None:
    a, na = per_template(first)
    b, nb = per_template(second)
    print(f"# A = {first} ({na} plain applications), B = {second} ({nb})")
    print(f"# totals: A {sum(a.values()):.2f} s, B {sum(b.values()):.2f} s")
    for template in sorted(a, key=lambda t: b.get(t, 0.0) - a[t], reverse=True):
        diff = b.get(template, 0.0) - a[template]
        print(f"{template:4} A {a[template]:6.2f}  B {b.get(template, 0.0):6.2f}  B-A {diff:+.2f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
