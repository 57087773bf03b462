"""What a replay's JSON says: the whole-query oracle, first occurrences against repeats,
planning percentiles and how often each kind of reuse fired, per mode."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from criss.workload.replay import REPLICA_MARK, base_mode, is_plain


def statement_keys(result: dict[str, Any]) -> list[str]:
    """Which statement ran at each position (a repeat is the same statement again).

    Older results lack the per-record statement hash: the seeded stream is regenerated.
    """
    queries = next(iter(result["modes"].values()))["queries"]
    if all("statement" in q for q in queries):
        return [q["statement"] for q in queries]
    from criss.workload.streams import make_stream

    stream = make_stream(
        result["stream"],
        result["queries"],
        result["seed"],
        result["sf"],
        zipf_skew=result.get("zipf_skew") or 1.0,
    )
    return [item.sql for item in stream]


def oracle_seconds(result: dict[str, Any]) -> float | None:
    """Perfect whole-query reuse from the measured times: each distinct statement costs its
    plain-Spark time once; every repeat costs the cheapest measured execution of it at that
    position in any Criss mode (at best a read of its cached result)."""
    modes = result["modes"]
    if "spark" not in modes:
        return None
    others = [m for m in modes if not is_plain(m)]
    seen: set[str] = set()
    total = 0.0
    plain = modes["spark"]["queries"]
    for i, (key, record) in enumerate(zip(statement_keys(result), plain, strict=True)):
        if key not in seen:
            seen.add(key)
            total += record["seconds"]
        elif others:
            total += min(modes[m]["queries"][i]["seconds"] for m in others)
    return total


def first_positions(keys: Iterable[Any]) -> list[int]:
    """The positions at which each statement (by its key) ran for the first time."""
    seen: set[Any] = set()
    firsts = []
    for position, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            firsts.append(position)
    return firsts


def split_first_and_repeats(
    queries: list[dict[str, Any]], keys: list[str] | None = None
) -> tuple[float, float]:
    """Seconds spent on first occurrences of a statement and on its repeats."""
    keys = keys or [q.get("statement") or (q["query"], q["variant"]) for q in queries]
    firsts = set(first_positions(keys))
    first = sum(q["seconds"] for i, q in enumerate(queries) if i in firsts)
    repeats = sum(q["seconds"] for i, q in enumerate(queries) if i not in firsts)
    return first, repeats


def planning_ms(queries: Iterable[dict[str, Any]]) -> dict[str, float] | None:
    """Median and p95 of Criss's per-query planning time (capture → rewrite), in ms."""
    values = sorted(
        1000 * q["criss"]["planning_seconds"]
        for q in queries
        if q.get("criss") and q["criss"].get("planning_seconds") is not None
    )
    if not values:
        return None
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return {"median": round(statistics.median(values), 1), "p95": round(p95, 1)}


#: Reuse kinds a replay reports, from each query's counters: the statement's whole result
#: again, an operator under a changed statement, or a rewrite rule (paper §2.2 and beyond).
REWRITE_KINDS = (
    "project_subset",
    "exchange_repartition",
    "join_rewrite",
    "filter_subsumption",
    "aggregate_rollup",
)


def reuse_kinds(queries: list[dict[str, Any]], keys: list[str]) -> dict[str, int]:
    """How often each kind of reuse fired along the stream: ``repeat`` (a statement seen
    before, read from the cache), ``subtree`` (an operator of a statement not seen before,
    read exactly), each rewrite rule, ``lifted`` (aggregates lifted over parameters) and
    ``widened`` (selections copied under the conditions their statements share)."""
    kinds = dict.fromkeys(("repeat", "subtree", *REWRITE_KINDS, "lifted", "widened"), 0)
    seen: set[str] = set()
    for key, record in zip(keys, queries, strict=True):
        counters = record.get("criss") or {}
        rewrites = {k: counters.get(f"rewrites_{k}", 0) for k in REWRITE_KINDS}
        exact = counters.get("operators_reused", 0) - sum(rewrites.values())
        kinds["repeat" if key in seen else "subtree"] += max(exact, 0)
        for kind, count in rewrites.items():
            kinds[kind] += count
        kinds["lifted"] += counters.get("aggregates_lifted", 0)
        kinds["widened"] += counters.get("selections_widened", 0)
        seen.add(key)
    return kinds


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Per mode: total, ratio and saving vs plain Spark, first/repeat split, planning."""
    modes = result["modes"]
    plain = modes["spark"]["total_seconds"]
    oracle = oracle_seconds(result)
    summary: dict[str, Any] = {"plain_seconds": plain, "oracle_seconds": oracle, "modes": {}}
    keys = statement_keys(result)
    for mode, data in modes.items():
        total = data["total_seconds"]
        first, repeats = split_first_and_repeats(data["queries"], keys)
        row = {
            "total_seconds": round(total, 1),
            "speedup": round(plain / total, 3) if total else None,
            "time_saved": round(1 - total / plain, 4) if plain else None,
            "first_seconds": round(first, 1),
            "repeat_seconds": round(repeats, 1),
        }
        if mode != "spark":
            report = result.get("criss_reports", {}).get(mode, {})
            counters = report.get("counters", {})
            row["checksums_match"] = (
                result.get("comparisons", {}).get(mode, {}).get("checksums_match")
            )
            row["planning_ms"] = planning_ms(data["queries"])
            # untimed work after each action (writes from Spark's cache, statistics reads)
            row["background_seconds"] = data.get("background_seconds")
            row["bytes_written"] = counters.get("bytes_written")
            row["operators_reused"] = counters.get("operators_reused")
            row["partitions_recomputed"] = counters.get("partitions_recomputed")
            row["reuse_kinds"] = reuse_kinds(data["queries"], keys)
            # a stream without repeats leaves the oracle nothing to save: no share to report
            if oracle is not None and plain - oracle > 0.01 * plain:
                row["oracle_share"] = round((plain - total) / (plain - oracle), 3)
        summary["modes"][mode] = row
    if oracle is not None:
        summary["oracle_time_saved"] = round(1 - oracle / plain, 4)
    return summary


def replica_views(result: dict[str, Any], mode: str = "criss") -> list[tuple[str, dict[str, Any]]]:
    """``result`` as pairs of plain Spark and ``mode`` to summarize like a replay of two
    modes: with one application per mode, ``[("", result)]``; with replicas (``criss
    replay --replicas N``), the pair of each replica (``"1"``: ``spark`` and ``mode``,
    ``"2"``: ``spark#2`` and ``mode#2``, ...), then ``"mean"``: at every position the mean
    of the plain applications against the mean of ``mode``'s. Two applications running
    the same plans differ by several percent; the mean is what a difference smaller than
    that can be read from."""
    replicas = int(result.get("replicas") or 1)
    if replicas == 1:
        return [("", result)]
    modes = result["modes"]
    views = []
    for k in range(1, replicas + 1):
        suffix = "" if k == 1 else f"{REPLICA_MARK}{k}"
        views.append((str(k), _pair(result, modes["spark" + suffix], modes[mode + suffix], mode)))
    plain = _mean_mode([m for name, m in modes.items() if is_plain(name)])
    mine = _mean_mode([m for name, m in modes.items() if base_mode(name) == mode])
    views.append(("mean", _pair(result, plain, mine, mode)))
    return views


def _pair(
    result: dict[str, Any], plain: dict[str, Any], mine: dict[str, Any], mode: str
) -> dict[str, Any]:
    """``result`` with only ``plain`` as ``spark`` and ``mine`` as ``mode``."""
    view = {k: v for k, v in result.items() if k not in ("modes", "replicas")}
    view["modes"] = {"spark": plain, mode: mine}
    return view


def _mean_mode(replicas: list[dict[str, Any]]) -> dict[str, Any]:
    """One mode's record per position with the mean seconds of ``replicas`` (the other
    fields, Criss's counters among them, of the first)."""
    positions = zip(*(r["queries"] for r in replicas), strict=True)
    queries = [
        {**records[0], "seconds": statistics.fmean(q["seconds"] for q in records)}
        for records in positions
    ]
    return {
        **replicas[0],
        "total_seconds": sum(q["seconds"] for q in queries),
        "queries": queries,
        "background_seconds": statistics.fmean(r.get("background_seconds", 0.0) for r in replicas),
    }
