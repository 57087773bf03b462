"""Decide: the session's settings and learned rates handed to the pure caching decisions,
and every operator's decision turned into the query's record."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from criss.planner.match import Match
from criss.planner.serve import ServedReuses
from criss.planner.spark_cache import builds_spark_cache_in_action, computes_in_action
from criss.planner.workspace import Workspace
from criss.policies.decisions import (
    IN_ACTION_BUILD_SHARE,
    CachingRules,
    QueryFacts,
    decide_caching,
)
from criss.policies.first_sight import estimated_result_size, expected_result_repeats
from criss.policies.lifting import RolledUpResult, decide_rolled_up_result
from criss.policies.reasons import CACHE, REUSE, Decision
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import result_node, storable
from criss.qtree.subsume import describe_derivation
from criss.records import OperatorRecord, OperatorStats

if TYPE_CHECKING:
    from criss.engine import CrissSession

#: Where an operator sits in its query's tree: child indices from the root.
OperatorPath = tuple[int, ...]


def caching_rules(session: CrissSession) -> CachingRules:
    options = session.options
    return CachingRules(
        policy=session.policy,
        # the paper chooses what to cache assuming the worst case: it will sit on disk
        disk_bandwidth=session.disk_bandwidth,
        start_time=session.qtree.start_time,
        scan_rate=session.learning.scan_rate,
        stage_seconds=session.learning.stage_seconds,
        result_ratio=session.learning.result_ratio,
        min_ref=options.min_ref,
        min_texec=options.min_texec,
        eager_results=options.eager_results,
        results_only=options.reuse_scope == "results",
        expected_repeats=session.learning.expected_repeats,
        first_sight_seconds=session.learning.first_sight_seconds,
        write_bandwidth=session.learning.write_bandwidth,
        read_bandwidth=session.read_bandwidth,
        in_action_build_share=IN_ACTION_BUILD_SHARE
        if builds_spark_cache_in_action(session)
        else 0.0,
        # only where the user's action computes it: never a job of Criss's own on a guess
        eager_parameter_free=options.eager_results and computes_in_action(session),
        expected_parameter_free_reuses=session.learning.expected_parameter_free_reuses,
        new_values_share=session.learning.new_values_share,
        base_share=options.base_share,
        reread_share=session.learning.reread_share,
        expected_rereads=session.learning.expected_rereads,
        base_read_share=session.learning.base_read_share,
        expected_base_reads=session.learning.expected_base_reads,
    )


def decide_operators(
    matched: Match, served: ServedReuses, rules: CachingRules
) -> dict[OperatorPath, Decision]:
    """A decision for every operator outside the served subtrees; served ones reuse."""
    free = [node.path for node in matched.parameter_free]
    facts = QueryFacts(
        matched.stats,
        set(served),
        matched.table_rows,
        free,
        matched.templates,
        matched.recurrences,
    )
    decisions = decide_caching(matched.tree, facts, rules)
    for path, (reuse, _) in served.items():
        decisions[path] = Decision(REUSE, "cached_entry", {"rule": reuse.rule})
    return decisions


def rolled_up_result(work: Workspace, served: ServedReuses, rules: CachingRules) -> PlanNode | None:
    """The query's result to cache as itself, where the cache serves the whole result by
    rolling up a finer cached result and its repeats would pay for it (else None): they
    would roll it up again (criss.policies.lifting.decide_rolled_up_result, kept in the
    record's ``lifts``). Only where first-seen results are cached and the user's action
    computes it into Spark's cache, over the roll-up it runs anyway."""
    matched = work.matched
    result = result_node(matched.tree)
    found = served.get(result.path)
    # (a finer result the action itself builds, as it lifts it, is not written yet)
    if found is None or found[0].rule != "aggregate-rollup" or found[1].by_action:
        return None
    if not rules.eager_results or not builds_spark_cache_in_action(work.session):
        return None
    seen = matched.observations.get(result.fingerprint)
    if seen is None or result.uncacheable or not storable(result):
        return None
    repeats, _ = expected_result_repeats(
        rules.expected_repeats, matched.recurrences.get(result.fingerprint)
    )
    source_bytes = found[1].bytes_read
    # the serve phase read the finer result (on the driver, or its files' listing)
    read = work.record.phase_seconds.get("serve", 0.0)
    facts = RolledUpResult(
        ref=seen.stats.ref,
        expected_repeats=repeats,
        stage_seconds=rules.stage_seconds,
        source_seconds=max(read, source_bytes / rules.load_bandwidth),
        result_bytes=estimated_result_size(result, source_bytes, 1.0),
        bandwidth=rules.load_bandwidth,
        write_bandwidth=rules.store_bandwidth,
        first_sight_seconds=rules.first_sight_seconds,
    )
    decision = decide_rolled_up_result(facts)
    work.record.note_weighed(result, decision, "result")
    return result if decision.action == CACHE else None


def learn_recurrences(session: CrissSession, matched: Match) -> None:
    """Count whether this query's result had been seen before; whether, its template seen
    before, it came under other values; and if it is new, whether each of its
    parameter-free aggregates had been seen: the expected repeats of a first-seen result
    and the expected reuses of a first-seen parameter-free aggregate (the eager decisions)
    come from them."""
    result = result_node(matched.tree)
    seen = matched.observations.get(result.fingerprint)
    if seen is None or not storable(result) or result.uncacheable:
        return
    repeated = seen.stats.ref > 1
    session.learning.learn_repeat(repeated)
    if repeated or result.fingerprint in matched.recurrences:
        session.learning.learn_template_return(new_values=not repeated)
    if repeated:
        return  # a repeat's aggregates come back with it, not in another statement
    for node in matched.parameter_free:
        found = matched.observations.get(node.fingerprint)
        if found is not None and not node.uncacheable:
            session.learning.learn_parameter_free(found.stats.ref > 1)


def learn_rereads(
    session: CrissSession,
    matched: Match,
    decisions: dict[OperatorPath, Decision],
    served: ServedReuses,
) -> None:
    """Count which measured operators under the result this query cached by their benefit,
    which shared bases, and which entries it read: how often each is read again is
    measured."""
    result = result_node(matched.tree).path

    def cached(reason: str) -> list[str]:
        return [
            matched.tree.at(path).fingerprint
            for path, decision in decisions.items()
            if decision.reason == reason and path != result
        ]

    read = [reuse.fingerprint for reuse, _ in served.values()]
    session.learning.learn_rereads(cached("largest_benefit"), read)
    session.learning.learn_base_reads(cached("shared_base"), read)


def chosen_paths(decisions: dict[OperatorPath, Decision]) -> list[OperatorPath]:
    """Paths to cache, deepest first: a lower result is read by the job writing a higher one."""
    return sorted((p for p, d in decisions.items() if d.action == CACHE), key=lambda p: -len(p))


def operator_records(
    matched: Match,
    decisions: dict[OperatorPath, Decision],
    served: ServedReuses,
    rules: CachingRules,
    counters: Counter,
    dry_run: bool,
) -> list[OperatorRecord]:
    """One record per decided operator, top-down, and the query's counters of them."""
    records = []
    for node in matched.tree.walk():
        decision = decisions.get(node.path)
        if decision is None:  # inside a served subtree
            continue
        seen = matched.observations.get(node.fingerprint)
        stats = seen.stats if seen else None
        reuse, counts = served.get(node.path, (None, None))
        unread = matched.unread.get(node.path)
        records.append(
            OperatorRecord(
                path=node.path,
                op=node.op,
                fingerprint=node.fingerprint,
                decision=decision,
                matched=bool(seen and seen.matched),
                looked_up=node.uncacheable is None,
                entry=reuse.fingerprint if reuse else None,
                rule=reuse.rule if reuse else None,
                derivation=(
                    describe_derivation(reuse.derivation)
                    if reuse is not None and reuse.derivation is not None
                    else None
                ),
                served=counts,
                stats=None if stats is None else _stats(stats),
                benefit=rules.benefit(stats) if stats is not None and stats.has_stats else None,
                unread=(
                    None
                    if unread is None
                    else {"entry": unread[0], "texec": unread[1], "min_texec": rules.min_texec}
                ),
            )
        )
        _count(records[-1], counters, dry_run)
    return records


def _stats(stats) -> OperatorStats:
    return OperatorStats(stats.ref, stats.texec, stats.size_bytes, stats.rows, stats.stats_source)


def _count(record: OperatorRecord, counters: Counter, dry_run: bool) -> None:
    counters["operators_seen"] += 1
    counters["operators_matched"] += record.matched
    if record.reused:
        if record.rule != "exact":
            counters[f"rewrites_{record.rule.replace('-', '_')}"] += 1
        counters["operators_reused"] += 1
        counters["partitions_reused"] += record.served.reused
        counters["bytes_read"] += record.served.bytes_read
    elif record.cached:
        counters["operators_cached"] += dry_run  # else counted when written
        if record.decision.reason == "eager_parameter_free":
            counters["parameter_free_cached_on_first_sight"] += 1
        elif record.decision.reason == "shared_base":
            counters["shared_bases_cached"] += 1
    elif record.decision.reason == "base_rarely_read":
        counters["shared_bases_declined"] += 1
