"""The QTree: every operator Criss has seen, with its statistics, persisted in SQLite.

Matching is bottom-up (paper §1.1, Fig. 2): because fingerprints are Merkle hashes, an
operator matches only if all its children matched. Matched operators update their
statistics; unmatched ones are inserted.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import sqlite_utils

from criss.errors import CatalogError
from criss.qtree.fingerprint import TEMPLATE
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import Relative, relaxed_columns, relaxed_key, storable
from criss.qtree.subsume import Shape, subsumption_key
from criss.qtree.templates import TemplateRecurrence, TemplateStats, template_statistics
from criss.sqlite import open_catalog, open_read_only, read_rows, refuse_if_read_only

SCHEMA_VERSION = "1"
#: ``stats_source`` of statistics read off an executed plan rather than a written result.
EXECUTED_PLAN = "executed plan"
#: ``stats_source`` of statistics measured by writing the result (its size is exact).
MEASURED = "measured"
#: What ``QTree.observe`` writes for an operator seen before, one never seen, and its edges.
_UPDATE_SEEN = (
    "update nodes set ref = ref + 1, last_access = ?, relaxed_key = ?, columns = ?, "
    "subsume_key = ?, shape = ?, template_key = ? where fingerprint = ?"
)
_INSERT_NEW = (
    "insert or ignore into nodes (fingerprint, op, label, ref, first_seen, last_access, rel_key, "
    "rel_version, relaxed_key, columns, subsume_key, shape, template_key) "
    "values (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_EDGE = "insert or replace into edges (parent, position, child) values (?, ?, ?)"


@dataclass(frozen=True)
class NodeStats:
    """What the benefit model needs to know about one operator."""

    fingerprint: str
    op: str
    ref: int
    first_seen: float
    last_access: float
    texec: float | None = None
    size_bytes: int | None = None
    rows: int | None = None
    stats_source: str | None = None

    @property
    def has_stats(self) -> bool:
        return self.texec is not None and self.size_bytes is not None


@dataclass(frozen=True)
class NodeRecord:
    """One stored operator as the CLI and the dashboard show it: statistics and label."""

    stats: NodeStats
    label: str | None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self.stats), "label": self.label}


@dataclass(frozen=True)
class Observation:
    """The outcome of matching one operator of a query against the QTree."""

    stats: NodeStats
    matched: bool


class QTree:
    """Operator tree of the workload history, stored in ``catalog.db`` under a Criss home.

    ``read_only=True`` (or :meth:`read_only`) opens it for reading only, as the ``criss``
    CLI and the dashboard do: every method that would change it raises CatalogError.
    """

    def __init__(
        self, db_path: str | Path, *, timeout: float = 10.0, read_only: bool = False
    ) -> None:
        self.db_path = Path(db_path)
        self.writable = not read_only
        if read_only:
            self.db = open_read_only(self.db_path, what="QTree catalog", timeout=timeout)
        else:
            self.db = open_catalog(
                self.db_path, timeout=timeout, setup=_ensure_schema, what="QTree catalog"
            )
        self._graph: nx.DiGraph | None = None
        self._start_time: float | None = None

    @classmethod
    def read_only(cls, db_path: str | Path, *, timeout: float = 5.0) -> QTree:
        """The QTree of ``db_path`` for reading only (``mode=ro``, nothing created): a file
        not there yet reads as an empty QTree.

        >>> len(QTree.read_only("/nowhere/catalog.db"))
        0
        """
        return cls(db_path, timeout=timeout, read_only=True)

    def _rows_in(self, sql: str, values: Iterable[str]) -> Iterator[dict[str, Any]]:
        """The rows of ``sql`` for the distinct ``values``, its ``{marks}`` their
        placeholders, queried 500 values at a time (SQLite bounds a statement's)."""
        ordered = sorted(set(values))
        for start in range(0, len(ordered), 500):
            chunk = ordered[start : start + 500]
            yield from self._rows(sql.format(marks=",".join("?" * len(chunk))), chunk)

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return read_rows(self.db, sql, list(params), what="QTree catalog", path=self.db_path)

    def _refuse_if_read_only(self, action: str) -> None:
        refuse_if_read_only(self.writable, what="QTree catalog", path=self.db_path, action=action)

    @property
    def start_time(self) -> float:
        if self._start_time is None:
            self._start_time = float(self.meta("start_time") or 0.0)
        return self._start_time

    def meta(self, key: str, default: Any = None) -> Any:
        rows = self._rows("select value from meta where key = ?", [key])
        return json.loads(rows[0]["value"]) if rows else default

    def meta_keys(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` that have a value, in one lookup."""
        rows = self._rows_in("select key from meta where key in ({marks})", keys)
        return {row["key"] for row in rows}

    def meta_items(self) -> dict[str, Any]:
        """Every ``meta`` key with its value (JSON-decoded; a value that is not JSON as is)."""
        out: dict[str, Any] = {}
        for row in self._rows("select key, value from meta"):
            try:
                out[row["key"]] = json.loads(row["value"])
            except (TypeError, ValueError):
                out[row["key"]] = row["value"]
        return out

    def set_meta(self, key: str, value: Any) -> None:
        self._refuse_if_read_only(f"set {key!r}")
        self.db["meta"].upsert({"key": key, "value": json.dumps(value)}, pk="key")

    # --- matching ----------------------------------------------------------------------------

    def observe(self, root: PlanNode, now: float | None = None) -> dict[str, Observation]:
        """Match ``root`` bottom-up; update statistics of matches and insert the rest.

        Operators that may never be matched (``uncacheable``) are neither looked up nor stored.
        """
        self._refuse_if_read_only("record a query's operators")
        now = time.time() if now is None else now
        nodes = [n for n in root.walk_bottom_up() if n.uncacheable is None]
        known = self._load(n.fingerprint for n in nodes)
        result: dict[str, Observation] = {}
        writes: dict[str, list[tuple]] = {_UPDATE_SEEN: [], _INSERT_NEW: [], _INSERT_EDGE: []}
        for node in nodes:
            if node.fingerprint in result:  # the same subtree twice in one query
                continue
            old = known.get(node.fingerprint)
            stats = self._touch(node, old, now, writes)
            result[node.fingerprint] = Observation(stats, matched=old is not None)
        try:
            with self.db.conn as conn:
                # one statement per kind of write, not one per operator: a TPC-DS query has
                # ~70 operators, and each execute is a round of sqlite-utils and SQLite
                for sql, rows in writes.items():
                    conn.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise CatalogError(f"cannot update the QTree catalog {self.db_path}: {exc}") from exc
        return result

    def peek(self, root: PlanNode, now: float | None = None) -> dict[str, Observation]:
        """What :meth:`observe` would report for ``root``, without changing the QTree."""
        now = time.time() if now is None else now
        nodes = [n for n in root.walk_bottom_up() if n.uncacheable is None]
        known = self._load(n.fingerprint for n in nodes)
        result: dict[str, Observation] = {}
        for node in nodes:
            old = known.get(node.fingerprint)
            stats = (
                NodeStats(**{**old.__dict__, "ref": old.ref + 1, "last_access": now})
                if old is not None
                else NodeStats(node.fingerprint, node.op, 1, now, now)
            )
            result.setdefault(node.fingerprint, Observation(stats, matched=old is not None))
        return result

    def _touch(
        self, node: PlanNode, old: NodeStats | None, now: float, writes: dict[str, list[tuple]]
    ) -> NodeStats:
        if old is not None:
            # the rewrite keys are refreshed too: a home written by an older Criss keyed
            # its operators differently, and would otherwise never serve them as relatives
            writes[_UPDATE_SEEN].append(
                (
                    now,
                    relaxed_key(node),
                    json.dumps(relaxed_columns(node)),
                    *_subsumption(node),
                    node.extra.get(TEMPLATE),
                    node.fingerprint,
                )
            )
            return NodeStats(**{**old.__dict__, "ref": old.ref + 1, "last_access": now})
        rel = node.relation or {}
        writes[_INSERT_NEW].append(
            (
                node.fingerprint,
                node.op,
                node.extra.get("label", node.op),
                now,
                now,
                rel.get("key"),
                rel.get("version"),
                relaxed_key(node),
                json.dumps(relaxed_columns(node)),
                *_subsumption(node),
                node.extra.get(TEMPLATE),
            )
        )
        for position, child in enumerate(node.children):
            held = _held(child)
            if held is not None:
                writes[_INSERT_EDGE].append((node.fingerprint, position, held.fingerprint))
                if self._graph is not None:
                    self._graph.add_edge(node.fingerprint, held.fingerprint)
        if self._graph is not None:
            self._graph.add_node(node.fingerprint, op=node.op)
        return NodeStats(node.fingerprint, node.op, 1, now, now)

    def _load(self, fingerprints: Iterable[str]) -> dict[str, NodeStats]:
        rows = self._rows_in("select * from nodes where fingerprint in ({marks})", fingerprints)
        return {row["fingerprint"]: _stats_from_row(row) for row in rows}

    def relatives(self, key: str) -> list[Relative]:
        """Operators sharing ``key`` (see :func:`qtree.rewrite.relaxed_key`)."""
        rows = self._rows(
            "select fingerprint, columns from nodes where relaxed_key = ? "
            "order by last_access desc",
            [key],
        )
        return [Relative(r["fingerprint"], tuple(json.loads(r["columns"] or "[]"))) for r in rows]

    def rewrite_keys(self, fingerprints: Iterable[str]) -> tuple[set[str], set[str]]:
        """The relaxed keys and subsumption keys of ``fingerprints`` (those known): a key
        outside them has no relative or subsumer among these operators."""
        relaxed: set[str] = set()
        subsume: set[str] = set()
        for row in self._rows_in(
            "select relaxed_key, subsume_key from nodes where fingerprint in ({marks})",
            fingerprints,
        ):
            relaxed.add(row["relaxed_key"])
            subsume.add(row["subsume_key"])
        return relaxed - {None}, subsume - {None}

    def subsumers(self, key: str, among: Collection[str] | None = None) -> list[tuple[str, Shape]]:
        """Operators sharing subsumption ``key`` (see :func:`qtree.subsume.subsumption_key`),
        with their shapes, most recently used first; only those in ``among`` if given (the
        others' shapes are not decoded)."""
        rows = self._rows(
            "select fingerprint, shape from nodes where subsume_key = ? order by last_access desc",
            [key],
        )
        return [
            (r["fingerprint"], Shape.loads(r["shape"]))
            for r in rows
            if r["shape"] and (among is None or r["fingerprint"] in among)
        ]

    def template_statistics(self, keys: Collection[str]) -> dict[str, TemplateStats]:
        """What the measured operators sharing each template key (see
        :mod:`criss.qtree.fingerprint`) took (:func:`criss.qtree.templates.template_statistics`)."""
        return template_statistics(
            self._rows_in(
                "select template_key, texec, size_bytes from nodes where template_key in "
                "({marks}) and texec is not null and size_bytes is not null",
                keys,
            )
        )

    def template_recurrence(self, fingerprint: str, key: str) -> TemplateRecurrence | None:
        """How the other operators of ``fingerprint``'s template ``key`` recurred: the
        queries that referenced one, and how many of those had seen it before (its own
        references are this query's, not its template's past); None when it has none."""
        (row,) = self._rows(
            "select sum(ref) as queries, sum(ref - 1) as repeats from nodes "
            "where template_key = ? and fingerprint != ?",
            [key, fingerprint],
        )
        if not row["queries"]:
            return None
        return TemplateRecurrence(row["queries"], row["repeats"])

    def parameter_recurrence(
        self, excluded: Collection[str] = (), level: int = 2, besides: str | None = None
    ) -> tuple[int, int]:
        """How aggregates recur under new parameter values: (times one already seen under
        k >= ``level`` values was seen under a (k+1)th, times one reached k >= ``level``),
        summed over subsumption keys at the second (TPC-H templates summing lineitem share
        one), past it over templates; but ``besides``'s. ``excluded``: no query's own."""
        group = "subsume_key" if level <= 2 else "coalesce(template_key, subsume_key)"
        rows = self._rows(
            f"select {group} as kind, fingerprint from nodes "
            "where op = 'Aggregate' and subsume_key is not null "
            f"and {group} is not (select {group} from nodes where fingerprint = ?)",
            [besides],
        )
        values = Counter(r["kind"] for r in rows if r["fingerprint"] not in excluded)
        return (
            sum(max(n - level, 0) for n in values.values()),
            sum(max(n - level + 1, 0) for n in values.values()),
        )

    def usage(self, fingerprints: Iterable[str]) -> dict[str, tuple[int, float]]:
        """(ref, recency) of each known operator; recency counts from the QTree's start."""
        return {
            fp: (stats.ref, max(stats.last_access - self.start_time, 1e-3))
            for fp, stats in self._load(fingerprints).items()
        }

    def get(self, fingerprint: str) -> NodeStats | None:
        return self._load([fingerprint]).get(fingerprint)

    def get_many(self, fingerprints: Iterable[str]) -> dict[str, NodeStats]:
        """Statistics of the known ones among ``fingerprints``, in one lookup."""
        return self._load(fingerprints)

    # --- statistics ----------------------------------------------------------------------------

    def record_stats(
        self,
        fingerprint: str,
        *,
        texec: float,
        size_bytes: int,
        rows: int,
        source: str = MEASURED,
    ) -> None:
        """Store measured Texec/size/rows of an operator (the paper's runtime collection)."""
        self._refuse_if_read_only("record statistics")
        with self.db.conn:
            self.db.execute(
                "update nodes set texec = ?, size_bytes = ?, rows = ?, stats_source = ? "
                "where fingerprint = ?",
                [texec, size_bytes, rows, source, fingerprint],
            )

    def record_executions(self, statistics: dict[str, tuple[float, int, int]]) -> None:
        """Store (Texec, size, rows) per fingerprint read off an execution that computed the
        operator in full. Its rows replace earlier ones; its Texec replaces a larger one
        only: the same operator's work does not change between runs, while a run's time
        does (the first run of a template compiles its code, a busy machine slows a run
        down), so the fastest run measured is the closest to what computing it costs. A
        size measured by writing the result is kept over the row-based estimate."""
        self._refuse_if_read_only("record executions")
        with self.db.conn:
            self.db.conn.executemany(
                "update nodes set texec = min(coalesce(texec, ?), ?), rows = ?, "
                "size_bytes = case when stats_source = ? then size_bytes else ? end, "
                "stats_source = coalesce(nullif(stats_source, ?), ?) where fingerprint = ?",
                [
                    (t, t, rows, MEASURED, size, EXECUTED_PLAN, EXECUTED_PLAN, fp)
                    for fp, (t, size, rows) in statistics.items()
                ],
            )

    # --- invalidation ------------------------------------------------------------------------

    def stale_relations(self, relations: dict[str, str]) -> list[str]:
        """Fingerprints of leaves reading a relation key whose file listing has changed."""
        stale: list[str] = []
        for key, version in relations.items():
            stale += [
                r["fingerprint"]
                for r in self._rows(
                    "select fingerprint from nodes where rel_key = ? and rel_version != ?",
                    [key, version],
                )
            ]
        return stale

    def invalidate(self, fingerprints: Iterable[str]) -> set[str]:
        """Remove operators and, cascading, every ancestor; return all removed fingerprints."""
        self._refuse_if_read_only("invalidate operators")
        graph = self.graph(reload=True)
        doomed: set[str] = set()
        for fp in fingerprints:
            if fp in graph:
                doomed |= {fp} | nx.ancestors(graph, fp)
        if not doomed:
            return doomed
        with self.db.conn:
            self._delete_operators(sorted(doomed))
        graph.remove_nodes_from(doomed)
        return doomed

    def _delete_operators(self, fingerprints: list[str]) -> None:
        """Delete operators and every edge touching them (inside the caller's transaction)."""
        for start in range(0, len(fingerprints), 500):
            chunk = fingerprints[start : start + 500]
            marks = ",".join("?" * len(chunk))
            self.db.execute(f"delete from nodes where fingerprint in ({marks})", chunk)
            self.db.execute(
                f"delete from edges where parent in ({marks}) or child in ({marks})",
                chunk + chunk,
            )

    def forget(self, before: float, keep: Iterable[str] = ()) -> set[str]:
        """Remove operators not accessed since ``before`` (a time.time()), with their
        statistics, edges and the meta entries that name them (a fingerprint, or a
        subsumption key no operator has any more); return their fingerprints.

        ``keep`` (cached results) stays, and so does everything under it, so an operator
        kept never loses a child's edge. An operator forgotten is a new one when it comes
        back: fingerprints carry the input files' versions, so nothing stale is revived.
        """
        self._refuse_if_read_only("forget operators")
        try:
            with self.db.conn:
                doomed = self._forgettable(before, keep)
                keys = self._subsumption_keys("fingerprint", doomed)
                self._delete_operators(doomed)
                gone = set(doomed)
                dead_keys = keys - self._subsumption_keys("subsume_key", sorted(keys))
                named = [
                    row["key"]
                    for row in self._rows("select key from meta where key like '%:%'")
                    if gone.intersection(row["key"].split(":"))
                    or any(k in row["key"] for k in dead_keys)
                ]
                for key in named:
                    self.db.execute("delete from meta where key = ?", [key])
        except sqlite3.Error as exc:
            raise CatalogError(f"cannot forget operators in {self.db_path}: {exc}") from exc
        if gone:
            self._graph = None
        return gone

    def _subsumption_keys(self, column: str, values: list[str]) -> set[str]:
        """The subsumption keys of the operators whose ``column`` is one of ``values``."""
        rows = self._rows_in(
            f"select distinct subsume_key from nodes where {column} in ({{marks}})", values
        )
        return {r["subsume_key"] for r in rows if r["subsume_key"]}

    def _forgettable(self, before: float, keep: Iterable[str]) -> list[str]:
        rows = self.db.execute(
            "with recursive kept(fingerprint) as ("
            "  select value from json_each(?)"
            "  union select edges.child from edges join kept on edges.parent = kept.fingerprint"
            ") select fingerprint from nodes where last_access < ? "
            "and fingerprint not in (select fingerprint from kept)",
            [json.dumps(sorted(set(keep))), before],
        ).fetchall()
        return [row[0] for row in rows]

    # --- whole tree ----------------------------------------------------------------------------

    def graph(self, *, reload: bool = False) -> nx.DiGraph:
        """The QTree as a networkx graph, edges parent → child, node attributes = statistics."""
        if self._graph is None or reload:
            graph = nx.DiGraph()
            for row in self._rows("select * from nodes"):
                graph.add_node(row["fingerprint"], **row)
            for row in self.edges():
                graph.add_edge(row["parent"], row["child"], position=row["position"])
            self._graph = graph
        return self._graph

    def nodes(self) -> list[NodeRecord]:
        """Every operator with its statistics and label, in no particular order."""
        return [
            NodeRecord(_stats_from_row(row), row.get("label"))
            for row in self._rows("select * from nodes")
        ]

    def edges(self) -> list[dict[str, Any]]:
        """Every edge as ``{"parent", "position", "child"}`` (the child's place among the
        parent's children)."""
        return self._rows("select parent, position, child from edges")

    def parents(self, fingerprint: str) -> list[str]:
        """Fingerprints of the operators that have ``fingerprint`` as a child."""
        rows = self._rows("select parent from edges where child = ?", [fingerprint])
        return [r["parent"] for r in rows]

    def children(self, fingerprint: str) -> list[str]:
        """Fingerprints of the children of ``fingerprint``, in position order."""
        rows = self._rows(
            "select child from edges where parent = ? order by position", [fingerprint]
        )
        return [r["child"] for r in rows]

    def __len__(self) -> int:
        rows = self._rows("select count(*) as n from nodes")
        return rows[0]["n"] if rows else 0

    def clear(self) -> None:
        self._refuse_if_read_only("clear the QTree")
        with self.db.conn:
            self.db.execute("delete from nodes")
            self.db.execute("delete from edges")
            self.db.execute("delete from meta where key = 'start_time'")
            self.db["meta"].insert({"key": "start_time", "value": repr(time.time())}, replace=True)
        self._graph = None
        self._start_time = None

    def close(self) -> None:
        self.db.conn.close()


def _stats_from_row(row: dict[str, Any]) -> NodeStats:
    return NodeStats(
        fingerprint=row["fingerprint"],
        op=row["op"],
        ref=row["ref"],
        first_seen=row["first_seen"],
        last_access=row["last_access"],
        texec=row["texec"],
        size_bytes=row["size_bytes"],
        rows=row["rows"],
        stats_source=row["stats_source"],
    )


def _ensure_schema(db: sqlite_utils.Database) -> None:
    if "meta" not in db.table_names():
        db["meta"].create({"key": str, "value": str}, pk="key")
    db["meta"].insert({"key": "start_time", "value": repr(time.time())}, ignore=True)
    db["meta"].insert({"key": "schema_version", "value": SCHEMA_VERSION}, ignore=True)
    if "nodes" not in db.table_names():
        db["nodes"].create(
            {
                "fingerprint": str,
                "op": str,
                "label": str,
                "ref": int,
                "first_seen": float,
                "last_access": float,
                "texec": float,
                "size_bytes": int,
                "rows": int,
                "stats_source": str,
                "rel_key": str,
                "rel_version": str,
            },
            pk="fingerprint",
            not_null={"op", "ref"},
        )
        db["nodes"].create_index(["rel_key"])
    if "edges" not in db.table_names():
        db["edges"].create(
            {"parent": str, "position": int, "child": str}, pk=("parent", "position")
        )
        db["edges"].create_index(["child"])
    nodes = db["nodes"]
    if "relaxed_key" not in nodes.columns_dict:
        nodes.add_column("relaxed_key", str)
        nodes.add_column("columns", str)
        nodes.create_index(["relaxed_key"])
    if "subsume_key" not in nodes.columns_dict:
        nodes.add_column("subsume_key", str)
        nodes.add_column("shape", str)
        nodes.create_index(["subsume_key"])
    if "template_key" not in nodes.columns_dict:
        nodes.add_column("template_key", str)
        nodes.create_index(["template_key"])


def _subsumption(node: PlanNode) -> tuple[str | None, str | None]:
    """(subsumption key, shape JSON) of an operator a cached result may stand in for."""
    found = subsumption_key(node) if storable(node) else None
    return (None, None) if found is None else (found[0], found[1].dumps())


def _held(node: PlanNode) -> PlanNode | None:
    """``node``, or where the QTree does not hold it (the order-bound ``LocalLimit`` under a
    query's top rows) the operator it holds right under it, so that invalidating an input
    reaches every operator above it; None if there is none."""
    while node.uncacheable is not None and len(node.children) == 1:
        node = node.children[0]
    return node if node.uncacheable is None else None
