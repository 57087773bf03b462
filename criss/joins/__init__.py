"""Join optimizations from the seed papers, chosen per join from measured statistics.

Each optimization is a :class:`JoinOptimization`: given one query's :class:`JoinPlan` it
returns replacement DataFrames for the joins it improves, and a :class:`JoinChoice` for
every join it considered (chosen or not, and why), which ``cs.explain()`` shows. They run
in ``OPTIMIZATIONS`` order before Criss matches the query against the QTree, so cached
operators are computed with the improved joins; each can be switched off by its option.

The pattern detection lives in ``qtree.joins`` (pure functions over plain expression
trees), the cost decisions in ``policies.joins`` (numbers in, decisions out); modules here
only build DataFrames with the PySpark API over the bridge's join inputs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.bridge import JoinPlan, JoinSite
    from criss.engine import CrissSession
    from qtree.tree import NodeStats

log = logging.getLogger("criss.joins")


@dataclass
class JoinChoice:
    """What one optimization decided for one join of one query."""

    optimization: str
    path: tuple[int, ...]
    join: str
    chosen: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        verdict = "APPLIED" if self.chosen else "not applied"
        return f"{self.optimization} {verdict} at {self.join[:70]}: {self.reason}"


class JoinOptimization(Protocol):
    """One optimization: ``name`` is also the option that switches it off."""

    name: str

    def apply(
        self, plan: JoinPlan, site: JoinSite, context: JoinContext
    ) -> tuple[DataFrame | None, JoinChoice | None]:
        """A replacement for ``site`` (or None) and the choice to report (or None if the
        join is not of this optimization's kind)."""
        ...


@dataclass(frozen=True)
class SideFacts:
    """A join input's fingerprint (the QTree's key for its result: plan + input files) and
    the statistics the QTree has measured for it, if any."""

    fingerprint: str
    stats: NodeStats | None

    @property
    def rows(self) -> int | None:
        return self.stats.rows if self.stats else None

    @property
    def size_bytes(self) -> int | None:
        return self.stats.size_bytes if self.stats else None


@dataclass
class JoinContext:
    """What an optimization may use besides the plan: the session (its QTree statistics,
    options, Spark) and the counters of the query being planned."""

    session: CrissSession
    counters: Any

    def side_facts(self, plan: JoinPlan, path: tuple[int, ...], which: str) -> SideFacts:
        """Fingerprint and measured statistics of one input of the join at ``path``.

        The fingerprint changes whenever the input's files change, so artifacts keyed by
        it (key sets, filters, indexes, measured selectivities) are never served stale.
        """
        from qtree import canonicalize, fingerprint_tree

        session = self.session
        captured = session.bridge.capture(plan.side(path, which))
        tree = fingerprint_tree(canonicalize(captured.tree, session._rules))
        return SideFacts(tree.fingerprint, session.qtree.get(tree.fingerprint))


def _registry() -> tuple[JoinOptimization, ...]:
    """Optimizations in the order they are tried on each join (the first that applies wins)."""
    from .prefilter import SemiPrefilter
    from .runtime import RuntimeFilters

    # Runtime (LIP) filters first: at a star's lowest join they include the prefilter's.
    return (RuntimeFilters(), SemiPrefilter())


class JoinOptimizer:
    """Applies the enabled optimizations to every join of a query, innermost joins first."""

    def __init__(self, session: CrissSession) -> None:
        self.session = session
        self.optimizations = tuple(o for o in _registry() if getattr(session.options, o.name, True))

    def optimize(self, df: DataFrame, counters: Any) -> tuple[DataFrame, list[JoinChoice]]:
        if not self.optimizations:
            return df, []
        plan = self.session.bridge.join_plan(df)
        if not plan.sites:
            return df, []
        context = JoinContext(self.session, counters)
        choices: list[JoinChoice] = []
        for site in sorted(plan.sites, key=lambda s: -len(s.path)):  # innermost first
            for optimization in self.optimizations:
                replacement, choice = optimization.apply(plan, site, context)
                if choice is not None:
                    choices.append(choice)
                if replacement is not None:
                    plan.put(site.path, replacement)
                    counters[f"joins_{optimization.name}"] += 1
                    break
        return (plan.result() if plan.replaced else df), choices
