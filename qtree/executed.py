"""An executed plan matched back to the query Criss planned.

Where the cache served an operator, the plan Spark ran reads cached rows in its place, so
every operator above it has another fingerprint in the executed plan than in the query:
its statistics would be recorded under a fingerprint no query has, and the query's own
operators above a served subtree would never be measured (cached "to collect statistics"
instead, at a write of their own). An operator above a served subtree computes the same
rows when everything else under it is the same, so its executed counterpart stands in for
it: same operator, each child either the same operator as planned (equal fingerprints), a
served one (its read gives the same rows), or itself such a stand-in. Spark optimizes the
plan with reads in it again, which may change its shape next to a read (a filter pushed
into it, projections merged); the executed plan's root returns the result's rows whatever
its shape, so it always stands in for the planned root.

Its Texec measured this way is what computing it costs while the cache serves the part
below, the cost a decision to cache it weighs against reading it back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from criss.qtree.plan import PlanNode

Path = tuple[int, ...]


@dataclass(frozen=True)
class PlannedQuery:
    """A query's operators as planned (path → (fingerprint, operator)), outside the served
    subtrees, and the paths the cache served."""

    operators: Mapping[Path, tuple[str, str]]
    served: frozenset[Path]

    def below(self, root: Path) -> PlannedQuery | None:
        """The same, for the subtree at ``root`` with paths from it (a result cached on its
        own runs as a plan of its own); None when nothing under it was served."""
        depth = len(root)
        served = frozenset(p[depth:] for p in self.served if p[:depth] == root)
        if not served:
            return None
        operators = {p[depth:]: op for p, op in self.operators.items() if p[:depth] == root}
        return PlannedQuery(operators, served)


def planned_query(root: PlanNode, served: Collection[Path]) -> PlannedQuery | None:
    """``root``'s operators outside the ``served`` subtrees (their roots included), with
    paths from ``root``; None when nothing under it was served."""
    served = frozenset(served)
    if not served:
        return None

    def inside(path: Path) -> bool:
        return any(path[: len(p)] == p and path != p for p in served)

    operators = {n.path: (n.fingerprint, n.op) for n in root.walk() if not inside(n.path)}
    return PlannedQuery(operators, served).below(root.path)


def standing_in(executed: PlanNode, planned: PlannedQuery) -> dict[Path, str]:
    """The planned fingerprint of each executed operator above a served subtree that stands
    in for it, by path (see the module's doc)."""
    above = {p[:i] for p in planned.served for i in range(len(p))}
    children = Counter(p[:-1] for p in planned.operators if p)
    found: dict[Path, str] = {}

    def same_rows(node: PlanNode) -> bool:
        if node.path in planned.served:
            return True
        known = planned.operators.get(node.path)
        if known is None:
            return False
        fingerprint, op = known
        if node.path not in above:
            return node.fingerprint == fingerprint
        if node.op != op or len(node.children) != children[node.path]:
            return False
        # every child is checked (no short cut): each stand-in below is recorded too
        if all([same_rows(child) for child in node.children]):
            found[node.path] = fingerprint
            return True
        return False

    same_rows(executed)
    result = planned.operators.get(())
    if result is not None and () not in planned.served:
        # whatever Spark made of the plan with reads in it (a filter above a read is pushed
        # into it, projections merged), it returns the result's rows
        found[()] = result[0]
    return found
