"""A home at a glance, as ``criss stats`` and the dashboard's overview show it: tiers
(used bytes, quota, bandwidth), entries and partitions, QTree size, reuse counters, and
time saved (from the logged decisions) against time spent storing and planning."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from criss.history import COUNTERS
from criss.inspect.benefits import bandwidths, codec_rate, media_bandwidths, quotas
from criss.inspect.entries import cells, stored_parts
from criss.inspect.home import open_home
from criss.inspect.queries import logged_queries
from criss.storage.catalog import EntryRecord

#: Tiers in display order, fastest first.
TIER_ORDER = ("memory", "alluxio", "disk")
TEXEC_SAVED_FORMULA = (
    "Σ over logged queries, Σ over operators they reused: Texec of the reused operator "
    "(as measured when it was cached) × reused partitions ÷ its partitions; "
    "the time to read the cached data is not subtracted"
)


def load_overview(
    home: str | Path, capacities: Mapping[str, int | None] | None = None
) -> dict[str, Any]:
    """Tiers (used bytes, capacity when known), entries, partitions, QTree and query-log sums."""
    with open_home(home) as h:
        meta = h.meta()
        entries = h.cache.entries()
        nodes = [n.stats for n in h.qtree.nodes()]
        edges = len(h.qtree.edges())
        queries = logged_queries(h.history)
        path = h.path
    used, counts, states = _stored(entries)
    texec = {n.fingerprint: n.texec for n in nodes if n.texec is not None}
    for entry in entries:
        texec.setdefault(entry.key, entry.texec)
    return {
        "home": str(Path(home).expanduser()),
        "generated": time.time(),
        "tiers": _tiers(used, counts, meta, path, capacities),
        "codec_rate": codec_rate(meta),
        "cached_bytes": sum(used.values()),
        "entries": len(entries),
        "partitions": sum(e.num_partitions for e in entries),
        "reusable_partitions": sum(v for k, v in states.items() if k != "missing"),
        "missing_partitions": states["missing"],
        "empty_partitions": states["empty"],
        "qtree": {
            "operators": len(nodes),
            "with_statistics": sum(n.texec is not None for n in nodes),
            "edges": edges,
            "start_time": meta.get("start_time"),
        },
        "queries": _query_summary(queries),
        "time": _time_summary(queries, texec),
    }


def _stored(entries: list[EntryRecord]) -> tuple[Counter, Counter, Counter]:
    """Bytes and reusable partitions per tier, and partition states, over all entries."""
    used: Counter = Counter()
    counts: Counter = Counter()
    states: Counter = Counter()
    for entry in entries:
        states.update(cells(entry))
        for part in stored_parts(entry):
            used[part.tier] += part.bytes
            counts[part.tier] += 1
    return used, counts, states


def _tiers(
    used: Counter,
    counts: Counter,
    meta: Mapping[str, Any],
    home: Path,
    given: Mapping[str, int | None] | None,
) -> list[dict[str, Any]]:
    """Memory and disk always, Alluxio when anything mentions it; fastest first."""
    limits = quotas(meta, given)
    rates = bandwidths(meta, home)
    media = media_bandwidths(meta, home)
    names = [t for t in TIER_ORDER if t in {"memory", "disk", *used, *rates, *limits}]
    return [
        {
            "name": name,
            "partitions": counts[name],
            "used_bytes": used[name],
            "capacity_bytes": limits.get(name),
            "used_fraction": used[name] / limits[name] if limits.get(name) else None,
            "bandwidth": rates.get(name),
            "medium_bandwidth": media.get(name),
        }
        for name in names
    ]


def _query_summary(queries: list[dict[str, Any]]) -> dict[str, Any]:
    sums: Counter = Counter()
    for query in queries:
        sums.update({k: v for k, v in query["counters"].items() if isinstance(v, (int, float))})
    hits, misses = sums["partitions_reused"], sums["partitions_recomputed"]
    return {
        "seen": len(queries),
        "fallbacks": sum(1 for q in queries if q["fallback"]),
        "first_at": min((q["at"] for q in queries), default=None),
        "last_at": max((q["at"] for q in queries), default=None),
        # per-query counters; "queries" and "fallbacks" are the log's own rows above
        "counters": {name: sums[name] for name in COUNTERS if name not in ("queries", "fallbacks")},
        "partition_hit_ratio": hits / (hits + misses) if hits + misses else None,
        "queries_with_reuse": sum(1 for q in queries if q["counters"].get("operators_reused")),
    }


def _texec_saved(queries: list[dict[str, Any]], texec_by_key: Mapping[str, float]) -> dict:
    saved, counted, unknown = 0.0, 0, 0
    for query in queries:
        for reuse in query["reused"]:
            texec = texec_by_key.get(reuse["key"])
            if texec is None:
                unknown += 1
                continue
            share = reuse["partitions"] / reuse["of"] if reuse["of"] else 1.0
            saved += texec * share
            counted += 1
    return {"seconds": saved, "reuses_counted": counted, "reuses_without_texec": unknown}


def _time_summary(queries: list[dict[str, Any]], texec: Mapping[str, float]) -> dict[str, Any]:
    saved = _texec_saved(queries, texec)
    storing = sum(q["materialize_seconds"] or 0.0 for q in queries)
    planning = sum(q["planning_seconds"] or 0.0 for q in queries)
    return {
        "texec_saved_seconds": saved["seconds"],
        "reuses_counted": saved["reuses_counted"],
        "reuses_without_texec": saved["reuses_without_texec"],
        "storing_seconds": storing,
        "planning_seconds": planning,
        "net_seconds": saved["seconds"] - storing - planning,
        "formula": TEXEC_SAVED_FORMULA,
    }
