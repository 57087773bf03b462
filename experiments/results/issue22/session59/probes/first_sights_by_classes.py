"""Every committed TPC-H SF 1 replay's first occurrences where Criss only cached (nothing
reused, lifted or widened, no fall-back), Criss's seconds against plain Spark's at the same
position, grouped by how many more classes Spark's code generation compiled for Criss's
statement than for plain Spark's (each record's ``classes_compiled``), then by template.

    python experiments/results/issue22/session59/probes/first_sights_by_classes.py \
        'experiments/results/issue2[02]/session[3-5]*/*.json'
"""

from __future__ import annotations

import collections
import glob
import json
import statistics
import sys

BANDS = ((-99, -3, "<= -3"), (-2, 0, "-2..0"), (1, 2, "1-2"), (3, 5, "3-5"), (6, 10, "6-10"))


def first_sights(pattern: str) -> tuple[int, list[dict]]:
    files, found = 0, []
    for path in sorted(glob.glob(pattern)):
        try:
            replay = json.load(open(path))
        except (OSError, ValueError):
            continue
        modes = replay.get("modes") if isinstance(replay, dict) else None
        if not modes or "criss" not in modes or "spark" not in modes:
            continue
        if replay.get("benchmark", "tpch") != "tpch" or str(replay.get("sf")) not in ("1", "1.0"):
            continue
        files += 1
        seen: set[str] = set()
        for criss, plain in zip(modes["criss"]["queries"], modes["spark"]["queries"], strict=True):
            if criss["statement"] in seen:
                continue
            seen.add(criss["statement"])
            did = criss.get("criss", {})
            if any(
                did.get(k)
                for k in ("operators_reused", "aggregates_lifted", "selections_widened", "fallback")
            ):
                continue
            if "classes_compiled" not in criss:
                continue
            found.append(
                {
                    "template": criss["query"],
                    "extra_classes": criss["classes_compiled"] - plain["classes_compiled"],
                    "plain_classes": plain["classes_compiled"],
                    "criss": criss["seconds"],
                    "plain": plain["seconds"],
                    "cached": bool(did.get("operators_cached_in_action")),
                    "planning": did.get("planning_seconds", 0.0),
                }
            )
    return files, found


def _median(group: list[dict], value) -> float:
    return statistics.median(value(s) for s in group)


def _line(name: str, group: list[dict]) -> str:
    criss = sum(s["criss"] for s in group)
    plain = sum(s["plain"] for s in group)
    excess = _median(group, lambda s: s["criss"] - s["plain"])
    classes = _median(group, lambda s: s["extra_classes"])
    planning = _median(group, lambda s: s["planning"])
    return (
        f"{name:>8}: {len(group):5} first sights, Criss {criss:8.1f} s against {plain:8.1f} s "
        f"= {criss / plain:.3f}x; median excess {excess:+.3f} s, "
        f"median extra classes {classes:+.1f}, median planning {planning:.3f} s"
    )


def main() -> None:
    files, sights = first_sights(sys.argv[1])
    print(f"{files} replays, {len(sights)} first sights where Criss only cached or did nothing")
    print(_line("all", sights))
    for low, high, name in BANDS:
        print(_line(name, [s for s in sights if low <= s["extra_classes"] <= high]))
    print(_line("> 10", [s for s in sights if s["extra_classes"] > 10]))
    n = len(sights)
    mean_x = sum(s["extra_classes"] for s in sights) / n
    mean_y = sum(s["criss"] - s["plain"] for s in sights) / n
    slope = sum(
        (s["extra_classes"] - mean_x) * (s["criss"] - s["plain"] - mean_y) for s in sights
    ) / sum((s["extra_classes"] - mean_x) ** 2 for s in sights)
    print(
        f"least squares: excess = {mean_y - slope * mean_x:+.4f} s + {slope:.4f} s per extra class"
    )
    print("by template (median Criss / plain, median extra classes, mean plain classes):")
    templates = collections.defaultdict(list)
    for s in sights:
        templates[s["template"]].append(s)

    def ratio(s: dict) -> float:
        return s["criss"] / s["plain"]

    for name, group in sorted(templates.items(), key=lambda kv: -_median(kv[1], ratio)):
        classes = _median(group, lambda s: s["extra_classes"])
        plain_classes = statistics.mean(s["plain_classes"] for s in group)
        shown = f"{_median(group, ratio):.3f}x  {classes:+5.1f}  {plain_classes:5.1f}"
        print(f"  {name:>4}: {len(group):4}  {shown}")


if __name__ == "__main__":
    main()
