"""What a first occurrence cost beside plain Spark, per template and by what Criss cached
on it, over replays (both modes in one file): each distinct statement's first position
where Criss reused nothing and lifted nothing, grouped by template and by how many
operators its action cached (0: nothing; 1: its result; 2 or more: operators under the
result besides). A cost the noise of single positions hides (±0.5 s) shows as a median
over many replays. Beside each group: the median of what each added, over the template's
result-only first occurrences where it cached more, over every other template's where it
cached its result, per second of the background write that followed it (what building
Spark's cache of rows the action does not return costs, as a share of writing them:
``IN_ACTION_BUILD_SHARE`` in ``criss.policies.decisions``).

    python -m experiments.results.issue22.session36.probes.first_sight_extras FILE...
"""

import json
import statistics
import sys
from collections import defaultdict


def first_sights(path: str):
    """(template, operators cached, Criss − plain seconds, background seconds) of each
    first occurrence where Criss reused and lifted nothing."""
    data = json.load(open(path))
    modes = data.get("modes", {})
    if "spark" not in modes or "criss" not in modes:
        return
    seen = set()
    queries = zip(modes["spark"]["queries"], modes["criss"]["queries"], strict=True)
    for plain, criss in queries:
        if plain["statement"] in seen:
            continue
        seen.add(plain["statement"])
        counters = criss.get("criss", {})
        if counters.get("operators_reused") or counters.get("aggregates_lifted"):
            continue
        cached = min(counters.get("operators_cached") or 0, 2)
        extra = criss["seconds"] - plain["seconds"]
        yield plain["query"], cached, extra, criss.get("background_seconds") or 0.0


def build_share(extras: list[float], writes: list[float], result_only: list[float]) -> str:
    """The median of (extra − the template's result-only median) ÷ background seconds."""
    if not result_only:
        return "-"
    base = statistics.median(result_only)
    shares = [(x - base) / w for x, w in zip(extras, writes, strict=True) if w > 0]
    return f"{statistics.median(shares):+.2f}" if shares else "-"


def main(paths: list[str]) -> None:
    extras, writes = defaultdict(list), defaultdict(list)
    replays = 0
    for path in paths:
        sights = list(first_sights(path))
        replays += bool(sights)
        for template, cached, extra, background in sights:
            extras[(template, cached)].append(extra)
            writes[(template, cached)].append(background)
    idle = [x for (_, cached), xs in extras.items() if cached == 0 for x in xs]
    print(
        f"{replays} replays; nothing cached: {len(idle)} first occurrences, "
        f"median {statistics.median(idle):+.3f} s"
    )
    print("template  cached  n   median  mean   build share")
    rows = [(key, xs) for key, xs in extras.items() if key[1] > 0]
    for (template, cached), xs in sorted(rows, key=lambda r: -statistics.median(r[1])):
        if cached > 1:
            base = extras.get((template, 1), [])
        else:  # against every other template's result-only first occurrences
            base = [x for (t, c), ys in extras.items() if c == 1 and t != template for x in ys]
        share = build_share(xs, writes[(template, cached)], base)
        label = "result" if cached == 1 else "more"
        print(
            f"{template:8}  {label:6}  {len(xs):2}  {statistics.median(xs):+.2f}  "
            f"{statistics.mean(xs):+.2f}  {share}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
