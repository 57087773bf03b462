"""What to cache in one query, decided by pure functions that return values with reasons.

Every operator outside a reused subtree gets one :class:`Decision`: cache it or not, a
reason code, and the numbers the decision used (with where they came from). ``explain``,
the query log (as JSON), ``criss stats`` and the dashboard all read these values, and
:func:`describe` renders a reason in the same words everywhere.

The rules are the paper's (§1.3): per branch of the plan, the operator with the largest
benefit ``recency × (ref × (Texec − size/bw) − size/bw)``, judged with the disk tier's
bandwidth (the worst case) for each read, and for storing the result once with the
bandwidth Criss's own writes of results were measured to reach (from the action's cache
to the tier's files: encoding included, which the medium's bandwidth does not show), once
one was measured. Statistics come from executions (every action Spark ran, the
user's own included) or from writing the result. An operator never measured gets an
estimated Texec and size: where operators of its template (the same operators with other
literal values: ``criss.qtree.fingerprint``) were measured, the medians of theirs; else
its stages × the learned seconds per stage (Spark's fixed cost) plus its input bytes at
the learned input rate, and a size from those bytes. If that Texec reaches ``min_texec``
it is cached to measure it once it recurs (``min_ref``). A first-seen query's result
(``eager_results``) is not held to ``min_texec`` (the job that writes it is the query's own
computation, not an extra one): it is cached when the benefit model says the repeats
expected of it would pay for it and for what caching on first sight adds to the query's
time: the planning that prepares Spark's cache of it, measured in the home (and under an
``ORDER BY … LIMIT``, building Spark's cache of rows the action would never have
materialized, as for an operator under the result). The expected
repeats are measured: how often a query's result had been seen before, over the home's
recent queries (an analyst re-running queries; a stream of ever new parameters). The
result's size is estimated from the learned result bytes per input byte, or bounded by its
shape where that bounds its rows (a global aggregate is one row, a limit at most its value).
Those first-sight valuations are :mod:`criss.policies.first_sight`'s. A measured operator
under the result that the user's action would cache is held, besides, to the reads such
operators were measured to get in the home (``rarely_read_again``): the references that
make its benefit do not foretell them where statements share a subtree once and move on.
The reasons are worded in :mod:`criss.policies.reasons`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from criss.policies.benefit import BenefitModel, transfer_seconds
from criss.policies.first_sight import (
    Verdict,
    eager_verdict,
    parameter_free_verdict,
)
from criss.policies.reasons import (
    BYTES_SOURCE,
    CACHE,
    ESTIMATE,
    MEASURED,
    SKIP,
    TEMPLATE_SOURCE,
    Decision,
)
from criss.policies.selection import (
    Candidate,
    best_per_branch,
    collect_score,
    keeps_most_rows,
    measured_score,
    shared_bases,
)
from criss.qtree.canonical import ROW_LIMITS
from criss.qtree.plan import PlanNode, within
from criss.qtree.rewrite import copy_kind, result_node, storable, table_copy, unprojected_scan
from criss.qtree.templates import TemplateRecurrence, TemplateStats
from criss.qtree.tree import NodeStats

#: Operators whose physical form ends a stage (an exchange below or above them).
STAGE_BOUNDARIES = frozenset(
    {"Join", "Aggregate", "Window", "Sort", "Repartition", "RepartitionByExpression"}
)
#: Seconds caching a first-seen result in the user's action adds to the query, assumed
#: until a home measured its own (``criss.planner.learning``: the planning that prepares
#: Spark's cache of it). Measured side by side with the same first sights planned without
#: caching (experiments/results/issue22/session57/): +10.8 ms of planning a first sight at
#: SF 0.05 (88 first sights) and +12.7 ms at SF 1 (22), and no more in the actions than
#: the spread (-0.5 and -6 ms a query): a fixed cost, not a share of Texec (6 % of it was
#: assumed before, measured on the path that computed results in a job of Criss's own).
FIRST_SIGHT_SECONDS = 0.012
#: What building Spark's cache of an operator's rows in the user's action adds to that
#: action, as a share of the time writing them to the tier's files takes, for an operator
#: under the query's result (the result's rows are materialized for the user anyway).
#: Measured at SF 1 on the drift streams, seeds 1-3: 20 such operators of eight templates
#: whose size was known, each query against the same statement with only its result cached
#: (the result-cache mode of the same run), added 5.1 s to their actions for 10.0 s of
#: writes; per operator from -0.8 to +0.8 s, noisy (experiments/results/issue20/session20/).
#: Over 25 replays of TPC-H streams (sessions 32-36), first occurrences that cached more
#: than their result added 0.22-0.49 of their background write (median per template with
#: over two such occurrences) over the template's result-only ones; Q10's result under its
#: limit, 0.53 over other results' first occurrences
#: (experiments/results/issue22/session36/first-sight-extras.out).
IN_ACTION_BUILD_SHARE = 0.5
#: What an action takes longer for each operator under its result that it builds Spark's
#: cache of, beside building the rows, as a share of the operator's Texec (Spark computes
#: the cached plan first, as a query stage of its own, and nothing else of the query runs
#: beside it). Measured side by side at SF 1 (experiments/results/issue20/session66/):
#: TPC-H v60 statements caching the subtree they share with their original, against the
#: same statements caching only their result, six templates in two runs: from -0.10 to
#: 1.2 of the subtree's Texec (Q10 twice +0.49 s for 0.41 s, Q21 within the spread for
#: 3 s), median 0.19; in seconds, median 0.20.
IN_ACTION_INTERMEDIATE_SHARE = 0.2


@dataclass(frozen=True)
class CachingRules:
    """The settings and learned rates one query's caching decisions use (plain numbers)."""

    policy: BenefitModel
    disk_bandwidth: float
    start_time: float
    scan_rate: float
    stage_seconds: float = 0.1
    result_ratio: float = 0.01
    min_ref: int = 2
    min_texec: float = 0.2
    eager_results: bool = True
    results_only: bool = False
    #: Repeats a first-seen result can expect, measured over the recent queries.
    expected_repeats: float = 1.0
    #: Seconds caching a first-seen result adds to its query (measured in the home).
    first_sight_seconds: float = FIRST_SIGHT_SECONDS
    #: Bytes per second Criss's writes of results were measured to reach (None: none
    #: measured yet, storing is priced at ``disk_bandwidth`` as reading is).
    write_bandwidth: float | None = None
    #: What building Spark's cache of an operator under the result adds to the user's
    #: action, as a share of writing its rows (0: results are not cached in the action).
    in_action_build_share: float = 0.0
    #: Bytes per second the queries that read cached entries back were measured to read
    #: them at, through the disk's medium (None: none measured yet, reading is priced at
    #: ``disk_bandwidth``, the calibrated one).
    read_bandwidth: float | None = None
    #: Whether a first-seen parameter-free aggregate (criss.qtree.parameters) may be cached
    #: on an estimate, by the user's action, and the reuses by other statements one is
    #: measured to get here.
    eager_parameter_free: bool = False
    expected_parameter_free_reuses: float = 1.0
    #: Share of the recent queries of a template seen before that came under new values
    #: (what ``expected_parameter_free_reuses`` leans on while its own chances are few).
    new_values_share: float = 0.5
    base_share: float = 0.0  # of its benefit a cached operator's base keeps; 0: no base
    #: Share of the measured operators under a result cached here that a later query read,
    #: and the reads one is expected to get from it.
    reread_share: float = 0.5
    expected_rereads: float = 1.0
    #: The same for the shared bases cached here (read only where the operator above them
    #: is not: by a query changed higher up).
    base_read_share: float = 0.5
    expected_base_reads: float = 1.0

    @property
    def load_bandwidth(self) -> float:
        """What reading a result back once is priced at: measured, else the disk's."""
        return self.read_bandwidth or self.disk_bandwidth

    @property
    def read_source(self) -> str:
        return "measured in queries reading the cache" if self.read_bandwidth else "calibrated"

    @property
    def store_bandwidth(self) -> float:
        """What storing a result once is priced at: measured, else the disk's bandwidth."""
        return self.write_bandwidth or self.disk_bandwidth

    def build_bandwidth(self, materialized: bool) -> float | None:
        """What storing an operator is priced at when the user's action builds Spark's
        cache of rows it would not otherwise materialize (under the query's result, or a
        result under a limit); None: storing is writing alone (the result's rows, which
        the action returns, or no cache built in the action)."""
        if materialized or self.in_action_build_share <= 0:
            return None
        return self.store_bandwidth / (1 + self.in_action_build_share)

    def benefit(self, stats: NodeStats, write_bandwidth: float | None = None) -> float:
        return self.benefit_of(
            stats, stats.ref, stats.texec or 0.0, stats.size_bytes or 0, write_bandwidth
        )

    def benefit_of(
        self,
        stats: NodeStats,
        ref: float,
        texec: float,
        size_bytes: float,
        write_bandwidth: float | None = None,
    ) -> float:
        """The benefit model's value of ``stats``; storing at ``write_bandwidth`` where given,
        else at the one measured."""
        recency = max(stats.last_access - self.start_time, 1e-3)
        write_bandwidth = write_bandwidth or self.write_bandwidth
        if write_bandwidth is None and self.read_bandwidth:
            write_bandwidth = self.disk_bandwidth  # a measured read says nothing of writing
        # passed only once measured: a benefit model registered without the keyword works on
        extra = {} if write_bandwidth is None else {"write_bandwidth": write_bandwidth}
        return self.policy.benefit(
            ref=ref,
            texec=texec,
            size_bytes=float(size_bytes),
            bandwidth=self.load_bandwidth,
            recency=recency,
            **extra,
        )


@dataclass(frozen=True)
class QueryFacts:
    """What the match phase knows about one query: QTree statistics by fingerprint, the
    paths served from the cache, the row counts of tables copied by an operator, and the
    paths of its parameter-free aggregates (criss.qtree.parameters)."""

    stats: Mapping[str, NodeStats]
    reused: Collection[tuple[int, ...]]
    table_rows: Mapping[tuple[int, ...], int | None] = field(default_factory=dict)
    parameter_free: Collection[tuple[int, ...]] = ()
    #: What an unmeasured operator's template measured under other values, by fingerprint.
    templates: Mapping[str, TemplateStats] = field(default_factory=dict)
    #: How an unmeasured operator's template recurred under other values, by fingerprint.
    recurrences: Mapping[str, TemplateRecurrence] = field(default_factory=dict)


def decide_caching(
    tree: PlanNode, facts: QueryFacts, rules: CachingRules
) -> dict[tuple[int, ...], Decision]:
    """A decision for every operator outside the reused subtrees (their roots excluded)."""
    result = result_node(tree)
    free = set(facts.parameter_free) if rules.eager_parameter_free else set()
    whole = action_returns_whole(tree, result)
    verdicts = {
        node.path: _verdict(
            node, _Place(node.path == result.path, whole), facts, rules, node.path in free
        )
        for node in _outside(tree, facts.reused)
    }
    if rules.results_only:
        chosen, bases = _whole_result(result, facts), {}
    else:
        chosen, bases = _best_per_branch(tree, result, verdicts, facts, rules)
    return {
        path: _final(path, verdict, chosen, result.path, rules, bases.get(path))
        for path, verdict in verdicts.items()
    }


def action_returns_whole(root: PlanNode, result: PlanNode) -> bool:
    """Whether the user's action receives every row of the query's ``result``: no limit
    between them. Under one (an ``ORDER BY … LIMIT``'s top rows) Spark never materializes
    the rows below it, so building Spark's cache of them in the action costs what it
    costs for an operator under the result."""
    node = root
    for index in result.path:
        if node.op in ROW_LIMITS:
            return False
        node = node.children[index]
    return True


@dataclass(frozen=True)
class _Place:
    """Where an operator sits: the query's result or under it, and whether the user's
    action materializes all of its rows (a result with no limit above it)."""

    is_result: bool
    whole_result_returned: bool

    @property
    def materialized(self) -> bool:
        return self.is_result and self.whole_result_returned


def _verdict(
    node: PlanNode, place: _Place, facts: QueryFacts, rules: CachingRules, free: bool
) -> Verdict:
    def no(reason: str, source: str | None = None, **numbers: Any) -> Verdict:
        return Verdict(None, Decision(SKIP, reason, numbers, source))

    is_result = place.is_result

    if node.uncacheable:
        return no("uncacheable", why=node.uncacheable)
    if rules.results_only and not is_result:
        return no("results_scope")
    if not storable(node):
        return no("not_storable", op=node.op)
    stats = facts.stats.get(node.fingerprint)
    if stats is None:
        return no("not_tracked")
    if stats.has_stats:
        return _measured_verdict(node, place, stats, facts, rules)
    return _unmeasured_verdict(node, place, stats, facts, rules, free)


def _measured_verdict(
    node: PlanNode, place: _Place, stats: NodeStats, facts: QueryFacts, rules: CachingRules
) -> Verdict:
    is_result = place.is_result
    source = stats.stats_source or MEASURED
    table = facts.table_rows.get(node.path)
    if not is_result and node.path in facts.table_rows and keeps_most_rows(stats.rows, table):
        numbers = {"rows": stats.rows, "table_rows": table}
        reason = copy_kind(node) + "_most_rows"
        return Verdict(None, Decision(SKIP, reason, numbers, source))
    if not is_result and stats.texec is not None and stats.texec < rules.min_texec:
        numbers = {"texec": stats.texec, "min_texec": rules.min_texec}
        return Verdict(None, Decision(SKIP, "cheap_to_compute", numbers, source))
    built = rules.build_bandwidth(place.materialized)
    benefit = rules.benefit(stats, built)
    numbers = {
        "benefit": benefit,
        "ref": stats.ref,
        "texec": stats.texec,
        "size_bytes": stats.size_bytes,
        "bandwidth": rules.load_bandwidth,
        "read_source": rules.read_source,
        "write_bandwidth": built or rules.store_bandwidth,
        "in_action_build_share": rules.in_action_build_share if built else 0.0,
    }
    score = measured_score(benefit)
    if score is None:
        return Verdict(None, Decision(SKIP, "no_benefit", numbers, source))
    if not is_result and built is not None:
        rarely = _rarely_read_again(stats, built, numbers, rules)
        if rarely is not None:
            return Verdict(None, Decision(SKIP, "rarely_read_again", rarely, source))
    return Verdict(score, Decision(CACHE, "largest_benefit", numbers, source))


def _rarely_read_again(
    stats: NodeStats, built: float, numbers: dict[str, Any], rules: CachingRules
) -> dict[str, Any] | None:
    """The numbers that veto caching a measured operator under the result by the user's
    action, or None: the reads such operators were measured to get here (not the references
    that made it worth caching in the benefit model) would not save what caching it costs:
    building and writing its rows, and the time the action takes longer for it (a share of
    its Texec)."""
    reads = rules.expected_rereads
    value = _reads_gain(stats.texec or 0.0, stats.size_bytes or 0, built, True, reads, rules)
    if value > 0:
        return None
    return {
        **numbers,
        "expected_rereads": reads,
        "reread_share": rules.reread_share,
        "in_action_seconds": IN_ACTION_INTERMEDIATE_SHARE * (stats.texec or 0.0),
        "expected_gain": value,
    }


def _reads_gain(
    texec: float,
    size_bytes: float,
    store_bandwidth: float | None,
    in_action: bool,
    reads: float,
    rules: CachingRules,
) -> float:
    """Seconds ``reads`` later reads of an operator under the result save, less what caching
    it costs: storing its rows at ``store_bandwidth`` and, where the user's action builds
    Spark's cache of them (``in_action``), the time the action takes longer for it."""
    transfer, store = transfer_seconds(size_bytes, rules.load_bandwidth, store_bandwidth)
    longer = IN_ACTION_INTERMEDIATE_SHARE * texec if in_action else 0.0
    return reads * (texec - transfer) - store - longer


def _base_numbers(numbers: Mapping[str, Any], rules: CachingRules) -> dict[str, Any]:
    """A measured operator's numbers (its verdict's) with what caching it as a shared base
    is expected to gain: the reads the bases cached here were measured to get (a base is
    read only by a query that does not read the operator above it), against what caching
    it costs (:func:`_reads_gain`)."""
    texec, size = numbers.get("texec") or 0.0, numbers.get("size_bytes") or 0
    in_action = bool(numbers.get("in_action_build_share"))
    reads = rules.expected_base_reads
    gain = _reads_gain(texec, size, numbers.get("write_bandwidth"), in_action, reads, rules)
    return {
        **numbers,
        "expected_base_reads": reads,
        "base_read_share": rules.base_read_share,
        "base_share": rules.base_share,
        "in_action_seconds": IN_ACTION_INTERMEDIATE_SHARE * texec if in_action else 0.0,
        "base_gain": gain,
    }


def _unmeasured_verdict(
    node: PlanNode,
    place: _Place,
    stats: NodeStats,
    facts: QueryFacts,
    rules: CachingRules,
    free: bool,
) -> Verdict:
    is_result = place.is_result
    if not is_result and unprojected_scan(node):
        return Verdict(None, Decision(SKIP, "unprojected_scan"))
    if not is_result and table_copy(node):
        return Verdict(None, Decision(SKIP, "table_copy_unmeasured"))
    if not is_result and node.path in facts.table_rows:
        return Verdict(None, Decision(SKIP, copy_kind(node) + "_unmeasured"))
    size, numbers = _estimate(node, facts, rules, is_result)
    numbers = {"ref": stats.ref, "min_ref": rules.min_ref, **numbers}
    eager = is_result and rules.eager_results and stats.ref < rules.min_ref
    # min_texec weighs a job of Criss's own against what it would save; a first-seen
    # result needs no such job (computing it is the query's own work), so only the
    # benefit model judges it: the first repeat of a query that reads back cheaply is served
    if numbers["estimated_texec"] < rules.min_texec and not eager:
        reason = "below_min_texec" if size is None else "below_min_texec_template"
        return Verdict(None, Decision(SKIP, reason, numbers, ESTIMATE))
    if stats.ref >= rules.min_ref:
        score = collect_score(stats.ref, node.height)
        return Verdict(score, Decision(CACHE, "collect_statistics", numbers, ESTIMATE))
    if eager:
        recurrence = facts.recurrences.get(node.fingerprint)
        built = rules.build_bandwidth(place.materialized)
        return eager_verdict(node, stats, size, numbers, rules, recurrence, built)
    if free:
        return parameter_free_verdict(node, stats, size, numbers, rules)
    return Verdict(None, Decision(SKIP, "below_min_ref", numbers, ESTIMATE))


def _estimate(
    node: PlanNode, facts: QueryFacts, rules: CachingRules, is_result: bool
) -> tuple[float | None, dict[str, Any]]:
    """An unmeasured operator's estimated Texec, with the numbers it came from, and its
    size where measured. Where its template was measured under other parameter values
    (every drifting query after its template's first), the medians of those runs: what
    the same work took on the same data. Else its stages at the learned seconds per stage
    plus the bytes it reads at the learned input rate. A template's runs say nothing of an
    operator over results the cache serves (they computed them, or read other entries)."""
    scanned = node.scanned_bytes_outside(facts.reused)
    template = facts.templates.get(node.fingerprint)
    numbers: dict[str, Any] = {"scanned_bytes": scanned, "min_texec": rules.min_texec}
    if template is not None and not any(within(path, (node.path,)) for path in facts.reused):
        source = TEMPLATE_SOURCE.format(template_measured=template.measured)
        numbers |= {
            "estimated_texec": template.texec,
            "template_measured": template.measured,
            "texec_source": source,
        }
        return template.size_bytes, numbers
    stages = stages_of(node, facts.reused, cache_reads_count=is_result)
    numbers |= {
        "estimated_texec": stages * rules.stage_seconds + scanned / rules.scan_rate,
        "stages": stages,
        "stage_seconds": rules.stage_seconds,
        "scan_rate": rules.scan_rate,
        "texec_source": BYTES_SOURCE,
    }
    return None, numbers


def stages_of(
    node: PlanNode, served: Collection[tuple[int, ...]] = (), *, cache_reads_count: bool = True
) -> int:
    """Stages a subtree runs in, roughly: one, plus one per operator that shuffles (outside
    the ``served`` subtrees, which read cached files instead). With ``cache_reads_count``
    off, an operator computed over what the cache serves alone (a Filter over a cached
    aggregate) has no stage of its own: it runs in the stage reading the cache, which a
    later query reading it instead still runs. A result's repeat skips that stage, so for
    a result it counts."""
    served = tuple(served)

    def outside(n: PlanNode) -> bool:
        return not within(n.path, served)

    reads = cache_reads_count or any(outside(leaf) for leaf in node.leaves())
    return int(reads) + sum(1 for n in node.walk() if n.op in STAGE_BOUNDARIES and outside(n))


def _whole_result(result: PlanNode, facts: QueryFacts) -> set[tuple[int, ...]]:
    """An exact-result cache stores the query's result, unless it is served already."""
    return set() if result.path in facts.reused or not storable(result) else {result.path}


def _best_per_branch(
    tree: PlanNode,
    result: PlanNode,
    verdicts: Mapping[tuple[int, ...], Verdict],
    facts: QueryFacts,
    rules: CachingRules,
) -> tuple[set[tuple[int, ...]], dict[tuple[int, ...], dict[str, Any]]]:
    """Every operator to cache: the best of each branch, their ``shared_bases`` (those whose
    expected reads pay for them), and a result cached eagerly (no statistics yet) besides
    them; and the numbers of every operator weighed as a base, cached or not."""
    result_verdict = verdicts.get(result.path)
    eager = (
        result.path not in facts.reused
        and result_verdict is not None
        and result_verdict.score is not None
        and result_verdict.decision.source == ESTIMATE
    )

    def candidate(node: PlanNode) -> Candidate:
        key = node.path
        if key in facts.reused:
            return Candidate(key, (), None)
        kids = tuple(candidate(c) for c in node.children)
        score = None if eager and key == result.path else verdicts[key].score
        return Candidate(key, kids, score, node.op == "Join")

    root = candidate(tree)
    chosen = set(best_per_branch(root))
    weighed: dict[tuple[int, ...], dict[str, Any]] = {}

    def worth(key: tuple[int, ...]) -> bool:
        weighed[key] = _base_numbers(verdicts[key].decision.numbers, rules)
        return weighed[key]["base_gain"] > 0

    found = shared_bases(root, chosen, rules.base_share, worth) if rules.base_share > 0 else []
    # the bases found, and those weighed whose reads would not pay (said so by explain)
    bases = {
        key: numbers
        for key, numbers in weighed.items()
        if key in found or (key not in chosen and numbers["base_gain"] <= 0)
    }
    return chosen | set(found) | ({result.path} if eager else set()), bases


def _final(
    path: tuple[int, ...],
    verdict: Verdict,
    chosen: set[tuple[int, ...]],
    result_path: tuple[int, ...],
    rules: CachingRules,
    base: dict[str, Any] | None = None,
) -> Decision:
    decision = verdict.decision
    if path in chosen:
        if base is not None:
            return Decision(CACHE, "shared_base", base, decision.source)
        if rules.results_only:
            return Decision(CACHE, "whole_result", decision.numbers, decision.source)
        return decision
    if decision.action != CACHE:
        return decision
    if base is not None:  # weighed as a shared base, and its expected reads do not pay
        return Decision(SKIP, "base_rarely_read", base, decision.source)
    # eligible, but another operator of its branch was chosen
    reason = "outranked" if decision.source != ESTIMATE else "outranked_unmeasured"
    return Decision(SKIP, reason, decision.numbers, decision.source)


def _outside(root: PlanNode, reused: Collection[tuple[int, ...]]):
    """Operators not inside a reused subtree, the reused roots themselves excluded."""
    if root.path in reused:
        return
    yield root
    for child in root.children:
        yield from _outside(child, reused)
