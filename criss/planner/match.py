"""Match: what the QTree and the cache hold for one query's canonical tree.

:class:`CacheView` looks entries up once per query; :func:`match` observes the query in
the QTree (references, recency) and finds the highest operators the cache can serve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from criss.qtree.fingerprint import TEMPLATE
from criss.qtree.parameters import parameter_free_intermediates
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import (
    Relative,
    Reuse,
    SortKey,
    copied_relations,
    final_ordering,
    plan_reuse,
    result_node,
    storable,
)
from criss.qtree.subsume import Shape
from criss.qtree.templates import TemplateRecurrence, TemplateStats
from criss.qtree.tree import Observation, QTree
from criss.storage.catalog import EntryRecord
from criss.tables import table_rows

if TYPE_CHECKING:
    from criss.engine import CrissSession

#: QTree meta key prefix: result fingerprint of a query -> that of its join-optimized form.
REWRITTEN = "joins.rewritten:"
#: Up to this many cache entries, the rewrite rules read the keys of all of them once per
#: match (the entries, then their operators in chunks of 500) instead of one lookup per
#: operator of the query; beyond it, reading every key could cost more than it spares.
REWRITE_PREFILTER_ENTRIES = 2_000


class CacheView:
    """The cache's entries as one query looked them up (each entry read once)."""

    def __init__(self, session: CrissSession) -> None:
        self.session = session
        self.entries: dict[str, EntryRecord] = {}
        #: Operators the last ``reuses`` did not read back, measured cheaper than
        #: ``min_texec``: path -> (the entry's fingerprint, its measured Texec).
        self.cheap: dict[tuple[int, ...], tuple[str, float]] = {}

    def is_cached(self, fingerprint: str) -> bool:
        if fingerprint in self.entries:
            return True
        entry = self.session.cache.lookup(fingerprint)
        if entry is not None:
            self.entries[fingerprint] = entry
        return entry is not None

    def complete(self, fingerprint: str) -> bool:
        return self.is_cached(fingerprint) and self.entries[fingerprint].complete

    def cached_relatives(self, key: str, among: set[str] | None = None) -> list[Relative]:
        """Complete cached operators sharing relaxed ``key`` (of ``among``, the cached
        operators, when known: the others are not looked up)."""
        # a relative's plan is not in this query, so its missing partitions can't be rebuilt
        return [
            r
            for r in self.session.qtree.relatives(key)
            if (among is None or r.fingerprint in among) and self.complete(r.fingerprint)
        ]

    def cached_subsumers(self, key: str, among: set[str] | None = None) -> list[tuple[str, Shape]]:
        """Complete cached results sharing subsumption ``key``, smallest first (the fewest
        rows to filter or aggregate again); of ``among``, the cached operators, when known:
        a template's uncached variants (many, on a stream of drifting parameters) are
        neither decoded nor looked up."""
        found = [s for s in self.session.qtree.subsumers(key, among=among) if self.complete(s[0])]
        return sorted(found, key=lambda s: self.entries[s[0]].bytes)

    def reuses(self, tree: PlanNode) -> list[Reuse]:
        """The highest operators of ``tree`` the cache can serve (none nested)."""
        rewritten = self._rewritten_result(tree)
        if rewritten is not None:
            return [rewritten]
        result = result_node(tree).path
        min_texec = self.session.options.min_texec
        qtree = self.session.qtree
        in_tree = {n.fingerprint for n in tree.walk()}
        known = qtree.get_many(in_tree)  # one lookup for the tree, not one per operator

        self.cheap = {}

        def worth_reading(node: PlanNode, fingerprint: str) -> bool:
            # a query's whole result always is: serving it saves Spark's per-query cost too
            if node.path == result:
                return True
            stats = known.get(fingerprint) if fingerprint in in_tree else qtree.get(fingerprint)
            if stats is None or stats.texec is None or stats.texec >= min_texec:
                return True
            self.cheap[node.path] = (fingerprint, stats.texec)
            return False

        cached, relatives, subsumers = self._lookups()
        found = plan_reuse(tree, cached, relatives, subsumers, worth_reading)
        if self.session.options.reuse_scope == "results":  # an exact-result cache
            found = [r for r in found if r.path == result and r.rule == "exact"]
        return found

    def _lookups(
        self,
    ) -> tuple[
        Callable[[str], bool],
        Callable[[str], list[Relative]],
        Callable[[str], list[tuple[str, Shape]]],
    ]:
        """How the rules find an operator's entry, and cached relatives and subsumers of a
        key. They can only be among cached operators: their keys, in two lookups, spare the
        lookup per operator of a query nothing can serve, while the cache holds few enough
        entries for reading their keys to cost less than that."""
        cached = self.session.cache.catalog.entry_keys(limit=REWRITE_PREFILTER_ENTRIES)
        if cached is None:
            return self.is_cached, self.cached_relatives, self.cached_subsumers
        relaxed, subsume = self.session.qtree.rewrite_keys(cached)
        among = set(cached)

        def is_cached(fingerprint: str) -> bool:
            return fingerprint in among and self.is_cached(fingerprint)

        def relatives(key: str) -> list[Relative]:
            return self.cached_relatives(key, among) if key in relaxed else []

        def subsumers(key: str) -> list[tuple[str, Shape]]:
            return self.cached_subsumers(key, among) if key in subsume else []

        return is_cached, relatives, subsumers

    def _rewritten_result(self, tree: PlanNode) -> Reuse | None:
        """The cached result of this query as the join optimizations rewrote it earlier,
        so a repeat reads it without optimizing (and measuring) its joins again."""
        result = result_node(tree)
        if not storable(result):
            return None
        rewritten = self.session.qtree.meta(REWRITTEN + result.fingerprint)
        # a partial entry's partitions follow the other plan: only a complete one serves
        if rewritten is None or not self.complete(rewritten):
            return None
        return Reuse(result.path, rewritten, "join-rewrite")


@dataclass(frozen=True)
class Match:
    """One query against the QTree and the cache: a snapshot the later phases read."""

    tree: PlanNode
    observations: dict[str, Observation]
    reuses: list[Reuse]
    #: The final ORDER BY over the query's result: the Sort's path and keys.
    ordering: tuple[tuple[int, ...], tuple[SortKey, ...]] | None
    #: Each copy of tables (criss.qtree.rewrite.copied_relations), with the rows of the
    #: tables it copies where the copy is measured (Parquet footers; else None).
    table_rows: dict[tuple[int, ...], int | None]
    #: Operators a cached entry could serve that are computed instead, measured cheaper
    #: than ``min_texec``: path -> (the entry, its measured Texec).
    unread: dict[tuple[int, ...], tuple[str, float]] = field(default_factory=dict)
    #: The highest parameter-free aggregates under the result (criss.qtree.parameters).
    parameter_free: tuple[PlanNode, ...] = ()
    #: What the operators of each unmeasured one's template measured under other values,
    #: by the unmeasured one's fingerprint (only those with any measured).
    templates: dict[str, TemplateStats] = field(default_factory=dict)
    #: How the result's template recurred under other values, by its fingerprint (when the
    #: result was never measured and its template was seen under other values).
    recurrences: dict[str, TemplateRecurrence] = field(default_factory=dict)

    @property
    def stats(self):
        return {fp: o.stats for fp, o in self.observations.items()}


def match(session: CrissSession, tree: PlanNode, view: CacheView, *, record: bool) -> Match:
    """Look ``tree`` up in the QTree (``record``: count the references; else only peek)."""
    qtree = session.qtree
    observations = qtree.observe(tree) if record else qtree.peek(tree)
    reuses = view.reuses(tree)
    templates, recurrences = _template_facts(qtree, tree, observations)
    return Match(
        tree=tree,
        observations=observations,
        reuses=reuses,
        ordering=final_ordering(tree),
        table_rows=_copied_table_rows(tree, observations, session.bridge.broadcast_threshold()),
        unread=_unread(session, view.cheap),
        parameter_free=tuple(parameter_free_intermediates(tree)),
        templates=templates,
        recurrences=recurrences,
    )


def _template_facts(
    qtree: QTree, tree: PlanNode, observations: dict[str, Observation]
) -> tuple[dict[str, TemplateStats], dict[str, TemplateRecurrence]]:
    """For each storable operator of ``tree`` never measured, what the operators of its
    template measured under other parameter values took (one lookup for the tree, only
    where any was measured); for the query's result, if never measured, how its template's
    queries under other values recurred (the repeats a first sight of it expects). Both by
    the operator's fingerprint."""
    keys = {}
    for node in tree.walk():
        seen = observations.get(node.fingerprint)
        if seen is not None and not seen.stats.has_stats and storable(node):
            key = node.extra.get(TEMPLATE)
            if key is not None:
                keys[node.fingerprint] = key
    if not keys:
        return {}, {}
    found = qtree.template_statistics(keys.values())
    templates = {fingerprint: found[key] for fingerprint, key in keys.items() if key in found}
    result = result_node(tree).fingerprint
    recurrence = qtree.template_recurrence(result, keys[result]) if result in keys else None
    return templates, {} if recurrence is None else {result: recurrence}


def _unread(
    session: CrissSession, cheap: dict[tuple[int, ...], tuple[str, float]]
) -> dict[tuple[int, ...], tuple[str, float]]:
    """The cheap operators whose entry exists: ``explain`` names the read not made."""
    held = session.cache.catalog.keys_held({fingerprint for fingerprint, _ in cheap.values()})
    return {path: found for path, found in cheap.items() if found[0] in held}


def stale_relations(session: CrissSession, tree: PlanNode) -> list[str]:
    """Leaves of ``tree`` whose input files changed since the QTree saw them."""
    relations = {n.relation["key"]: n.relation["version"] for n in tree.leaves() if n.relation}
    return session.qtree.stale_relations(relations)


def _copied_table_rows(
    tree: PlanNode, observations: dict[str, Observation], broadcast_bytes: int
) -> dict[tuple[int, ...], int | None]:
    """Every copy of tables (criss.qtree.rewrite.copied_relations), with the rows of the
    tables it copies where the copy is measured (a measured copy is judged by the share of
    them it keeps; an unmeasured one only waits, so no footer is read for it: None)."""
    rows = {}
    for node in tree.walk():
        copied = copied_relations(node, broadcast_bytes)
        if copied is None:
            continue
        seen = observations.get(node.fingerprint)
        measured = seen is not None and seen.stats.has_stats
        rows[node.path] = _total_rows(copied) if measured else None
    return rows


def _total_rows(relations: tuple[PlanNode, ...]) -> int | None:
    counts = [table_rows(relation.relation) for relation in relations]
    return None if None in counts else sum(counts)
