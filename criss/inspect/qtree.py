"""The QTree as the dashboard's QTree page shows it: every operator with its statistics,
benefit and cache state, and the edges between them, optionally narrowed by a search."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from criss.inspect.benefits import bandwidths, node_benefit, recency, start_time
from criss.inspect.entries import STATES, describe_entry
from criss.inspect.home import open_home
from criss.qtree.tree import NodeRecord
from criss.storage.catalog import EntryRecord


def load_qtree(home: str | Path, query: str | None = None) -> dict[str, Any]:
    """Every QTree operator with its statistics, benefit and cache state, and the edges.

    ``query`` keeps the operators whose fingerprint starts with it or whose operator name
    or label contains it (case-insensitive), with the edges between kept operators.
    """
    with open_home(home) as h:
        meta = h.meta()
        nodes = h.qtree.nodes()
        edges = h.qtree.edges()
        entries = {e.key: e for e in h.cache.entries()}
        rates = bandwidths(meta, h.path)
    start = start_time(meta)
    out = [_operator(n, entries.get(n.stats.fingerprint), start, rates) for n in nodes]
    if query:
        out = [n for n in out if _matches(n, query.strip().lower())]
        kept = {n["fingerprint"] for n in out}
        edges = [e for e in edges if e["parent"] in kept and e["child"] in kept]
    out.sort(key=lambda n: -(n["last_access"] or 0))
    return {
        "operators": len(out),
        "states": dict(Counter(n["state"] for n in out)),
        "state_labels": STATES,
        "query": query or "",
        "nodes": out,
        "edges": edges,
    }


def _operator(
    node: NodeRecord,
    entry: EntryRecord | None,
    start: float,
    bandwidths: Mapping[str, float],
) -> dict[str, Any]:
    """One operator: a cached one valued as its entry; else, with statistics, on disk (the
    worst case, as the engine decides what to cache); else no benefit."""
    stats = node.stats
    described = describe_entry(entry, node, start, bandwidths) if entry else None
    return {
        "fingerprint": stats.fingerprint,
        "op": stats.op,
        "label": node.label or stats.op,
        "ref": stats.ref,
        "first_seen": stats.first_seen,
        "last_access": stats.last_access,
        "recency": recency(node, start),
        "texec": stats.texec,
        "size_bytes": stats.size_bytes,
        "rows": stats.rows,
        "state": described["state"] if described else "seen",
        "strip": described["strip"] if described else None,
        "benefit": (described["benefit"] if described else node_benefit(node, start, bandwidths)),
    }


def _matches(operator: Mapping[str, Any], needle: str) -> bool:
    return (
        operator["fingerprint"].startswith(needle)
        or needle in operator["op"].lower()
        or needle in operator["label"].lower()
    )
