"""Cached entries as ``criss ls`` and the dashboard's entry pages show them: a partition
strip, sizes, last use and benefit per entry, and one entry partition by partition."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from criss.errors import NotFoundError
from criss.inspect.benefits import bandwidths, entry_benefit, recency, start_time
from criss.inspect.home import open_home
from criss.inspect.queries import logged_queries
from criss.qtree.tree import NodeRecord
from criss.storage.catalog import EntryRecord, PartitionRecord

#: Operator fingerprints (cache entry keys) are lowercase hex.
HEX_KEY = re.compile(r"^[0-9a-f]{8,64}$")
#: One character per partition in text strips (as ``CrissSession.report()`` draws them).
STRIP_MARKS = {"memory": "M", "alluxio": "A", "disk": "D", "empty": "0", "missing": "."}
#: Colour state of an operator: where its cached result is, if anywhere.
STATES = {
    "memory": "cached in memory",
    "alluxio": "cached in Alluxio",
    "disk": "cached on disk",
    "mixed": "cached, split across tiers",
    "empty": "cached, empty result (no files)",
    "partial": "partly cached (some partitions missing)",
    "seen": "seen only (not cached)",
}


def cells(entry: EntryRecord) -> list[str]:
    """Per partition: the tier holding it, ``empty`` (no rows, no file) or ``missing``."""
    reusable = set(entry.bitmap)
    out = []
    for index in range(entry.num_partitions):
        part = entry.partitions.get(index)
        if index not in reusable or part is None:
            out.append("missing")
        else:
            out.append(part.tier or "empty")
    return out


def state(cells: list[str]) -> str:
    """The colour state (a key of :data:`STATES`) of an entry with these cells."""
    if not cells:
        return "empty"
    if "missing" in cells:
        return "seen" if set(cells) == {"missing"} else "partial"
    tiers = set(cells) - {"empty"}
    if not tiers:
        return "empty"
    return tiers.pop() if len(tiers) == 1 else "mixed"


def stored_parts(entry: EntryRecord) -> Iterator[PartitionRecord]:
    """The entry's reusable partitions that sit in a tier (empty ones hold no file)."""
    for index in entry.bitmap:
        part = entry.partitions.get(index)
        if part is not None and part.tier:
            yield part


def tier_bytes(entry: EntryRecord) -> Counter:
    """Bytes of the entry's reusable partitions per tier holding them."""
    out: Counter = Counter()
    for part in stored_parts(entry):
        out[part.tier] += part.bytes
    return out


def describe_entry(
    entry: EntryRecord,
    node: NodeRecord | None,
    start: float,
    bandwidths: Mapping[str, float],
) -> dict[str, Any]:
    """One entry as listed: cells and strip, sizes, ref/recency from its QTree node, benefit."""
    marks = cells(entry)
    held = tier_bytes(entry)
    parts = entry.partitions.values()
    ref = int(node.stats.ref) if node else 1
    last_use = recency(node, start)
    return {
        "key": entry.key,
        "op": entry.op,
        "label": (node.label if node else None) or entry.op,
        "state": state(marks),
        "num_partitions": entry.num_partitions,
        "reusable": sum(c != "missing" for c in marks),
        "missing": marks.count("missing"),
        "empty": marks.count("empty"),
        "cells": marks,
        "strip": "".join(STRIP_MARKS.get(c, "?") for c in marks),
        "bytes": sum(p.bytes or 0 for p in parts),
        "rows": sum(p.rows or 0 for p in parts),
        "tier_bytes": dict(held),
        "texec": entry.texec,
        "created": entry.created,
        "ref": ref,
        "last_access": node.stats.last_access if node else None,
        "recency": last_use,
        "benefit": entry_benefit(
            ref=ref,
            recency=last_use,
            texec=float(entry.texec or 0.0),
            tier_bytes=held,
            bandwidths=bandwidths,
            unstored_bytes=0 if "missing" not in marks else int(entry.total_bytes or 0),
        ),
    }


def load_entries(home: str | Path) -> list[dict[str, Any]]:
    """Every cached operator with its partition strip, sizes, last use and benefit (highest
    first)."""
    with open_home(home) as h:
        meta = h.meta()
        nodes = h.nodes()
        entries = h.cache.entries()
        rates = bandwidths(meta, h.path)
    start = start_time(meta)
    described = [describe_entry(e, nodes.get(e.key), start, rates) for e in entries]
    return sorted(described, key=lambda e: -e["benefit"])


def valid_key(key: str) -> str:
    """``key`` if it looks like an operator fingerprint, else NotFoundError."""
    if not isinstance(key, str) or not HEX_KEY.match(key):
        raise NotFoundError(f"{key!r} is not a cache entry key (entry keys are hex fingerprints)")
    return key


def load_entry(home: str | Path, key: str) -> dict[str, Any]:
    """One entry: its partitions one by one, schema, QTree neighbours, queries that used it."""
    valid_key(key)
    with open_home(home) as h:
        entry = h.cache.entry(key)
        if entry is None:
            raise NotFoundError(f"no cache entry {key} in {h.path}")
        meta = h.meta()
        nodes = h.nodes()
        parents, children = h.qtree.parents(key), h.qtree.children(key)
        queries = logged_queries(h.history)
        rates = bandwidths(meta, h.path)
    node = nodes.get(key)
    out = describe_entry(entry, node, start_time(meta), rates)
    out["partitions"] = _partitions(entry)
    out["schema"] = _schema_fields(entry.schema_json)
    out["node"] = node.to_json() if node else None
    out["parents"] = [_neighbour(fp, nodes) for fp in parents]
    out["children"] = [_neighbour(fp, nodes) for fp in children]
    out["queries"] = [
        {"id": q["id"], "at": q["at"], "action": action}
        for q in queries
        for action in (
            ["reused"] * any(r["key"] == key for r in q["reused"])
            + ["cached"] * (key in q["cached"])
        )
    ]
    return out


def _partitions(entry: EntryRecord) -> list[dict[str, Any]]:
    out = []
    for index, cell in enumerate(cells(entry)):
        part = entry.partitions.get(index)
        out.append(
            {
                "index": index,
                "state": cell,
                "bytes": part.bytes if part else None,
                "rows": part.rows if part else None,
                "file": (part.name if part else None) or None,
            }
        )
    return out


def _neighbour(fingerprint: str, nodes: Mapping[str, NodeRecord]) -> dict[str, Any]:
    node = nodes.get(fingerprint)
    return {
        "fingerprint": fingerprint,
        "op": node.stats.op if node else None,
        "label": node.label if node else None,
    }


def _schema_fields(schema_json: str | None) -> list[dict[str, Any]]:
    try:
        schema = json.loads(schema_json or "{}")
    except ValueError:
        return []
    return [
        {"name": f.get("name"), "type": json.dumps(f.get("type")).strip('"')}
        for f in schema.get("fields", [])
        if isinstance(f, dict)
    ]
