"""Positions of replay files that cached without reusing, against those that did neither:
how many, and the medians of Criss's seconds minus plain Spark's and of what went with them
(planning, preparing caches, background work, idle waits, GC, classes compiled, bytes)."""

import json
import statistics
import sys

FIELDS = ("extra", "plan", "prep", "bg", "wait", "pwait", "gc", "comp", "bytes")


def _row(query: dict, plain: dict) -> dict:
    counters = query.get("criss") or {}
    return {
        "extra": query["seconds"] - plain["seconds"],
        "plan": counters.get("planning_seconds", 0),
        "prep": counters.get("phase_seconds", {}).get("prepare", 0),
        "bg": query.get("background_seconds", 0),
        "wait": query.get("idle_wait", 0),
        "pwait": plain.get("idle_wait", 0),
        "gc": query.get("jvm_gc_seconds", 0) - plain.get("jvm_gc_seconds", 0),
        "comp": (query.get("classes_compiled") or 0) - (plain.get("classes_compiled") or 0),
        "bytes": counters.get("bytes_written", 0),
        "q": query["query"],
    }


def main(paths: list[str]) -> None:
    for path in paths:
        data = json.load(open(path))
        plain = {q["position"]: q for q in data["modes"]["spark"]["queries"]}
        rows: dict[str, list[dict]] = {"cache_only": [], "nothing": []}
        for query in data["modes"]["criss"]["queries"]:
            counters = query.get("criss") or {}
            cached = counters.get("operators_cached") or 0
            reused = counters.get("operators_reused") or 0
            if query["position"] < 5 or reused:
                continue
            kind = "cache_only" if cached else "nothing"
            rows[kind].append(_row(query, plain[query["position"]]))
        for kind, found in rows.items():
            medians = {f: round(statistics.median(r[f] for r in found), 3) for f in FIELDS}
            print(path.split("/")[-1][:30], kind, len(found), medians)
        for row in sorted(rows["cache_only"], key=lambda r: r["q"]):
            print("   ", {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()})


if __name__ == "__main__":
    main(sys.argv[1:])
