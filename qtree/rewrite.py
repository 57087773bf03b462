"""Decisions over a fingerprinted query tree: what to reuse, what may be stored.

Pure functions: storage lookups and statistics arrive as callables and mappings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from criss.qtree.canonical import NEVER_STORED, ORDER_BOUND, TOP_ROWS, expression_key
from criss.qtree.fingerprint import operator_digest
from criss.qtree.lineage import ROW_OPERATORS, row_signature
from criss.qtree.plan import Expr, PlanNode, highest
from criss.qtree.subsume import Derivation, Shape, best_derivation, subsumption_key


def storable(node: PlanNode) -> bool:
    """May this operator's result be stored and served in its place?"""
    return node.uncacheable is None and (node.op not in NEVER_STORED or top_rows(node))


def top_rows(node: PlanNode) -> bool:
    """Is ``node`` the limit of the query's final ``ORDER BY … LIMIT`` (its rows are the
    Sort's input's top rows; see ``criss.qtree.canonical.mark_order_bound``)?"""
    return bool(node.extra.get(TOP_ROWS))


def top_rows_sort(node: PlanNode) -> PlanNode:
    """The Sort that ranks the top rows ``node`` keeps (``GlobalLimit(LocalLimit(Sort))``)."""
    return node.at((0, 0))


def top_rows_input(node: PlanNode) -> tuple[int, ...]:
    """Where a copy of the top rows ``node`` serves: the input of its Sort (the Sort and the
    limits above it put them in the query's order again)."""
    return top_rows_sort(node).children[0].path


#: Operators that only select rows or columns of their input, row by row.
ROW_LOCAL = frozenset({"Filter", "Project", "SubqueryAlias"})


def scan_only(node: PlanNode) -> bool:
    """A subtree that only filters and projects one relation (no join, aggregate, window)."""
    if not node.children:
        return True
    return node.op in ROW_LOCAL and len(node.children) == 1 and scan_only(node.children[0])


def table_copy(node: PlanNode) -> bool:
    """Rows of one table, filtered and/or projected (the relation itself excluded): what
    caching this operator would store is a copy of part of one table."""
    return bool(node.children) and scan_only(node)


def copied_relation(node: PlanNode, broadcast_bytes: int) -> PlanNode | None:
    """The relation whose rows caching ``node`` would copy, or None: the one relation of a
    table copy, or the largest relation of a subtree that only filters, projects and joins
    it with relations whose files fit Spark's broadcast threshold (``broadcast_bytes``).
    Those joins only look columns up for its rows, in the stage that scans it: reading
    such a copy back saves the lookups, and scans about as many rows as the table."""
    if table_copy(node):
        return next(node.leaves())
    if not node.children or any(
        n.children and n.op not in ROW_LOCAL and n.op != "Join" for n in node.walk()
    ):
        return None
    leaves = list(node.leaves())
    if any(not leaf.relation or "bytes" not in leaf.relation for leaf in leaves):
        return None
    largest = max(leaves, key=lambda leaf: leaf.relation["bytes"])
    small = all(
        0 <= leaf.relation["bytes"] <= broadcast_bytes for leaf in leaves if leaf is not largest
    )
    return largest if small else None


def copied_relations(node: PlanNode, broadcast_bytes: int) -> tuple[PlanNode, ...] | None:
    """The relations whose rows caching ``node`` would copy, or None: ``copied_relation``'s
    one, or for a union of copies (filters and projections over one included) those of
    each of its inputs. TPC-DS q5's and q5a's unions of a sales and a returns table,
    each filtered and projected, are such: their copy is about as large as the columns
    the query scans (q5a, SF 1: its action took 13.9 s through Criss against plain
    Spark's 6.5 s while three of them were written)."""
    one = copied_relation(node, broadcast_bytes)
    if one is not None:
        return (one,)
    if node.op in ROW_LOCAL and len(node.children) == 1:
        return copied_relations(node.children[0], broadcast_bytes)
    if node.op != "Union" or not node.children:
        return None
    found: list[PlanNode] = []
    for child in node.children:
        copied = (child,) if not child.children else copied_relations(child, broadcast_bytes)
        if copied is None:
            return None
        found.extend(copied)
    return tuple(found)


def copy_kind(node: PlanNode) -> str:
    """What a copy of tables (``copied_relations``) is, as the reasons not to cache it name
    it: one table's rows ("table_copy"), a union of copies ("union_copy"), or one table's
    rows with columns looked up in broadcast tables ("widened_copy")."""
    if table_copy(node):
        return "table_copy"
    while node.op in ROW_LOCAL and len(node.children) == 1:
        node = node.children[0]
    return "union_copy" if node.op == "Union" else "widened_copy"


def unprojected_scan(node: PlanNode) -> bool:
    """Rows of one table with all its columns (a Filter straight over the relation).

    Column pruning puts the narrowing Project *above* such a Filter, so caching it writes
    every column of every kept row: e.g. 132 MB for TPC-H SF1's late lineitems, slower to
    write and read back than rescanning the few columns the query needs.
    """
    return node.op != "Project" and table_copy(node)


def result_node(root: PlanNode) -> PlanNode:
    """The query's result below any final ordering/limit wrapper (whose order a read loses)."""
    node = root
    while (
        not storable(node) and len(node.children) == 1 and node.uncacheable in (None, ORDER_BOUND)
    ):
        node = node.children[0]
    return node


@dataclass(frozen=True)
class SortKey:
    """One key of a final ORDER BY: a column of the query's result and its direction."""

    column: int
    descending: bool
    nulls_first: bool


def final_ordering(root: PlanNode) -> tuple[tuple[int, ...], tuple[SortKey, ...]] | None:
    """The path of the global Sort right above the query's result (or right under its top
    rows), and its keys, when every key is a plain column of the result (so the sort can be
    applied to its cached rows)."""
    result = result_node(root)
    if top_rows(result):
        sort = top_rows_sort(result)
    elif not result.path:
        return None
    else:
        sort = root.at(result.path[:-1])
    if sort.op != "Sort" or sort.args.get("global") is not True:
        return None
    keys = []
    for order in sort.args.get("order", []):
        key = _sort_key(order)
        if key is None:
            return None
        keys.append(key)
    return (sort.path, tuple(keys)) if keys else None


def _sort_key(order: Any) -> SortKey | None:
    if not isinstance(order, Expr) or not order.cls.endswith(".SortOrder"):
        return None
    if len(order.children) != 1 or not order.children[0].cls.endswith(".AttributeReference"):
        return None
    child = order.children[0]
    fields = dict(order.fields)
    position = child.attribute_id
    if not isinstance(position, int) or position < 0:
        return None  # canonical ids are positions in the child's output
    direction = str(dict(fields.get("direction", ())).get("object", ""))
    nulls = str(dict(fields.get("nullOrdering", ())).get("object", ""))
    if not direction.endswith(("Ascending$", "Descending$")) or not nulls.endswith(
        ("NullsFirst$", "NullsLast$")
    ):
        return None
    return SortKey(position, direction.endswith("Descending$"), nulls.endswith("NullsFirst$"))


@dataclass(frozen=True)
class Relative:
    """A cached operator that differs from the wanted one only in what a rewrite fixes."""

    fingerprint: str
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reuse:
    """Serve the operator at ``path`` from the cached result ``fingerprint``.

    ``rule`` says how: ``exact``, ``project-subset`` (read the cached wider Project and keep
    ``columns``, the cached output positions in the wanted order) or
    ``exchange-repartition`` (read the cached repartitioned data and repartition it again),
    or, across parameters, ``filter-subsumption`` and ``aggregate-rollup`` (compute it from
    the cached rows as ``derivation`` says, see ``criss.qtree.subsume``).
    """

    path: tuple[int, ...]
    fingerprint: str
    rule: str = "exact"
    columns: tuple[int, ...] | None = None
    derivation: Derivation | None = None


# --- rewrite rules (paper §2.2): which near-misses can be served, and how -------------------------

#: Arguments an Exchange may differ in: only the number of partitions (and its advisory size).
PARTITION_COUNT_ARGS = frozenset({"numPartitions", "optNumPartitions", "optAdvisoryPartitionSize"})
REPARTITIONS = frozenset({"RepartitionByExpression", "Repartition"})


def relaxed_key(node: PlanNode) -> str | None:
    """Key shared by operators a rewrite rule can serve from one another, else None.

    A Project, Filter or Join is keyed by the rows it produces (its row signature, see
    ``qtree.lineage``; columns are compared by :func:`project_subset`), a Project whose
    input a signature cannot follow by that input alone; a repartition by its input and
    partitioning expressions, not its partition count.
    """
    if not storable(node):
        return None
    signature = row_signature(node)
    if signature is not None:
        # the signature names the inputs it reads, not the Projects between them
        shape = ["rows", signature.rows]
    elif len(node.children) != 1:
        return None
    elif node.op == "Project":
        shape = ["Project", node.children[0].fingerprint]
    elif node.op in REPARTITIONS:
        args = {k: v for k, v in node.args.items() if k not in PARTITION_COUNT_ARGS}
        shape = [node.op, operator_digest(node.with_(args=args)), node.children[0].fingerprint]
    else:
        return None
    text = json.dumps(shape)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def relaxed_columns(node: PlanNode) -> tuple[str, ...]:
    """What the Project-subset rule compares: each output column's lineage for an operator
    with a row signature, else a Project's canonical output expressions, in output order."""
    signature = row_signature(node)
    if signature is not None:
        return signature.columns
    if node.op != "Project":
        return ()
    return tuple(expression_key(e) for e in node.args.get("projectList", []))


def project_subset(node: PlanNode, relative: Relative) -> tuple[int, ...] | None:
    """Positions in the cached operator's output of each column ``node`` needs, if all
    are there."""
    available = {key: i for i, key in reversed(list(enumerate(relative.columns)))}
    wanted = relaxed_columns(node)
    if not wanted or any(key not in available for key in wanted):
        return None
    return tuple(available[key] for key in wanted)


def match_relative(node: PlanNode, relatives: list[Relative]) -> Reuse | None:
    """The first relative a rewrite rule can serve ``node`` from."""
    for relative in relatives:
        if relative.fingerprint == node.fingerprint:
            continue
        if node.op in ROW_OPERATORS:
            columns = project_subset(node, relative)
            if columns is not None:
                return Reuse(node.path, relative.fingerprint, "project-subset", columns)
        elif node.op in REPARTITIONS:
            return Reuse(node.path, relative.fingerprint, "exchange-repartition")
    return None


def match_subsuming(node: PlanNode, subsumers: Callable[[str], list[tuple[str, Shape]]]):
    """A Reuse serving ``node`` from a cached result under other filter parameters, or None."""
    keyed = subsumption_key(node)
    if keyed is None:
        return None
    key, shape = keyed
    found = best_derivation(shape, [c for c in subsumers(key) if c[0] != node.fingerprint], node)
    if found is None:
        return None
    fingerprint, derivation = found
    return Reuse(node.path, fingerprint, derivation.rule, derivation=derivation)


def plan_reuse(
    root: PlanNode,
    is_cached: Callable[[str], bool],
    cached_relatives: Callable[[str], list[Relative]] = lambda key: [],
    cached_subsumers: Callable[[str], list[tuple[str, Shape]]] = lambda key: [],
    worth_reading: Callable[[PlanNode, str], bool] = lambda node, fingerprint: True,
) -> list[Reuse]:
    """Top-down: the highest operators servable from the cache (none nested).

    An exact match wins; otherwise a rewrite rule may serve the operator from a relative,
    or a cached result under other filter parameters from which it can be computed. An
    operator not ``worth_reading`` from an entry (measured, as itself or as that entry's
    operator, cheaper to compute than to read back) is not served; what is under it still
    may be: an operator measured while the cache served the part below it was timed
    without that part (criss.qtree.executed), so it can look cheap above an operator that
    is not (TPC-H Q18's HAVING over its per-order aggregate).
    """

    def served(node: PlanNode) -> Reuse | None:
        if not storable(node) or not worth_reading(node, node.fingerprint):
            return None
        if is_cached(node.fingerprint):
            return Reuse(node.path, node.fingerprint)
        key = relaxed_key(node)
        reuse = match_relative(node, cached_relatives(key)) if key else None
        if reuse is None:
            reuse = match_subsuming(node, cached_subsumers)
        if reuse is not None and worth_reading(node, reuse.fingerprint):
            return reuse
        return None

    return highest(root, served)


def outside(root: PlanNode, paths: set[tuple[int, ...]]) -> Iterator[PlanNode]:
    """Operators not inside any of the subtrees rooted at ``paths`` (those roots included)."""
    yield root
    if root.path in paths:
        return
    for child in root.children:
        yield from outside(child, paths)
