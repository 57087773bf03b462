"""Join optimizations from the seed papers, chosen per join from measured statistics.

Each optimization is a :class:`JoinOptimization`: given one query's :class:`JoinPlan` it
returns replacement DataFrames for the joins it improves, and a :class:`JoinChoice` for
every join it considered (chosen or not, and why), which ``cs.explain()`` shows. They run
in ``_registry()`` order on the query's first capture, before it is matched against the
QTree (joins inside a subtree the cache already serves are skipped), so cached operators
are computed with the improved joins; each can be switched off by its option.

The pattern detection lives in ``qtree.joins`` (pure functions over plain expression
trees), the cost decisions in ``policies.joins`` (numbers in, decisions out); modules here
only build DataFrames with the PySpark API over the bridge's join inputs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from criss.qtree.plan import within
from criss.qtree.star import key_source
from criss.recent import RecentItems

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.bridge import CapturedPlan, JoinPlan, JoinSite
    from criss.engine import CrissSession
    from criss.qtree.plan import PlanNode
    from criss.qtree.tree import NodeStats

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


def key_counts_meta(fingerprint: str) -> str:
    """The QTree meta key under which the key counts of the join inputs whose key source
    is ``fingerprint`` are kept (``prefilter.measure_keys``)."""
    return f"joins.keys:{fingerprint}"


class Verdicts:
    """What the optimizations share: their verdict at one join as a JoinChoice."""

    name: str

    def _choice(
        self, site: JoinSite, chosen: bool, reason: str, details: dict[str, Any] | None = None
    ) -> JoinChoice:
        return JoinChoice(self.name, site.path, site.label, chosen, reason, details or {})


class JoinOptimization(Protocol):
    """One optimization: ``name`` is also the option that switches it off;
    ``needs_key_counts``: it applies only where join inputs' key counts are measured."""

    name: str
    needs_key_counts: bool

    def apply(
        self, plan: JoinPlan, site: JoinSite, context: JoinContext
    ) -> tuple[DataFrame | None, JoinChoice | None]:
        """A replacement for ``site`` (or None) and the choice to report (or None if the
        join is not of this optimization's kind)."""
        ...


@dataclass(frozen=True)
class SideFacts:
    """A join input as the QTree knows it: its canonical subtree, fingerprint (plan + input
    files) and the statistics measured for it, if any."""

    node: PlanNode
    stats: NodeStats | None

    @property
    def fingerprint(self) -> str:
        return self.node.fingerprint

    @property
    def rows(self) -> int | None:
        return self.stats.rows if self.stats else None

    @property
    def size_bytes(self) -> int | None:
        return self.stats.size_bytes if self.stats else None

    @property
    def deterministic(self) -> bool:
        return all(n.deterministic for n in self.node.walk())

    @property
    def earlier_queries(self) -> int:
        """How many earlier queries computed this input (its QTree ref count)."""
        return self.stats.ref if self.stats else 0


@dataclass
class JoinContext:
    """What an optimization may use besides the plan: the session (its QTree statistics,
    options, Spark), the counters of the query being planned and its canonical tree."""

    session: CrissSession
    counters: Any
    #: The query's canonical, fingerprinted plan (same paths as the JoinPlan's).
    tree: PlanNode | None = None
    #: Spark settings read while planning this query (each read is a JVM round trip).
    _settings: dict[str, str] = field(default_factory=dict, repr=False)
    #: Join inputs' facts read from ``tree`` (by path) while planning this query.
    _sides: dict[tuple[int, ...], SideFacts] = field(default_factory=dict, repr=False)

    def setting(self, key: str, default: str) -> str:
        """Spark's runtime value of ``key``, read once per query."""
        if key not in self._settings:
            self._settings[key] = str(self.session.spark.conf.get(key, default))
        return self._settings[key]

    def broadcast_threshold(self) -> int:
        """Spark's ``autoBroadcastJoinThreshold`` in bytes (typed by Spark), read once."""
        key = "spark.sql.autoBroadcastJoinThreshold"
        if key not in self._settings:
            self._settings[key] = str(self.session.bridge.broadcast_threshold())
        return int(self._settings[key])

    def side_facts(self, plan: JoinPlan, path: tuple[int, ...], which: str) -> SideFacts:
        """Canonical subtree, fingerprint and QTree statistics of one input of a join.

        The fingerprint changes whenever the input's files change, so artifacts keyed by
        it (key sets, filters, indexes, measured selectivities) are never served stale.
        Read from the query's own capture; an input under a replaced join is captured anew.
        """
        session = self.session
        child = path + ((0,) if which == "left" else (1,))
        rewritten = any(p[: len(child)] == child for p in plan.replaced)
        if self.tree is not None and not rewritten:
            if child not in self._sides:  # asked by each optimization at each join
                node = self.tree.at(child)
                self._sides[child] = SideFacts(node, session.qtree.get(node.fingerprint))
            return self._sides[child]
        captured = session.bridge.capture(plan.side(path, which))
        node = session.canonical_tree(captured)
        return SideFacts(node, session.qtree.get(node.fingerprint))

    def may_measure(self, facts: SideFacts) -> bool:
        """Whether an input recurs enough to spend a measurement job on it.

        Like the paper's statistics collection for operators without statistics: from the
        ``min_ref``-th query computing it (measurements are kept per fingerprint), so a
        stream of one-off queries pays no measurement jobs.
        """
        return facts.earlier_queries + 1 >= self.session.options.min_ref


def _registry() -> tuple[JoinOptimization, ...]:
    """Optimizations in the order they are tried on each join (the first that applies wins)."""
    from criss.joins.bloom import BloomJoin
    from criss.joins.prefilter import SemiPrefilter
    from criss.joins.range import RangeJoin
    from criss.joins.runtime import RuntimeFilters

    # A range join has no equi keys, the filters need them: at most one kind applies.
    # Runtime (LIP) filters before the prefilter: at a star's lowest join they include it.
    # The Bloom join after the prefilter: it is only tried where the exact key set declined.
    return (RangeJoin(), RuntimeFilters(), SemiPrefilter(), BloomJoin())


def _open_joins(tree: PlanNode, covered: Iterable[tuple[int, ...]]) -> list[PlanNode]:
    """The joins of ``tree`` outside every subtree in ``covered``."""
    return [node for node in tree.walk() if node.op == "Join" and not within(node.path, covered)]


class JoinOptimizer:
    """Applies the enabled optimizations to every join of a query, innermost joins first."""

    def __init__(self, session: CrissSession) -> None:
        self.session = session
        #: Artifacts (indexes, filters) kept for the session's later queries, keyed by what
        #: they were built from (input fingerprints change with the input's files, so a
        #: stale artifact is never found); evicted ones are released.
        self.artifacts = RecentItems(limit=8)
        self.optimizations = tuple(o for o in _registry() if getattr(session.options, o.name, True))

    def optimize(
        self,
        df: DataFrame,
        counters: Any,
        captured: CapturedPlan,
        tree: PlanNode,
        covered: list[tuple[int, ...]] = (),
    ) -> tuple[DataFrame, list[JoinChoice]]:
        """``df`` with its joins improved (or ``df`` itself), and every choice made.

        ``captured``/``tree`` are the query's capture and canonical tree: join inputs'
        fingerprints and statistics come from them instead of capturing each input again.
        Joins under a path in ``covered`` (subtrees the cache serves) are left alone.
        """
        joins = _open_joins(tree, covered) if self.optimizations else []
        if not joins:
            return df, []  # no JVM walk for a query the cache serves whole
        optimizations, choices = self.optimizations, []
        if not self._key_counts_possible(joins):
            optimizations = tuple(o for o in optimizations if not o.needs_key_counts)
            if len(optimizations) < len(self.optimizations):
                counters["joins_without_key_counts"] += 1
                choices.append(JoinChoice("key_filters", (), "every join", False, self._unknown))
        if not optimizations:
            return df, choices
        plan = self.session.bridge.join_plan(df, captured)
        if not plan.sites:
            return df, choices
        context = JoinContext(self.session, counters, tree)
        for site in sorted(plan.sites, key=lambda s: -len(s.path)):  # innermost first
            if within(site.path, covered):
                continue
            for optimization in optimizations:
                replacement, choice = optimization.apply(plan, site, context)
                if choice is not None:
                    choices.append(choice)
                if replacement is not None:
                    plan.put(site.path, replacement)
                    counters[f"joins_{optimization.name}"] += 1
                    break
        return (plan.result() if plan.replaced else df), choices

    @property
    def _unknown(self) -> str:
        return (
            "not considered: no join input has measured key counts, and none was computed "
            f"by {self.session.options.min_ref - 1} or more earlier queries (min_ref="
            f"{self.session.options.min_ref}) to be measured now"
        )

    def _key_counts_possible(self, joins: list[PlanNode]) -> bool:
        """Whether a key filter (semi prefilter, Bloom join, runtime filters) could be
        decided at one of ``joins`` (those not covered): one of their inputs has
        its key counts measured, or recurs enough to have them measured
        (``JoinContext.may_measure``). Each of them stops at an input without either, but
        only after reading the join's condition, columns and size estimates from the JVM:
        ~25 ms of a TPC-DS query's first sight, where nothing had been measured.
        """
        inputs = [child for join in joins for child in join.children]
        qtree, min_ref = self.session.qtree, self.session.options.min_ref
        if min_ref <= 1:
            return bool(inputs)  # an input never seen before may be measured too
        known = qtree.get_many(child.fingerprint for child in inputs)
        if any(known[c.fingerprint].ref + 1 >= min_ref for c in inputs if c.fingerprint in known):
            return True
        return bool(qtree.meta_keys(key_counts_meta(key_source(c).fingerprint) for c in inputs))
