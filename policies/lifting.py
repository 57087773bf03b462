"""Whether to lift an aggregate: the benefit model's terms for a result computed at a finer
grain than any query asked for (plain numbers in, a :class:`Decision` out).

Lifting an aggregate (``criss.planner.lift``) computes it once without its parameter
conditions and grouped by their columns; every later query of the template under new values
is a roll-up of it. Like the paper's model (§1.2: ``ref × (Texec − size/bw) − size/bw``), it
pays when the reuses expected of it save more than storing it costs, but storing is not the
only cost: the lifted aggregate reads the rows the conditions would have dropped, so the query
that lifts it takes ``cost_ratio`` × its aggregate's Texec, and only the new parameter values
to come gain (an exact repeat is served by the query's own cached result, lifted or not:
:func:`decide_rolled_up_result` caches a rolled-up result as itself where its repeats pay)::

    gain = expected_values × (Texec − read) − (cost_ratio − 1) × Texec − write

``expected_values`` is measured over the home's aggregates (how often one seen under two or
more parameter values was seen under yet another; at a template's k-th value, k >= 3, how
often one seen under k or more was); ``cost_ratio`` from the rows its
operators take in with and without the lifted conditions, and what the lifts so far
measured (:func:`lift_cost_ratio`).

>>> from criss.policies.reasons import describe
>>> facts = LiftFacts(texec=3.5, parameter_values=1, expected_values=1.0,
...     cost_ratio=1.05, cost_source="selectivity", lifted_bytes=2e6, bandwidth=200e6,
...     fixed_seconds=0.2)
>>> decision = decide_lift(facts)
>>> decision.action, round(decision.numbers["gain"], 2)
('cache', 3.1)
>>> describe(decide_lift(LiftFacts(1.5, 1, 0.4, 2.0, "estimate", 2e6, 200e6, 0.2)))[:40]
'not lifted: 0.40 new parameter values ex'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from criss.policies.benefit import transfer_seconds
from criss.policies.decisions import CACHE, ESTIMATE, MEASURED, SKIP, Decision

#: Where a lift's cost ratio came from (shown by explain).
COST_SOURCES = {
    "selectivity": "bounded by the measured selectivity of its lifted conditions",
    "measured": "the lifts measured in this home",
    "estimate": "assumed before any lift was measured",
    "scan": "the same scan, its extra rows priced as the copy's write",
    "rows": (
        "the rows its operators take in without the lifted conditions, against with them, "
        "times what the lifts measured beyond their rows"
    ),
    "rows_estimate": (
        "the rows its operators take in without the lifted conditions, against with them, "
        "times what lifts were assumed to cost beyond their rows before any was measured"
    ),
}


@dataclass(frozen=True)
class LiftFacts:
    """What one lift decision weighs, all in seconds and bytes."""

    #: The aggregate's measured Texec under other parameter values.
    texec: float
    #: Parameter values of the template seen before this query (the paper's ref).
    parameter_values: int
    #: New parameter values a template seen under two or more is measured to get.
    expected_values: float
    #: The lifted aggregate's Texec ÷ the aggregate's.
    cost_ratio: float
    #: One of :data:`COST_SOURCES`.
    cost_source: str
    #: Estimated bytes of the lifted result.
    lifted_bytes: float
    #: The disk tier's bandwidth (the paper's worst case).
    bandwidth: float
    #: Spark's fixed seconds of a query rolled up from a cached result.
    fixed_seconds: float
    #: Bytes per second Criss's writes of results were measured to reach (None: none yet,
    #: writing is priced at ``bandwidth``).
    write_bandwidth: float | None = None
    #: Estimated rows of the lifted result (``lifted_bytes`` is these at an estimated width).
    lifted_rows: float | None = None
    #: What weighed into ``cost_ratio`` (:func:`lift_cost_ratio`): the ratio of rows its
    #: operators take in, and how many more rows the lifted filters pass.
    rows_ratio: float | None = None
    growth_bound: float | None = None


def work_ratio(inputs: Sequence[tuple[float, float]]) -> float | None:
    """The lifted aggregate's work ÷ the aggregate's, weighed by the rows its operators take
    in, as Catalyst's cost-based join reorder weighs plans by the rows of their
    intermediate results. ``inputs``: the rows each scan, join and aggregate takes in (a
    scan its table, the others each input's rows), as measured under other parameter
    values, and how many times more it takes without the lifted conditions (1 off their
    path, the rows the conditions dropped on it). None where nothing was measured.

    TPC-H Q14, a month of lineitem (75 k of 6 M rows) joined with part, then aggregated:

    >>> round(work_ratio([(6e6, 1), (2e5, 1), (75e3, 80), (2e5, 1), (75e3, 80)]), 2)
    2.81
    """
    now = sum(rows for rows, _ in inputs)
    if now <= 0:
        return None
    return sum(rows * growth for rows, growth in inputs) / now


def lift_cost_ratio(
    prior: tuple[float, str],
    overhead: tuple[float, str],
    bound: float | None,
    work: float | None,
) -> tuple[float, str]:
    """The cost ratio a lift is weighed at, and its source (:data:`COST_SOURCES`).

    Where the lifted conditions' selectivity was measured, ``work`` (:func:`work_ratio`,
    the rows its operators take in) times ``overhead``: what lifts cost beyond their rows
    (the lifted aggregate groups by more columns, computes its functions over more rows,
    may lose a broadcast). That product is steadier than the lifts' own ratios: TPC-H's
    measured at SF 1 (Q1 1.24x, Q4 1.97x, Q5 2.02x, Q14 4.3-5.2x) are 1.2-1.9 times their
    rows' (~1.01, 1.24, 1.54, 2.81). Else ``prior``: the ratio the lifts so far measured,
    or the one assumed before any. Each is (value, source): measured or estimated.
    ``bound``: how many times more rows the lifted filters pass (Q1's ship date keeps 98 %
    of lineitem); the ratio is taken no higher.

    >>> lift_cost_ratio((2.0, "estimate"), (1.5, "rows_estimate"), 80.0, 2.81)
    (4.215, 'rows_estimate')
    >>> lift_cost_ratio((2.0, "estimate"), (1.5, "rows_estimate"), 1.008, 1.005)
    (1.008, 'selectivity')
    >>> lift_cost_ratio((2.1, "measured"), (1.4, "rows"), 7.0, None)
    (2.1, 'measured')
    """
    ratio, source = prior if work is None else (work * overhead[0], overhead[1])
    if bound is not None and bound < ratio:
        ratio, source = bound, "selectivity"
    return ratio, source


def decide_lift(facts: LiftFacts) -> Decision:
    """Lift (``cache``) when the expected new parameter values gain more than lifting costs."""
    transfer, write = transfer_seconds(facts.lifted_bytes, facts.bandwidth, facts.write_bandwidth)
    read = facts.fixed_seconds + transfer
    extra = (facts.cost_ratio - 1) * facts.texec
    gain = facts.expected_values * (facts.texec - read) - extra - write
    numbers: dict[str, Any] = {
        "texec": facts.texec,
        "parameter_values": facts.parameter_values,
        "expected_values": facts.expected_values,
        "cost_ratio": facts.cost_ratio,
        "cost_source": COST_SOURCES.get(facts.cost_source, facts.cost_source),
        # the key beside its words: what a caller tests, the words being for readers
        "cost_basis": facts.cost_source,
        "lifted_bytes": facts.lifted_bytes,
        "lifted_rows": facts.lifted_rows,
        "rows_ratio": facts.rows_ratio,
        "growth_bound": facts.growth_bound,
        "read_seconds": read,
        "write_seconds": write,
        "extra_seconds": extra,
        "gain": gain,
    }
    source = ESTIMATE if facts.cost_source in ("estimate", "rows_estimate") else MEASURED
    if gain > 0:
        return Decision(CACHE, "lift_pays", numbers, source)
    return Decision(SKIP, "lift_no_gain", numbers, source)


def decide_widening(facts: LiftFacts) -> Decision:
    """Widen a selection (``cache``, ``criss.planner.widen``) on the lift's terms: its Texec
    is the selection's, and computing it is the same scan (``cost_ratio`` 1): what it adds
    is the rows the varying conditions would drop, priced as writing the copy."""
    decision = decide_lift(facts)
    reason = "widen_pays" if decision.action == CACHE else "widen_no_gain"
    return Decision(decision.action, reason, decision.numbers, decision.source)


#: Stages a roll-up runs in over the cached groups it reads: the partial aggregate in the
#: stage that reads them, the final one after its shuffle (the query's sort, which an exact
#: read of the result runs too, is not counted).
ROLL_UP_STAGES = 2


@dataclass(frozen=True)
class RolledUpResult:
    """What caching, as itself, a query's result that the cache serves by a roll-up weighs."""

    #: References to the statement so far, this one included (the paper's ref).
    ref: int
    #: Repeats a statement seen once can expect
    #: (criss.policies.first_sight.expected_result_repeats).
    expected_repeats: float
    #: Spark's learned seconds per stage.
    stage_seconds: float
    #: Seconds reading the finer cached result took this query (measured where it was read
    #: on the driver; else its bytes at the load bandwidth).
    source_seconds: float
    #: Estimated bytes of the result itself (at most the finer result's).
    result_bytes: float
    bandwidth: float
    write_bandwidth: float | None
    #: What caching a result on first sight adds to the query's own time (learned).
    first_sight_seconds: float


def decide_rolled_up_result(facts: RolledUpResult) -> Decision:
    """Cache a query's result that a roll-up of a finer cached result serves, as itself,
    when the repeats it can expect save more than caching it costs: unless it is cached,
    each repeat reads the finer result and rolls it up again (``ROLL_UP_STAGES`` stages at
    the learned seconds per stage), where reading it exactly reads its own bytes. Its
    repeats are the paper's ``ref`` once the statement was seen before, else those a
    first-seen result can expect. Measured at SF 1: TPC-H Q1's and Q12's repeats served by
    a roll-up ran 0.2-0.4 s, exact reads of their results 0.03-0.05 s.

    >>> facts = RolledUpResult(1, 0.6, 0.15, 0.1, 800, 200e6, None, 0.05)
    >>> decision = decide_rolled_up_result(facts)
    >>> decision.action, round(decision.numbers["gain"], 3)
    ('cache', 0.19)
    >>> decide_rolled_up_result(RolledUpResult(1, 0.1, 0.15, 0.1, 800, 200e6, None, 0.05)).action
    'skip'
    >>> decide_rolled_up_result(RolledUpResult(2, 0.1, 0.15, 0.1, 800, 200e6, None, 0.05)).action
    'cache'
    """
    repeats = facts.expected_repeats if facts.ref <= 1 else float(facts.ref)
    roll_up = ROLL_UP_STAGES * facts.stage_seconds + facts.source_seconds
    read, write = transfer_seconds(facts.result_bytes, facts.bandwidth, facts.write_bandwidth)
    gain = repeats * (roll_up - read) - write - facts.first_sight_seconds
    numbers: dict[str, Any] = {
        "ref": facts.ref,
        "expected_repeats": repeats,
        "roll_up_seconds": roll_up,
        "roll_up_stages": ROLL_UP_STAGES,
        "stage_seconds": facts.stage_seconds,
        "source_seconds": facts.source_seconds,
        "estimated_size": facts.result_bytes,
        "read_seconds": read,
        "write_seconds": write,
        "first_sight_seconds": facts.first_sight_seconds,
        "gain": gain,
    }
    if gain > 0:
        return Decision(CACHE, "rolled_up_result_cached", numbers, ESTIMATE)
    return Decision(SKIP, "rolled_up_result_not_cached", numbers, ESTIMATE)


def refused_lift(reason: str, **numbers: Any) -> Decision:
    """A lift not weighed at all (``reason`` one of the ``lift_*`` codes of REASONS)."""
    return Decision(SKIP, reason, numbers, MEASURED)
