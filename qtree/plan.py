"""A plain-Python operator tree: what the bridge hands to ``qtree``.

Each node keeps Catalyst's own JSON of the operator (children removed) in ``args``;
expression fields stay in Catalyst's flat pre-order form until a rule needs them
as trees (see :func:`expression_tree`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any, TypeVar

T = TypeVar("T")
#: ``PlanNode.extra`` key of a file relation leaf: bytes of the columns its query reads
#: (``criss.qtree.scans``); absent, the relation's file bytes count.
READ_BYTES = "read_bytes"

CATALYST_PREFIXES = (
    "org.apache.spark.sql.catalyst.plans.logical.",
    "org.apache.spark.sql.catalyst.expressions.aggregate.",
    "org.apache.spark.sql.catalyst.expressions.",
    "org.apache.spark.sql.execution.datasources.",
    "org.apache.spark.sql.execution.",
)


def short_class(name: str) -> str:
    for prefix in CATALYST_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


#: Leaves over rows already in memory, as :func:`short_class` names them: a relation of
#: Spark's columnar cache (a user's ``cache()``, or a result the user's action computes
#: into it for Criss) and an RDD's rows (Criss's own writes of a computed result). An
#: action over one also ran, or ran before, a plan its canonical tree does not show.
CACHE_SCAN = short_class("org.apache.spark.sql.execution.columnar.InMemoryRelation")
RDD_SCAN = short_class("org.apache.spark.sql.execution.LogicalRDD")


@dataclass(frozen=True)
class PlanNode:
    """One logical operator with its canonical arguments and children.

    ``path`` is the sequence of child indices from the root, the handle the bridge
    uses to find the same operator in the JVM plan again.
    """

    op: str
    args: dict[str, Any]
    children: tuple[PlanNode, ...] = ()
    path: tuple[int, ...] = ()
    deterministic: bool = True
    #: Identity of the data a leaf reads (format, options, file listing), or None.
    relation: dict[str, Any] | None = None
    fingerprint: str = ""
    #: Why this operator may never be cached or matched (None: it may).
    uncacheable: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def walk(self) -> Iterator[PlanNode]:
        """Pre-order walk."""
        # a stack, not recursive generators (each level of ``yield from`` costs every
        # operator under it a step; TPC-DS plans are hundreds of operators deep)
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def walk_bottom_up(self) -> Iterator[PlanNode]:
        for child in self.children:
            yield from child.walk_bottom_up()
        yield self

    def at(self, path: tuple[int, ...]) -> PlanNode:
        """The operator at ``path`` under this one."""
        node = self
        for index in path:
            node = node.children[index]
        return node

    def with_(self, **changes: Any) -> PlanNode:
        return replace(self, **changes)

    @property
    def height(self) -> int:
        return 1 + max((c.height for c in self.children), default=0)

    def leaves(self) -> Iterator[PlanNode]:
        return (n for n in self.walk() if not n.children)

    @property
    def scanned_bytes(self) -> int:
        """Bytes of the files the subtree's leaves read (0 where unknown)."""
        return self.scanned_bytes_outside(())

    def scanned_bytes_outside(self, served: Iterable[tuple[int, ...]]) -> int:
        """Bytes of the files the subtree's leaves read (of the columns read, where a leaf
        is marked with them: ``criss.qtree.scans``), except leaves under a path in
        ``served`` (subtrees a cached result stands in for, which read no table file)."""
        served = tuple(served)
        return sum(
            leaf.extra.get(READ_BYTES, leaf.relation.get("bytes", 0))
            for leaf in self.leaves()
            if leaf.relation and not within(leaf.path, served)
        )


def within(path: tuple[int, ...], roots: Iterable[tuple[int, ...]]) -> bool:
    """Whether the operator at ``path`` lies in a subtree rooted at one of ``roots`` (the
    roots themselves included)."""
    return any(path[: len(root)] == root for root in roots)


def highest(root: PlanNode, pick: Callable[[PlanNode], T | None]) -> list[T]:
    """What ``pick`` gives at each highest operator where it gives something, top-down
    (nothing under such an operator is looked at: none of them nests in another)."""
    found: list[T] = []

    def visit(node: PlanNode) -> None:
        value = pick(node)
        if value is not None:
            found.append(value)
            return
        for child in node.children:
            visit(child)

    visit(root)
    return found


def tree_from_catalyst_json(nodes: list[dict[str, Any]]) -> PlanNode:
    """Build a PlanNode tree from Catalyst's ``toJSON()`` pre-order list of plan nodes."""
    position = 0

    def build(path: tuple[int, ...]) -> PlanNode:
        nonlocal position
        raw = nodes[position]
        position += 1
        n_children = raw.get("num-children", 0)
        # Child references (``child: 0``, ``left: 0, right: 1``) stay in args: they are
        # positional and so canonical already.
        args = {k: v for k, v in raw.items() if k not in ("class", "num-children")}
        children = tuple(build(path + (i,)) for i in range(n_children))
        return PlanNode(op=short_class(raw["class"]), args=args, children=children, path=path)

    root = build(())
    if position != len(nodes):
        raise ValueError(f"plan JSON has {len(nodes) - position} trailing nodes")
    return root


# --- expressions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """An expression node rebuilt from Catalyst's flat pre-order JSON list.

    ``fields`` keeps every field but the class, including child references, which are
    positional (``left: 0``) and so stay valid when children are reordered symmetrically.
    """

    cls: str
    fields: tuple[tuple[str, Any], ...]
    children: tuple[Expr, ...]

    def mentions(self, wanted: Callable[[Expr], bool]) -> bool:
        """Whether this expression or any under it is ``wanted``."""
        return wanted(self) or any(child.mentions(wanted) for child in self.children)

    @property
    def attribute_id(self) -> Any:
        """An attribute's id (None for another expression): in a canonical plan, its
        position in the input of the operator holding it."""
        if not self.cls.endswith(".AttributeReference"):
            return None
        return dict(dict(self.fields).get("exprId", ())).get("id")

    def attribute_ids(self) -> set[Any]:
        """The ids of the attributes this expression reads (see :attr:`attribute_id`)."""
        return set(self.attribute_types())

    def attribute_types(self) -> dict[Any, str]:
        """The Catalyst type (lower case) of each attribute this expression reads, by id."""
        if self.cls.endswith(".AttributeReference"):
            return {self.attribute_id: str(dict(self.fields).get("dataType", "")).lower()}
        types: dict[Any, str] = {}
        for child in self.children:
            types.update(child.attribute_types())
        return types


def is_expression_list(value: Any) -> bool:
    """Catalyst serialises one expression as a non-empty list of dicts with ``class``."""
    if not isinstance(value, list) or not value:
        return False
    for item in value:  # a loop: asked of every list in every plan, it outruns all()
        if not (isinstance(item, dict) and "class" in item and "num-children" in item):
            return False
    return True


def expression_tree(flat: list[dict[str, Any]]) -> Expr:
    position = 0

    def build() -> Expr:
        nonlocal position
        raw = flat[position]
        position += 1
        count = raw.get("num-children", 0)
        children = tuple([build() for _ in range(count)]) if count else ()
        # field names are unique: ordering by name alone is the order of the pairs
        fields = [
            (k, _freeze(v) if isinstance(v, _CONTAINERS) else v)
            for k, v in raw.items()
            if k != "class"
        ]
        fields.sort(key=_field_name)
        return Expr(raw["class"], tuple(fields), children)

    expr = build()
    if position != len(flat):
        raise ValueError(f"expression JSON has {len(flat) - position} trailing nodes")
    return expr


_CONTAINERS = (dict, list, tuple)
_field_name = itemgetter(0)


def _freeze(value: Any) -> Any:
    """``value`` (a JSON container) as nested tuples: a dict as its (key, value) pairs in
    key order. Most are empty (an attribute's metadata) or small (its exprId)."""
    if not value:
        return ()
    if isinstance(value, dict):
        # keys are unique: ordering by key alone, values are never compared
        pairs = [(k, _freeze(v) if isinstance(v, _CONTAINERS) else v) for k, v in value.items()]
        pairs.sort(key=_field_name)
        return tuple(pairs)
    return tuple([_freeze(v) if isinstance(v, _CONTAINERS) else v for v in value])
