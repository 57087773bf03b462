"""First sights that reused nothing, Criss ÷ plain Spark by TPC-H template, pooled over the
committed SF 1 replays of sessions 61-65 (each application pair of a replay counted): which
templates pay more than others on first sight, every stream and seed together. From the
repository root:

    python -m experiments.results.issue22.session65.probes.first_sights_by_template
"""

import collections
import glob
import json
import statistics


def main() -> None:
    ratios = collections.defaultdict(list)
    cached_more = collections.defaultdict(list)
    files = sorted(glob.glob("experiments/results/issue2[02]/session6[12345]/*sf1-*.json"))
    for name in files:
        modes = json.load(open(name)).get("modes", {})
        pairs = [("spark", "criss")] + ([("spark#2", "criss#2")] if "criss#2" in modes else [])
        for plain, criss in pairs:
            if plain not in modes or criss not in modes:
                continue
            seen: set[str] = set()
            for p, c in zip(modes[plain]["queries"], modes[criss]["queries"], strict=True):
                if c["statement"] in seen:
                    continue
                seen.add(c["statement"])
                counters = c.get("criss", {})
                if counters.get("operators_reused", 0):
                    continue
                ratios[p["query"]].append(c["seconds"] / p["seconds"])
                cached_more[p["query"]].append(counters.get("operators_cached", 0) > 1)
    print(f"# {len(files)} replays; first sights that reused nothing, Criss / plain")
    print("template  n  median  mean  share caching more than its result")
    pooled = []
    for query in sorted(ratios, key=lambda q: int(q[1:])):
        values = ratios[query]
        pooled += values
        share = sum(cached_more[query]) / len(values)
        print(
            f"{query:5s} {len(values):4d}  {statistics.median(values):.3f}  "
            f"{statistics.mean(values):.3f}  {share:.2f}"
        )
    print(f"all   {len(pooled):4d}  {statistics.median(pooled):.3f}  {statistics.mean(pooled):.3f}")


if __name__ == "__main__":
    main()
