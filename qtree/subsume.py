"""Reuse across parameters: a cached result that still holds what a query asks for.

Pure rules over signatures (``criss.qtree.lineage``), each answering with a
:class:`Derivation`, the recipe the bridge turns into a plan over the cached rows:

* **filter subsumption**: a cached ``σ[p](X)`` (a Project, Filter or Join over X) serves
  ``σ[q](X)`` when ``q`` implies ``p``: the cached rows are filtered again by the conjuncts
  of ``q`` the cache did not apply (the residual) and the wanted columns kept. The residual
  must read only columns the cache holds.
* **aggregate subsumption and roll-up**: a cached ``γ[G; A](σ[p](X))`` serves
  ``γ[G'; A'](σ[q](X))`` when ``q`` implies ``p``, the residual reads only grouping columns
  of ``G`` and ``G'`` is part of ``G``. With ``G' = G`` the cached groups are filtered (any
  aggregate); with fewer grouping columns they are aggregated again, for aggregates that
  decompose: sum, count, min, max, and avg from a cached sum and count of its argument.

Operators are keyed by what stays when parameters change (:func:`subsumption_key`): the
rows before the liftable filters, and for an Aggregate also that it aggregates them. The
QTree stores each operator's :class:`Shape` under that key, so a query finds the cached
results that might serve it with one lookup.

>>> from criss.qtree.predicates import Atom
>>> cached = Shape("rows", frozenset({Atom.compare("x", ">", "integer", "3")}), ("x", "y"))
>>> wanted = Shape("rows", frozenset({Atom.compare("x", ">", "integer", "5")}), ("y",))
>>> derive(wanted, cached).outputs
(DerivedColumn(how='column', columns=(1,)),)
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from criss.qtree.aggregates import AggregateOutput, aggregate_signature
from criss.qtree.lineage import (
    ROW_OPERATORS,
    condition_atoms,
    filtered_signature,
    join_shape,
    object_name,
    output_lineage,
)
from criss.qtree.plan import Expr, PlanNode
from criss.qtree.predicates import Atom, comparable, implies

#: Rule names, as a Reuse, the query record and ``explain`` give them.
FILTER_SUBSUMPTION = "filter-subsumption"
AGGREGATE_ROLLUP = "aggregate-rollup"
#: How a rolled-up aggregate is computed from the cached one's outputs.
ROLLUPS = {"Sum": "sum", "Count": "count", "Min": "min", "Max": "max"}


#: Decoded shapes kept (immutable values, a few KB each).
SHAPES_REMEMBERED = 4096


@dataclass(frozen=True)
class Shape:
    """What a subsumption rule compares: ``rows`` (a Project, Filter or Join: the lineage
    of each output column) or ``aggregate`` (its grouping and outputs), and the conjuncts
    of the filters applied to the rows below."""

    kind: str
    atoms: frozenset[Atom]
    columns: tuple[str, ...] = ()
    grouping: tuple[str, ...] = ()
    outputs: tuple[AggregateOutput, ...] = ()

    def dumps(self) -> str:
        return json.dumps(
            {
                "kind": self.kind,
                "atoms": sorted(a.to_json() for a in self.atoms),
                "columns": list(self.columns),
                "grouping": list(self.grouping),
                "outputs": [o.to_json() for o in self.outputs],
            }
        )

    @classmethod
    def loads(cls, text: str) -> Shape:
        """The shape ``text`` (from :meth:`dumps`) spells; the QTree hands every query the
        shapes of all operators over a table it selects from, so decoded ones are kept."""
        return _decoded_shape(text)


@functools.lru_cache(maxsize=SHAPES_REMEMBERED)
def _decoded_shape(text: str) -> Shape:
    data = json.loads(text)
    return Shape(
        data["kind"],
        frozenset(Atom.from_json(a) for a in data["atoms"]),
        tuple(data["columns"]),
        tuple(data["grouping"]),
        tuple(AggregateOutput.from_json(o) for o in data["outputs"]),
    )


def subsumption_key(node: PlanNode) -> tuple[str, Shape] | None:
    """The key ``node`` shares with every operator computing the same thing from the same
    rows under other filter parameters, and its shape; None for other operators."""
    if node.op in ROW_OPERATORS:
        rows = filtered_signature(node)
        if rows is None:
            return None
        return "rows:" + rows.base, Shape("rows", rows.atoms, columns=rows.columns)
    aggregate = aggregate_signature(node)
    if aggregate is None:
        return None
    shape = Shape(
        "aggregate", aggregate.atoms, grouping=aggregate.grouping, outputs=aggregate.outputs
    )
    return "aggregate:" + aggregate.base, shape


@dataclass(frozen=True)
class Residual:
    """A conjunct the cached rows still have to satisfy, on cached column ``column``; an
    opaque one (any other condition: a LIKE, an OR, arithmetic) on the cached columns
    ``reads_at`` (those of its ``atom.reads``), applied as the wanted operator's own
    Filters state it (:attr:`Derivation.filters`)."""

    atom: Atom
    column: int
    reads_at: tuple[int, ...] = ()


@dataclass(frozen=True)
class FilterBinding:
    """A Filter of the wanted operator whose conjuncts are applied again to the cached
    rows: its path relative to the wanted operator, and (input position, cached position)
    for each column of its input the cache holds. Each of its conjuncts that reads only
    those is applied (one the cache applied already holds on every cached row, so applying
    it again changes nothing); one that reads another column is one the cache applied."""

    at: tuple[int, ...]
    inputs: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class DerivedColumn:
    """One wanted output from the cached columns: ``column`` as it is, or (a roll-up)
    ``sum``, ``count`` (a sum of counts, 0 when there are none), ``min``, ``max`` of one,
    ``avg`` from a cached sum and count, or ``expression``: the wanted output's own
    expression over its aggregates, each rolled up as one of ``parts``."""

    how: str
    columns: tuple[int, ...]
    parts: tuple[DerivedColumn, ...] = ()


@dataclass(frozen=True)
class Derivation:
    """How to compute a wanted operator from a cached result: keep the cached rows that
    satisfy ``residual``, group them by ``grouping`` (positions; None: no aggregation),
    and compute each of ``outputs``."""

    rule: str
    residual: tuple[Residual, ...]
    grouping: tuple[int, ...] | None
    outputs: tuple[DerivedColumn, ...]
    #: Where the wanted operator's opaque residual conjuncts are (none without them).
    filters: tuple[FilterBinding, ...] = ()


def derive(wanted: Shape, cached: Shape, node: PlanNode | None = None) -> Derivation | None:
    """How ``cached`` (same key) serves ``wanted``, or None if it cannot. With ``node``
    (the wanted operator), also where an opaque residual conjunct is applied, and whether
    the types of its grouping columns allow the derivation: without it, a derivation
    needing an opaque residual is not made, and types are not looked at."""
    if wanted.kind != cached.kind or not implies(wanted.atoms, cached.atoms):
        return None
    rows = wanted.kind == "rows"
    derivation = _derive_rows(wanted, cached) if rows else _derive_aggregate(wanted, cached)
    if derivation is None:
        return None
    if node is not None and derivation.grouping is not None and _collated(node):
        return None  # a roll-up's group of equal strings keeps another one than Spark's
    if not any(r.atom.kind == "opaque" for r in derivation.residual):
        return derivation
    if node is None:
        return None
    available = _positions(cached.columns) if rows else _grouped(cached)
    bound = _filter_bindings(node, available, derivation.residual)
    if bound is None or (not rows and _reads_merged_values(bound[1], derivation.residual)):
        return None
    return replace(derivation, filters=bound[0])


#: Words of a Catalyst type (its JSON) whose values Spark merges when it groups by them:
#: -0.0 and 0.0, and every NaN, are one group (``NormalizeFloatingNumbers``), as strings
#: equal under a collation are; the group's value is one of them.
_MERGED_WHEN_GROUPED = ("float", "double", "collate")


def _reads_merged_values(types: dict[str, str], residual: tuple[Residual, ...]) -> bool:
    """Whether an opaque ``residual`` condition reads a column (of ``types``, lineage to
    Catalyst type, as the query's Filters read them) whose groups merge distinct values.
    Applied to cached groups, such a condition sees only the value each group kept, where
    the query applies it to every row before grouping (``cast(f as string) = '-0.0'``
    keeps the rows of -0.0, whose group is 0.0). A range or IN list is not one: Spark
    compares -0.0 equal to 0.0 and NaN equal to NaN."""
    return any(
        _merges(types.get(column, ""))
        for r in residual
        if r.atom.kind == "opaque"
        for column in r.atom.reads
    )


def _merges(data_type: str) -> bool:
    """Whether grouping by values of ``data_type`` (``""``: unknown) may merge distinct ones."""
    return not data_type or any(word in data_type for word in _MERGED_WHEN_GROUPED)


def _collated(aggregate: PlanNode) -> bool:
    """Whether ``aggregate`` groups by, or aggregates, a string under a collation: a group
    of strings equal under it keeps one of them (and min or max one of its equals), and
    which one depends on the rows Spark saw, so a roll-up of cached groups may keep
    another ('A' for 'a')."""
    return any(
        not isinstance(expr, Expr)
        or any("collate" in data_type for data_type in expr.attribute_types().values())
        for name in ("groupingExpressions", "aggregateExpressions")
        for expr in aggregate.args.get(name, [])
    )


def _positions(columns: tuple[str, ...]) -> dict[str, int]:
    return {key: i for i, key in reversed(list(enumerate(columns)))}


def _derive_rows(wanted: Shape, cached: Shape) -> Derivation | None:
    available = _positions(cached.columns)
    residual = _residual_of(wanted, cached, available)
    if residual is None or any(c not in available for c in wanted.columns):
        return None
    outputs = tuple(DerivedColumn("column", (available[c],)) for c in wanted.columns)
    return Derivation(FILTER_SUBSUMPTION, residual, None, outputs)


def _residual_of(
    wanted: Shape, cached: Shape, available: dict[str, int]
) -> tuple[Residual, ...] | None:
    """The conjuncts of ``wanted`` that ``cached`` did not apply, on ``available`` columns
    (an identical conjunct holds for every cached row already)."""
    residual = []
    for atom in sorted(wanted.atoms - cached.atoms, key=lambda a: a.to_json()):
        if atom.kind == "opaque":
            if not atom.reads or any(c not in available for c in atom.reads):
                return None
            residual.append(Residual(atom, -1, tuple(available[c] for c in atom.reads)))
            continue
        if atom.column not in available:
            return None
        if atom.kind != "notnull" and not comparable(atom.data_type):
            return None  # no literal of its type to filter with
        residual.append(Residual(atom, available[atom.column]))
    return tuple(residual)


def _grouped(cached: Shape) -> dict[str, int]:
    """The cached aggregate's grouping columns (lineage) and their positions in it."""
    groups = {o.text: i for i, o in reversed(list(enumerate(cached.outputs))) if o.kind == "group"}
    return {key: groups[key] for key in cached.grouping if key in groups}


def _filter_bindings(
    node: PlanNode, available: dict[str, int], residual: tuple[Residual, ...]
) -> tuple[tuple[FilterBinding, ...], dict[str, str]] | None:
    """The Filters under ``node`` (through what its shape looks through), lower ones
    first, with the cached positions of their input's columns, and the type of each
    column (lineage) their conditions read; None unless every opaque ``residual``
    conjunct is one of theirs (a join's condition is applied by no Filter)."""
    bindings: list[FilterBinding] = []
    found: set[Atom] = set()
    types: dict[str, str] = {}

    def visit(here: PlanNode, at: tuple[int, ...]) -> None:
        # the lower Filters first, as Spark evaluates them: a condition above is never
        # evaluated on a row one below drops (a division by a value it excludes would raise)
        for index, child in enumerate(here.children):
            if child.op in ROW_OPERATORS:
                visit(child, at + (index,))
        if here.op == "Filter" and here.children:
            inputs = output_lineage(here.children[0])
            condition = here.args.get("condition")
            if inputs is not None and isinstance(condition, Expr):
                cached = tuple((i, available[c]) for i, c in enumerate(inputs) if c in available)
                bindings.append(FilterBinding(at, cached))
                found.update(condition_atoms(condition, inputs))
                for position, data_type in condition.attribute_types().items():
                    types[inputs[position]] = data_type

    try:
        visit(node, ())
    except Exception:  # any type: a condition no signature follows is bound to nothing
        return None
    opaque = {r.atom for r in residual if r.atom.kind == "opaque"}
    return (tuple(bindings), types) if opaque <= found else None


def _derive_aggregate(wanted: Shape, cached: Shape) -> Derivation | None:
    grouped = _grouped(cached)
    residual = _residual_of(wanted, cached, grouped)
    if residual is None or any(key not in grouped for key in wanted.grouping):
        return None
    if set(wanted.grouping) == set(cached.grouping):  # the same groups: only filtered
        texts = {o.text: i for i, o in reversed(list(enumerate(cached.outputs)))}
        if any(o.text not in texts for o in wanted.outputs):
            return None
        outputs = tuple(DerivedColumn("column", (texts[o.text],)) for o in wanted.outputs)
        return Derivation(FILTER_SUBSUMPTION, residual, None, outputs)
    derived = []
    for output in wanted.outputs:
        column = _rolled_up(output, grouped, cached.outputs)
        if column is None:
            return None
        derived.append(column)
    grouping = tuple(grouped[key] for key in wanted.grouping)
    return Derivation(AGGREGATE_ROLLUP, residual, grouping, tuple(derived))


def _rolled_up(
    output: AggregateOutput, grouped: dict[str, int], cached: tuple[AggregateOutput, ...]
) -> DerivedColumn | None:
    if output.kind == "group":
        return DerivedColumn("column", (grouped[output.text],)) if output.text in grouped else None
    if output.kind == "expression" and output.parts:
        parts = [_rolled_up(part, grouped, cached) for part in output.parts]
        if any(part is None for part in parts):
            return None
        return DerivedColumn("expression", (), tuple(parts))  # type: ignore[arg-type]
    if output.kind != "aggregate" or (output.distinct and output.function not in ("Min", "Max")):
        return None

    def partial(function: str) -> int | None:
        return next(
            (
                i
                for i, o in enumerate(cached)
                if o.kind == "aggregate"
                and o.function == function
                and o.argument == output.argument
                and not o.distinct
            ),
            None,
        )

    if output.function in ROLLUPS:
        position = partial(output.function)
        return None if position is None else DerivedColumn(ROLLUPS[output.function], (position,))
    if output.function == "Average":
        total, count = partial("Sum"), partial("Count")
        if total is not None and count is not None:
            return DerivedColumn("avg", (total, count))
    return None


def best_derivation(
    wanted: Shape, candidates: list[tuple[str, Shape]], node: PlanNode | None = None
) -> tuple[str, Derivation] | None:
    """The first candidate (fingerprint, shape) that can serve ``wanted`` (the shape of
    ``node``, where given: see :func:`derive`), and how; callers order candidates best
    first (e.g. smallest cached result)."""
    for fingerprint, shape in candidates:
        derivation = derive(wanted, shape, node)
        if derivation is not None:
            return fingerprint, derivation
    return None


def describe_derivation(derivation: Derivation) -> dict[str, Any]:
    """The derivation as plain data for the query record (``explain`` renders it with
    :func:`derivation_text`)."""
    return {
        "residual": [
            [sorted(r.reads_at), "meet the query's own condition", []]
            if r.atom.kind == "opaque"
            else [
                r.column,
                "is not null" if r.atom.kind == "notnull" else r.atom.op,
                list(r.atom.values),
            ]
            for r in derivation.residual
        ],
        "grouping": None if derivation.grouping is None else list(derivation.grouping),
        # an expression's: the cached columns its rolled-up aggregates read
        "outputs": [
            [o.how, list(o.columns) or [c for p in o.parts for c in p.columns]]
            for o in derivation.outputs
        ],
    }


def derivation_text(data: dict[str, Any]) -> str:
    """``where c0 >= 2; group by c1; sum(c2), count(c3)``: what was computed from the
    cached columns (``cN`` is the entry's column N)."""
    parts = []
    conditions = [
        _columns_text(column)
        + f" {op}"
        + (
            ""
            if not values
            else " " + (values[0] if len(values) == 1 else f"({', '.join(values)})")
        )
        for column, op, values in data.get("residual", [])
    ]
    if conditions:
        parts.append("where " + " and ".join(conditions))
    if data.get("grouping") is not None:
        parts.append(
            "group by " + ", ".join(f"c{p}" for p in data["grouping"])
            if data["grouping"]
            else "one group"
        )
        rolled = [
            f"{how}({', '.join(f'c{c}' for c in cols)})"
            for how, cols in data.get("outputs", [])
            if how != "column"
        ]
        if rolled:
            parts.append(", ".join(rolled))
    return "; ".join(parts) or "the cached rows as they are"


def _columns_text(column: int | list[int]) -> str:
    """``c2`` for one cached column, ``c1, c3`` for the columns an opaque condition reads."""
    if isinstance(column, list):
        return ", ".join(f"c{c}" for c in column) or "no column"
    return f"c{column}"


# --- lifting: an aggregate at a finer grain, so that its parameters become a roll-up ------------

#: Aggregates a lifted aggregate can stand in for (Average through a sum and a count).
LIFTABLE_FUNCTIONS = frozenset({"Sum", "Count", "Min", "Max", "Average"})


def lifted_columns(shape: Shape) -> tuple[str, ...] | None:
    """The columns (lineage) ``shape``'s parameters filter on (ranges and IN lists), to be
    grouped by instead, or None when the aggregate cannot be lifted: no such condition on a
    column it does not group by already, or an output that does not decompose."""
    return None if undecomposed_output(shape) else parameter_columns(shape)


def parameter_columns(shape: Shape) -> tuple[str, ...] | None:
    """The columns (lineage) aggregate ``shape``'s ranges and IN lists filter on, when one
    of them is not grouped by already (a lifted result groups by all of them); else None."""
    if shape.kind != "aggregate":
        return None
    columns = sorted(
        {a.column for a in shape.atoms if a.kind in ("compare", "in") and comparable(a.data_type)}
    )
    if all(c in shape.grouping for c in columns):
        return None  # nothing to group by that it does not group by already
    return tuple(columns)


def undecomposed_output(shape: Shape) -> str | None:
    """Why an output of aggregate ``shape`` cannot be rolled up from finer groups, or None.

    An expression over aggregates and literals is not one (Catalyst folds the Project above
    an Aggregate into its outputs: TPC-H Q14's ratio of two sums, Q17's ``sum(...) / 7.0``):
    a roll-up rebuilds each of its aggregates, then the expression over them.
    """
    for output in shape.outputs:
        if output.kind == "expression" and not output.parts:
            return (
                "an output is an expression that reads a column outside its aggregates, or "
                "an aggregate of a form a roll-up does not rebuild"
            )
        for function in output.parts or (output,):
            if function.kind == "aggregate" and function.distinct:
                return f"a DISTINCT {function.function} does not roll up from finer groups"
            if function.kind == "aggregate" and function.function not in LIFTABLE_FUNCTIONS:
                return f"{function.function} does not roll up from finer groups"
    return None


def _aggregate_template(shape: Shape) -> list[Any]:
    """What makes two aggregates the same one whatever their filter values."""
    return [list(shape.grouping), [o.text for o in shape.outputs]]


def aggregate_identity(key: str, shape: Shape) -> str:
    """One aggregate whatever its filter values: its subsumption key (what it reads) with a
    digest of its grouping and outputs. Many aggregates of one input share ``key``."""
    what = json.dumps(_aggregate_template(shape))
    return f"{key}:{hashlib.sha256(what.encode()).hexdigest()[:16]}"


def under_other_parameters(shape: Shape, sibling: Shape) -> bool:
    """Whether ``sibling`` is the same aggregate as ``shape`` (the one
    :func:`aggregate_identity` names) under other filter values; a lifted result, grouped
    by more columns, is not."""
    return (
        sibling.kind == "aggregate"
        and _aggregate_template(sibling) == _aggregate_template(shape)
        and sibling.atoms != shape.atoms
    )


def varies_only_in(shape: Shape, sibling: Shape, columns: tuple[str, ...]) -> bool:
    """Whether ``sibling`` is ``shape``'s aggregate with other values of the ranges and IN
    lists on ``columns`` alone. A lifted result keeps every other condition of the query it
    was computed for (a ``<>``, a ``LIKE``): a template that also varies those is never
    served by it, whatever its groups."""
    return under_other_parameters(shape, sibling) and _fixed(shape, columns) == _fixed(
        sibling, columns
    )


def _fixed(shape: Shape, columns: tuple[str, ...]) -> frozenset[Atom]:
    """The conditions lifting over ``columns`` keeps."""
    return frozenset(
        a for a in shape.atoms if not (a.kind in ("compare", "in") and a.column in columns)
    )


#: A Filter to lift: its path relative to the aggregate, and the positions in its input of
#: the columns whose conditions are lifted.
LiftSite = tuple[tuple[int, ...], list[int]]


def lift_sites(aggregate: PlanNode, columns: tuple[str, ...]) -> list[LiftSite]:
    """Where lifting ``aggregate`` over ``columns`` changes its input: each Filter holding
    parameter conditions (ranges, IN lists) on some of them, reached through Projects,
    Filters and the sides of joins whose columns come out unchanged, as its relative path
    and the positions in its input of the columns it constrains. LookupError when a column
    is constrained in none (its condition lies where its values do not reach the top)."""
    sites: list[LiftSite] = []
    covered: set[str] = set()

    def search(node: PlanNode, path: tuple[int, ...]) -> None:
        if node.op == "Filter" and node.children:
            inputs = output_lineage(node.children[0])
            if inputs is not None:
                atoms = condition_atoms(node.args.get("condition"), inputs)
                here = [
                    c
                    for c in columns
                    if c in inputs
                    and any(a.column == c and a.kind in ("compare", "in") for a in atoms)
                ]
                if here:
                    sites.append((path, [inputs.index(c) for c in here]))
                    covered.update(here)
        for index in _passing_children(node):
            search(node.children[index], path + (index,))

    if aggregate.children:
        search(aggregate.children[0], (0,))
    missing = set(columns) - covered
    if missing:
        raise LookupError(f"{len(missing)} parameter column(s) do not reach the aggregate")
    return sites


def only_lifted_conditions(aggregate: PlanNode, site: LiftSite, columns: tuple[str, ...]) -> bool:
    """Whether the Filter at ``site`` (under ``aggregate``) holds nothing but the conditions
    lifting over ``columns`` removes (ranges and IN lists on them) and null checks: then the
    rows its measured execution dropped are the rows lifting adds back. A filter that also
    holds conditions lifting keeps (TPC-H Q12's ship modes and date order beside its
    receipt-date range) dropped more rows than lifting adds back."""
    node = aggregate.at(site[0])
    inputs = output_lineage(node.children[0]) if node.op == "Filter" and node.children else None
    if inputs is None:
        return False
    return all(
        atom.kind == "notnull" or (atom.kind in ("compare", "in") and atom.column in columns)
        for atom in condition_atoms(node.args.get("condition"), inputs)
    )


def _passing_children(node: PlanNode) -> tuple[int, ...]:
    """Children whose columns ``node`` outputs unchanged (neither computed nor NULL-extended)."""
    if node.op in ("Project", "Filter"):
        return (0,) if node.children else ()
    if node.op != "Join" or len(node.children) != 2:
        return ()
    shape = join_shape(object_name(node.args.get("joinType")))
    if shape is None:
        return ()
    keep_left, keep_right, null_left, null_right = shape
    return tuple(
        i
        for i, passes in enumerate((keep_left and not null_left, keep_right and not null_right))
        if passes
    )
