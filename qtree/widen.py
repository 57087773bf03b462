"""Widening: a table's selection under the conditions a template's statements share.

A drifting template filters one table by conditions some of which its parameters choose
(TPC-H Q19: ``l_quantity`` ranges in an OR) and some of which every statement of it states
alike (``l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON'``). No
statement's own result serves the next, and no aggregate above it can be lifted (its
conditions are not ranges on grouping candidates). The selection under the shared conditions
alone, with the columns the varying ones read, holds every later statement's rows: filter
subsumption (``criss.qtree.subsume``) serves each with its own conditions as the residual.

Pure rules: which conditions are shared with an earlier statement of the same selection
(:func:`shared_selection`), and where the widened selection drops the others
(:func:`selection_sites`, for ``criss.bridge.lift.widened_selection``).

>>> from criss.qtree.predicates import Atom
>>> mode = Atom.one_of("mode", "string", ["AIR"])
>>> low, mid, high = (Atom.compare("qty", ">=", "integer", v) for v in ("1", "3", "5"))
>>> shape = Shape("rows", frozenset({mode, low}), ("key", "qty"))
>>> earlier = [(fp, Shape("rows", frozenset({mode, a}), ("key", "qty"))) for fp, a in
...     (("e2", mid), ("e1", high))]
>>> shared_selection(shape, earlier[:1]) is None  # one earlier statement: maybe chance
True
>>> widening = shared_selection(shape, earlier)
>>> sorted(a.column for a in widening.shared), widening.columns, widening.sibling
(['mode'], ('qty',), 'e2')
"""

from __future__ import annotations

from dataclasses import dataclass

from criss.qtree.lineage import output_lineage
from criss.qtree.plan import PlanNode
from criss.qtree.predicates import Atom
from criss.qtree.subsume import LiftSite, Shape

#: Earlier statements of a selection, under other conditions, before it is widened.
EVIDENCE = 2
#: Operators a widened selection passes through, down to its table.
SELECTION_OPERATORS = frozenset({"Project", "Filter"})


@dataclass(frozen=True)
class Widening:
    """The conditions a selection shares with an earlier statement of it (``sibling``, a
    fingerprint), and the columns (lineage) the conditions either of them does not share
    read: the widened selection keeps the first and outputs the second."""

    shared: frozenset[Atom]
    columns: tuple[str, ...]
    sibling: str


def selects_one_table(node: PlanNode) -> bool:
    """Whether ``node`` is a Project or Filter over Projects and Filters over one scan,
    with at least one Filter: the selections a widening copies (a join's are its inputs')."""
    filtered = False
    while node.op in SELECTION_OPERATORS and len(node.children) == 1:
        filtered = filtered or node.op == "Filter"
        node = node.children[0]
    return filtered and not node.children


def shared_selection(shape: Shape, siblings: list[tuple[str, Shape]]) -> Widening | None:
    """The conditions ``shape`` (a selection's) shares with every earlier statement of it
    among ``siblings`` (fingerprint, shape; most recent first): those with the same columns
    under other conditions, less the NOT NULLs of the columns the others read. None with
    fewer than :data:`EVIDENCE` of them (two statements may share a parameter value by
    chance: a copy keeping it would serve few of the next), or where they share only NOT
    NULLs (the copy would be the table's)."""
    same = [
        (fp, s)
        for fp, s in siblings
        if s.kind == "rows" and s.columns == shape.columns and s.atoms != shape.atoms
    ]
    if len(same) < EVIDENCE:
        return None
    shared = frozenset(shape.atoms)
    for _, sibling in same:
        shared &= sibling.atoms
    varying = {a for _, s in same for a in s.atoms} | shape.atoms
    columns = tuple(sorted({c for atom in varying - shared for c in reads(atom)}))
    # a NOT NULL on a column whose conditions vary is theirs (Catalyst infers it from
    # them): a statement without them wants that column's NULLs too
    shared = frozenset(a for a in shared if not (a.kind == "notnull" and a.column in columns))
    if not columns or all(a.kind == "notnull" for a in shared):
        return None
    # the most recent statement that is not itself a copy measured the selection's Texec
    measured = next((fp for fp, s in same if s.atoms != shared), same[0][0])
    return Widening(shared, columns, measured)


def reads(atom: Atom) -> tuple[str, ...]:
    """The columns (lineage) a condition reads."""
    return atom.reads if atom.kind == "opaque" else (atom.column,)


def selection_sites(node: PlanNode, columns: tuple[str, ...]) -> list[LiftSite]:
    """Each Filter of the selection ``node`` (its relative path) with the positions in its
    input of ``columns``: the widened selection drops there the conditions that read only
    those, and passes them up."""
    wanted = set(columns)
    sites: list[LiftSite] = []
    path: tuple[int, ...] = ()
    while node.op in SELECTION_OPERATORS and len(node.children) == 1:
        if node.op == "Filter":
            inputs = output_lineage(node.children[0])
            positions = [i for i, c in enumerate(inputs or ()) if c in wanted]
            if positions:
                sites.append((path, positions))
        node, path = node.children[0], path + (0,)
    return sites
