"""Read a Criss home without a SparkSession: what the ``criss`` CLI and the dashboard show.

Every ``load_*`` function opens the home's SQLite catalogs read-only
(``file:...?mode=ro``), which is safe while applications write them (WAL), and returns
plain JSON-ready data. Nothing is written under ``home`` except by :func:`clear_home`.

>>> from criss.inspect import load_overview, load_entries   # doctest: +SKIP
>>> load_overview("/data/criss")["entries"]                  # doctest: +SKIP
12
>>> [e["strip"] for e in load_entries("/data/criss")][:2]     # doctest: +SKIP
['MMDD', 'D.']
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from criss.errors import CatalogError, NotFoundError, StorageError
from criss.history import COUNTERS

#: Operator fingerprints (cache entry keys) are lowercase hex.
HEX_KEY = re.compile(r"^[0-9a-f]{8,64}$")
#: Tiers in display order, fastest first.
TIER_ORDER = ("memory", "alluxio", "disk")
#: Bytes/s assumed for a tier whose bandwidth was never measured in this home.
FALLBACK_BANDWIDTH = 1e9
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
TEXEC_SAVED_FORMULA = (
    "Σ over logged queries, Σ over operators they reused: Texec of the reused operator "
    "(as measured when it was cached) × reused partitions ÷ its partitions; "
    "the time to read the cached data is not subtracted"
)
BENEFIT_FORMULA = (
    "Σ over tiers holding the entry: recency × (ref × (Texec·share − bytes/bw) − bytes/bw), "
    "share = the tier's bytes ÷ the entry's bytes, bw = the tier's measured bandwidth"
)

_REUSED = re.compile(
    r"REUSED entry ([0-9a-f]+)(?: via [\w-]+)?(?:; (\d+)/(\d+) partitions reused)?"
)
_CACHED = re.compile(r"CACHED as ([0-9a-f]+)")


# --- opening a home read-only ------------------------------------------------------------------


def _connect(path: Path) -> sqlite3.Connection | None:
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise CatalogError(f"cannot open {path} read-only: {exc}") from exc
    conn.row_factory = sqlite3.Row
    return conn


class _Home:
    """Read-only connections to one home's ``catalog.db`` (QTree, log) and ``cache.db``."""

    def __init__(self, home: str | Path) -> None:
        self.path = Path(home).expanduser()
        if not self.path.is_dir():
            raise NotFoundError(
                f"no Criss home at {self.path}: the directory does not exist. Pass the home "
                "your sessions use (criss.session(spark, home=...) or spark.criss.home)."
            )
        self.catalog = _connect(self.path / "catalog.db")
        self.cache = _connect(self.path / "cache.db")

    def rows(self, which: str, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
        """Rows of ``sql`` on ``catalog`` or ``cache``; a catalog or table not there yet: []."""
        conn = self.catalog if which == "catalog" else self.cache
        if conn is None:
            return []
        try:
            return [dict(r) for r in conn.execute(sql, params)]
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise CatalogError(f"cannot read the {which} of {self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise CatalogError(f"cannot read the {which} of {self.path}: {exc}") from exc

    def close(self) -> None:
        for conn in (self.catalog, self.cache):
            if conn is not None:
                conn.close()


@contextmanager
def _open(home: str | Path) -> Iterator[_Home]:
    opened = _Home(home)
    try:
        yield opened
    finally:
        opened.close()


# --- shared pieces -------------------------------------------------------------------------------


def _meta(h: _Home) -> dict[str, Any]:
    out = {}
    for row in h.rows("catalog", "select key, value from meta"):
        try:
            out[row["key"]] = json.loads(row["value"])
        except (TypeError, ValueError):
            out[row["key"]] = row["value"]
    return out


def _media_bandwidths(meta: Mapping[str, Any], home: Path) -> dict[str, float]:
    """Measured bytes/s of each tier's medium (``bandwidth:<tier>:<root>`` keys), this
    home's own root first."""
    found: dict[str, float] = {}
    preferred = {"disk": str(home / "disk")}
    for key, value in meta.items():
        parts = str(key).split(":", 2)
        if parts[0] != "bandwidth" or len(parts) < 3:
            continue
        tier, root = parts[1], parts[2]
        try:
            bandwidth = float(value)
        except (TypeError, ValueError):
            continue
        if bandwidth > 0 and (tier not in found or root == preferred.get(tier)):
            found[tier] = bandwidth
    return found


def _codec_rate(meta: Mapping[str, Any]) -> float | None:
    try:
        rate = float(meta.get("codec_rate") or 0)
    except (TypeError, ValueError):
        return None
    return rate if rate > 0 else None


def _bandwidths(meta: Mapping[str, Any], home: Path) -> dict[str, float]:
    """Bytes/s the benefit model uses per tier: the medium's, combined with Spark's Parquet
    codec rate when the session measured one (1 / (1/medium + 1/codec))."""
    codec = _codec_rate(meta)
    media = _media_bandwidths(meta, home)
    if codec is None:
        return media
    return {tier: 1 / (1 / bw + 1 / codec) for tier, bw in media.items()}


def _capacities(meta: Mapping[str, Any], given: Mapping[str, int | None] | None) -> dict:
    """Quotas given by the caller, else ``capacity:<tier>`` keys a session may have recorded."""
    out: dict[str, int] = {}
    for key, value in meta.items():
        parts = str(key).split(":")
        if parts[0] == "capacity" and len(parts) >= 2 and isinstance(value, (int, float)):
            out[parts[1]] = int(value)
    out.update({k: int(v) for k, v in (given or {}).items() if v})
    return out


def _decode_bitmap(blob: bytes | None) -> list[int]:
    from pyroaring import BitMap

    return list(BitMap.deserialize(blob)) if blob else []


def _entries(h: _Home) -> list[dict[str, Any]]:
    """Raw cache entries with their partitions (no statistics yet)."""
    parts: dict[str, dict[int, dict[str, Any]]] = {}
    for row in h.rows("cache", "select key, idx, tier, name, bytes, rows from partitions"):
        parts.setdefault(row["key"], {})[row["idx"]] = row
    out = []
    for row in h.rows(
        "cache",
        "select key, op, schema_json, num_partitions, layout, texec, total_bytes, created, bitmap "
        "from entries order by created",
    ):
        row["partitions"] = parts.get(row["key"], {})
        row["bitmap"] = _decode_bitmap(row["bitmap"])
        out.append(row)
    return out


def _cells(entry: Mapping[str, Any]) -> list[str]:
    """Per partition: the tier holding it, ``empty`` (no rows, no file) or ``missing``."""
    reusable = set(entry["bitmap"])
    cells = []
    for index in range(entry["num_partitions"]):
        part = entry["partitions"].get(index)
        if index not in reusable or part is None:
            cells.append("missing")
        else:
            cells.append(part["tier"] or "empty")
    return cells


def _state(cells: list[str]) -> str:
    if not cells:
        return "empty"
    if "missing" in cells:
        return "seen" if set(cells) == {"missing"} else "partial"
    tiers = set(cells) - {"empty"}
    if not tiers:
        return "empty"
    return tiers.pop() if len(tiers) == 1 else "mixed"


def _nodes(h: _Home) -> dict[str, dict[str, Any]]:
    return {
        r["fingerprint"]: r
        for r in h.rows(
            "catalog",
            "select fingerprint, op, label, ref, first_seen, last_access, texec, size_bytes, "
            "rows, stats_source from nodes",
        )
    }


def _recency(node: Mapping[str, Any] | None, start_time: float) -> float:
    if node is None or node.get("last_access") is None:
        return 1.0  # what the cache assumes for an operator the QTree does not know
    return max(float(node["last_access"]) - start_time, 1e-3)


def _policy():
    from criss.policies import get_policy

    return get_policy("criss")


def entry_benefit(
    *,
    ref: int,
    recency: float,
    texec: float,
    tier_bytes: Mapping[str, int],
    bandwidths: Mapping[str, float],
    unstored_bytes: int = 0,
) -> float:
    """The Criss benefit of an entry as its tiers hold it (see :data:`BENEFIT_FORMULA`).

    An entry holding no file is valued with ``unstored_bytes`` on disk, the worst case the
    engine assumes when it decides what to cache (0 bytes for an empty result).
    """
    policy = _policy()
    total = sum(tier_bytes.values())
    if total <= 0:
        return policy.benefit(
            ref=ref,
            texec=texec,
            size_bytes=float(unstored_bytes),
            bandwidth=bandwidths.get("disk") or FALLBACK_BANDWIDTH,
            recency=recency,
        )
    return sum(
        policy.benefit(
            ref=ref,
            texec=texec * size / total,
            size_bytes=float(size),
            bandwidth=bandwidths.get(tier) or FALLBACK_BANDWIDTH,
            recency=recency,
        )
        for tier, size in tier_bytes.items()
    )


def _describe_entry(
    entry: Mapping[str, Any],
    node: Mapping[str, Any] | None,
    start_time: float,
    bandwidths: Mapping[str, float],
) -> dict[str, Any]:
    cells = _cells(entry)
    tier_bytes: Counter = Counter()
    for index in entry["bitmap"]:
        part = entry["partitions"].get(index)
        if part is not None and part["tier"]:
            tier_bytes[part["tier"]] += part["bytes"]
    parts = entry["partitions"].values()
    ref = int(node["ref"]) if node else 1
    recency = _recency(node, start_time)
    return {
        "key": entry["key"],
        "op": entry["op"],
        "label": (node or {}).get("label") or entry["op"],
        "state": _state(cells),
        "num_partitions": entry["num_partitions"],
        "reusable": sum(c != "missing" for c in cells),
        "missing": cells.count("missing"),
        "empty": cells.count("empty"),
        "cells": cells,
        "strip": "".join(STRIP_MARKS.get(c, "?") for c in cells),
        "bytes": sum(p["bytes"] or 0 for p in parts),
        "rows": sum(p["rows"] or 0 for p in parts),
        "tier_bytes": dict(tier_bytes),
        "texec": entry["texec"],
        "created": entry["created"],
        "ref": ref,
        "last_access": (node or {}).get("last_access"),
        "recency": recency,
        "benefit": entry_benefit(
            ref=ref,
            recency=recency,
            texec=float(entry["texec"] or 0.0),
            tier_bytes=tier_bytes,
            bandwidths=bandwidths,
            unstored_bytes=0 if "missing" not in cells else int(entry["total_bytes"] or 0),
        ),
    }


def _queries(h: _Home, limit: int | None = None) -> list[dict[str, Any]]:
    sql = (
        "select id, at, pid, sql, planning_seconds, materialize_seconds, counters, fallback, "
        "explain from queries order by id desc"
    )
    rows = h.rows("catalog", sql + (" limit ?" if limit else ""), (limit,) if limit else ())
    for row in rows:
        try:
            row["counters"] = json.loads(row["counters"] or "{}")
        except ValueError:
            row["counters"] = {}
        explain = row["explain"] or ""
        row["reused"] = [
            {
                "key": m.group(1),
                "partitions": int(m.group(2)) if m.group(2) else None,
                "of": int(m.group(3)) if m.group(3) else None,
            }
            for m in _REUSED.finditer(explain)
        ]
        row["cached"] = sorted(set(_CACHED.findall(explain)))
    return rows


def _texec_saved(queries: list[dict[str, Any]], texec_by_prefix: Mapping[str, float]) -> dict:
    saved, counted, unknown = 0.0, 0, 0
    for query in queries:
        for reuse in query["reused"]:
            texec = texec_by_prefix.get(reuse["key"][:12])
            if texec is None:
                unknown += 1
                continue
            share = reuse["partitions"] / reuse["of"] if reuse["of"] else 1.0
            saved += texec * share
            counted += 1
    return {"seconds": saved, "reuses_counted": counted, "reuses_without_texec": unknown}


# --- what the CLI and the dashboard show ----------------------------------------------------------


def load_overview(
    home: str | Path, capacities: Mapping[str, int | None] | None = None
) -> dict[str, Any]:
    """Tiers (used bytes, capacity when known), entries, partitions, QTree and query-log sums."""
    with _open(home) as h:
        meta = _meta(h)
        bandwidths = _bandwidths(meta, h.path)
        media = _media_bandwidths(meta, h.path)
        quotas = _capacities(meta, capacities)
        entries = _entries(h)
        nodes = _nodes(h)
        queries = _queries(h)
        edges = h.rows("catalog", "select count(*) as n from edges")
    used, counts, cells = _stored(entries)
    tiers = _tiers(used, counts, quotas, bandwidths)
    for tier in tiers:
        tier["medium_bandwidth"] = media.get(tier["name"])
    texec = {fp[:12]: n["texec"] for fp, n in nodes.items() if n["texec"] is not None}
    for entry in entries:
        texec.setdefault(entry["key"][:12], entry["texec"])
    return {
        "home": str(Path(home).expanduser()),
        "generated": time.time(),
        "tiers": tiers,
        "codec_rate": _codec_rate(meta),
        "cached_bytes": sum(used.values()),
        "entries": len(entries),
        "partitions": sum(e["num_partitions"] for e in entries),
        "reusable_partitions": sum(v for k, v in cells.items() if k != "missing"),
        "missing_partitions": cells["missing"],
        "empty_partitions": cells["empty"],
        "qtree": {
            "operators": len(nodes),
            "with_statistics": sum(n["texec"] is not None for n in nodes.values()),
            "edges": edges[0]["n"] if edges else 0,
            "start_time": meta.get("start_time"),
        },
        "queries": _query_summary(queries),
        "time": _time_summary(queries, texec),
    }


def _stored(entries: list[dict[str, Any]]) -> tuple[Counter, Counter, Counter]:
    """Bytes and reusable partitions per tier, and partition states, over all entries."""
    used: Counter = Counter()
    counts: Counter = Counter()
    cells: Counter = Counter()
    for entry in entries:
        cells.update(_cells(entry))
        for index in entry["bitmap"]:
            part = entry["partitions"].get(index)
            if part is not None and part["tier"]:
                used[part["tier"]] += part["bytes"]
                counts[part["tier"]] += 1
    return used, counts, cells


def _tiers(
    used: Counter, counts: Counter, quotas: Mapping[str, int], bandwidths: Mapping[str, float]
) -> list[dict[str, Any]]:
    """Memory and disk always, Alluxio when anything mentions it; fastest first."""
    names = [t for t in TIER_ORDER if t in {"memory", "disk", *used, *bandwidths, *quotas}]
    return [
        {
            "name": name,
            "partitions": counts[name],
            "used_bytes": used[name],
            "capacity_bytes": quotas.get(name),
            "used_fraction": used[name] / quotas[name] if quotas.get(name) else None,
            "bandwidth": bandwidths.get(name),
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


def load_entries(home: str | Path) -> list[dict[str, Any]]:
    """Every cached operator with its partition strip, sizes, last use and benefit (highest
    first)."""
    with _open(home) as h:
        meta = _meta(h)
        bandwidths = _bandwidths(meta, h.path)
        nodes = _nodes(h)
        entries = _entries(h)
    start = float(meta.get("start_time") or 0.0)
    described = [_describe_entry(e, nodes.get(e["key"]), start, bandwidths) for e in entries]
    return sorted(described, key=lambda e: -e["benefit"])


def valid_key(key: str) -> str:
    """``key`` if it looks like an operator fingerprint, else NotFoundError."""
    if not isinstance(key, str) or not HEX_KEY.match(key):
        raise NotFoundError(f"{key!r} is not a cache entry key (entry keys are hex fingerprints)")
    return key


def load_entry(home: str | Path, key: str) -> dict[str, Any]:
    """One entry: its partitions one by one, schema, QTree neighbours, queries that used it."""
    valid_key(key)
    with _open(home) as h:
        meta = _meta(h)
        rows = [e for e in _entries(h) if e["key"] == key]
        if not rows:
            raise NotFoundError(f"no cache entry {key} in {h.path}")
        nodes = _nodes(h)
        parents = h.rows("catalog", "select parent from edges where child = ?", (key,))
        children = h.rows(
            "catalog", "select child from edges where parent = ? order by position", (key,)
        )
        queries = _queries(h)
        bandwidths = _bandwidths(meta, h.path)
    entry = rows[0]
    start = float(meta.get("start_time") or 0.0)
    out = _describe_entry(entry, nodes.get(key), start, bandwidths)
    out["partitions"] = [
        {
            "index": i,
            "state": cell,
            "bytes": entry["partitions"].get(i, {}).get("bytes"),
            "rows": entry["partitions"].get(i, {}).get("rows"),
            "file": entry["partitions"].get(i, {}).get("name") or None,
        }
        for i, cell in enumerate(_cells(entry))
    ]
    out["schema"] = _schema_fields(entry["schema_json"])
    out["node"] = nodes.get(key)
    out["parents"] = [_neighbour(r["parent"], nodes) for r in parents]
    out["children"] = [_neighbour(r["child"], nodes) for r in children]
    prefix = key[:12]
    out["queries"] = [
        {"id": q["id"], "at": q["at"], "action": action}
        for q in queries
        for action in (
            ["reused"] * any(r["key"] == prefix for r in q["reused"])
            + ["cached"] * (prefix in q["cached"])
        )
    ]
    return out


def _neighbour(fingerprint: str, nodes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    node = nodes.get(fingerprint) or {}
    return {"fingerprint": fingerprint, "op": node.get("op"), "label": node.get("label")}


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


def load_qtree(home: str | Path, query: str | None = None) -> dict[str, Any]:
    """Every QTree operator with its statistics, benefit and cache state, and the edges.

    ``query`` keeps the operators whose fingerprint starts with it or whose operator name
    or label contains it (case-insensitive), with the edges between kept operators.
    """
    with _open(home) as h:
        meta = _meta(h)
        nodes = _nodes(h)
        edges = h.rows("catalog", "select parent, position, child from edges")
        entries = {e["key"]: e for e in _entries(h)}
        bandwidths = _bandwidths(meta, h.path)
    start = float(meta.get("start_time") or 0.0)
    out = []
    for fp, node in nodes.items():
        entry = entries.get(fp)
        described = _describe_entry(entry, node, start, bandwidths) if entry else None
        out.append(
            {
                "fingerprint": fp,
                "op": node["op"],
                "label": node["label"] or node["op"],
                "ref": node["ref"],
                "first_seen": node["first_seen"],
                "last_access": node["last_access"],
                "recency": _recency(node, start),
                "texec": node["texec"],
                "size_bytes": node["size_bytes"],
                "rows": node["rows"],
                "state": described["state"] if described else "seen",
                "strip": described["strip"] if described else None,
                "benefit": _node_benefit(node, described, start, bandwidths),
            }
        )
    if query:
        needle = query.strip().lower()
        out = [
            n
            for n in out
            if n["fingerprint"].startswith(needle)
            or needle in n["op"].lower()
            or needle in n["label"].lower()
        ]
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


def _node_benefit(
    node: Mapping[str, Any],
    entry: Mapping[str, Any] | None,
    start: float,
    bandwidths: Mapping[str, float],
) -> float | None:
    """A cached operator's entry benefit; else, with statistics, its benefit on disk (the
    worst case, as the engine decides what to cache); else None."""
    if entry is not None:
        return entry["benefit"]
    if node["texec"] is None or node["size_bytes"] is None:
        return None
    return _policy().benefit(
        ref=int(node["ref"]),
        texec=float(node["texec"]),
        size_bytes=float(node["size_bytes"]),
        bandwidth=bandwidths.get("disk") or FALLBACK_BANDWIDTH,
        recency=_recency(node, start),
    )


def load_queries(home: str | Path, limit: int = 50) -> list[dict[str, Any]]:
    """The most recent queries of the log: times, counters, reused and cached entries, explain."""
    with _open(home) as h:
        return _queries(h, limit)


def load_replays(results_dir: str | Path | None) -> dict[str, Any]:
    """Replay results JSON files (``criss replay --out``) found under ``results_dir``."""
    if results_dir is None:
        return {"dir": None, "replays": [], "skipped": []}
    root = Path(results_dir).expanduser()
    replays, skipped = [], []
    for path in sorted(root.rglob("*.json")) if root.is_dir() else []:
        name = path.relative_to(root).as_posix()
        try:
            replays.append(_replay(name, json.loads(path.read_text())))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            skipped.append({"name": name, "reason": f"not a replay result: {exc}"})
    return {"dir": str(root), "replays": replays, "skipped": skipped}


def _replay(name: str, data: dict[str, Any]) -> dict[str, Any]:
    modes = data["modes"]
    first = next(iter(modes.values()))["queries"]
    series = {}
    for mode, result in modes.items():
        seconds = [float(q["seconds"]) for q in result["queries"]]
        running, cumulative = 0.0, []
        for s in seconds:
            running += s
            cumulative.append(running)
        series[mode] = {
            "total_seconds": float(result.get("total_seconds", running)),
            "seconds": seconds,
            "cumulative": cumulative,
        }
    return {
        "name": name,
        "stream": data.get("stream"),
        "seed": data.get("seed"),
        "sf": data.get("sf"),
        "queries": data.get("queries", len(first)),
        "created": data.get("created"),
        "labels": [
            q["query"] + ("" if q.get("variant", "orig") == "orig" else f"-{q['variant']}")
            for q in first
        ],
        "modes": series,
        "comparison": data.get("comparison"),
    }


# --- the one command here that writes ------------------------------------------------------------


def clear_home(home: str | Path, tier: str | None = None, **options: Any) -> dict[str, Any]:
    """Drop every cached result and the QTree of ``home``, or only what ``tier`` holds.

    Needs no SparkSession. Entries a live DataFrame of a running application reads are
    kept (``kept_pinned``). ``options`` are session options locating the tiers
    (``memory_dir``, ``alluxio_url``, ...). Returns the overview numbers before and after.
    """
    from criss.config import CrissOptions
    from criss.qtree import QTree
    from criss.space import build_tiers
    from criss.storage.cache import PartitionCache

    path = Path(home).expanduser()
    before = load_overview(path)  # raises NotFoundError for a home that is not there
    opts = CrissOptions.resolve(None, home=str(path), **options)
    writable, everything = build_tiers(opts, opts.home)
    names = [t.name for t in everything]
    if tier is not None and tier not in names:
        raise StorageError(
            f"no tier {tier!r} in this home's configuration; tiers: {', '.join(names)}"
            + (" (the alluxio tier needs --alluxio-url)" if tier == "alluxio" else "")
        )
    cache = PartitionCache(
        opts.home / "cache.db",
        writable,
        readable=[t for t in everything if t not in writable],
        policy=_policy(),
        usage=lambda keys: {},
        timeout=opts.catalog_timeout,
    )
    try:
        pinned = cache.pinned()
        cache.clear(tier)
        cache.catalog.forget_owner(cache.owner)
    finally:
        cache.close()
    if tier is None:
        with closing(QTree(opts.home / "catalog.db", timeout=opts.catalog_timeout)) as qtree:
            qtree.clear()
    after = load_overview(path)
    return {
        "home": str(path),
        "tier": tier,
        "kept_pinned": sorted(pinned),
        "before": _counts(before),
        "after": _counts(after),
    }


def _counts(overview: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "entries": overview["entries"],
        "reusable_partitions": overview["reusable_partitions"],
        "qtree_operators": overview["qtree"]["operators"],
        "used_bytes": {t["name"]: t["used_bytes"] for t in overview["tiers"]},
    }
