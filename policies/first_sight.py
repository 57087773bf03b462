"""What caching an operator on first sight is worth, before it ever ran: a first-seen
result valued with the repeats measured here, a parameter-free aggregate with the reuses
measured here, each less what caching it on first sight adds (see
:mod:`criss.policies.decisions`, which chooses among them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from criss.policies.benefit import transfer_seconds
from criss.policies.reasons import CACHE, ESTIMATE, HOME_REPEATS, SKIP, TEMPLATE_REPEATS, Decision
from criss.policies.selection import collect_score, guess_score, measured_score
from criss.qtree.lineage import max_rows, output_width
from criss.qtree.plan import PlanNode
from criss.qtree.templates import TemplateRecurrence
from criss.qtree.tree import NodeStats

if TYPE_CHECKING:
    from criss.policies.decisions import CachingRules

#: Bytes per column per row that bound a result whose rows its shape bounds (an aggregate
#: without grouping, a limit): above Spark's default sizes of the atomic types (1-20 bytes).
BOUNDED_COLUMN_BYTES = 64
#: Columns assumed where a result's width is not known from its canonical arguments.
UNKNOWN_WIDTH = 32
#: Queries the home's share of repeats counts as beside a first-seen result's template's
#: own queries under other values: with none, the home's share alone; after a few of its
#: own, mostly the template's (a template whose values never come back stops being cached
#: on first sight while others still are).
TEMPLATE_PRIOR_QUERIES = 2.0
#: Repeats per first-seen result beyond which more make no difference to a decision.
MAX_EXPECTED_REPEATS = 100.0


@dataclass(frozen=True)
class Verdict:
    """An operator judged alone: eligible with a score, or not, and why."""

    score: tuple[float, ...] | None
    decision: Decision


def eager_verdict(
    node: PlanNode,
    stats: NodeStats,
    size: float | None,
    numbers: dict[str, Any],
    rules: CachingRules,
    recurrence: TemplateRecurrence | None,
    built: float | None,
) -> Verdict:
    """A first-seen result, valued by the benefit model with the repeats it can expect
    (:func:`expected_result_repeats`), less what caching it on first sight adds: storing
    it at ``built`` where the action builds rows it would not materialize (under a
    limit)."""
    repeats, recurred = expected_result_repeats(rules.expected_repeats, recurrence)
    gain, benefit, numbers = _first_sight_value(node, stats, size, numbers, rules, repeats, built)
    numbers = {
        **numbers,
        "max_rows": max_rows(node),
        "expected_repeats": repeats,
        "in_action_build_share": rules.in_action_build_share if built else 0.0,
        **recurred,
    }
    if gain <= 0 or measured_score(benefit) is None:
        return Verdict(None, Decision(SKIP, "eager_no_benefit", numbers, ESTIMATE))
    score = collect_score(stats.ref, node.height)
    return Verdict(score, Decision(CACHE, "eager_result", numbers, ESTIMATE))


def expected_result_repeats(
    home: float, recurrence: TemplateRecurrence | None
) -> tuple[float, dict[str, Any]]:
    """Repeats a first-seen result can expect, and the numbers they came from: ``home``,
    those measured over the home's recent queries; where its template was seen under
    other values, the share of its template's queries that were repeats, with the home's
    share counted as ``TEMPLATE_PRIOR_QUERIES`` more queries (a drifting template whose
    values never recur expects few, however often the home's other queries repeat)."""
    if recurrence is None or recurrence.queries <= 0:
        return home, {"repeats_source": HOME_REPEATS}
    home_share = home / (1 + home)
    share = (recurrence.repeats + TEMPLATE_PRIOR_QUERIES * home_share) / (
        recurrence.queries + TEMPLATE_PRIOR_QUERIES
    )
    numbers = {
        "template_queries": recurrence.queries,
        "template_repeats": recurrence.repeats,
        "home_repeat_share": home_share,
        "template_prior_queries": TEMPLATE_PRIOR_QUERIES,
    }
    source = TEMPLATE_REPEATS.format(**numbers)
    return expected_more(share), {**numbers, "repeats_source": source}


def expected_more(share: float) -> float:
    """How many more times something comes back when a ``share`` of its chances did (a
    geometric run: share ÷ (1 − share)), bounded by what changes any decision."""
    if share >= 1:
        return MAX_EXPECTED_REPEATS
    return min(share / (1 - share), MAX_EXPECTED_REPEATS)


def parameter_free_verdict(
    node: PlanNode,
    stats: NodeStats,
    size: float | None,
    numbers: dict[str, Any],
    rules: CachingRules,
) -> Verdict:
    """A first-seen parameter-free aggregate under the result, valued by the benefit model
    with the reuses by other statements one is measured to get here. Ranked below every
    measured operator of its branch: it is cached on a guess."""
    reuses = rules.expected_parameter_free_reuses
    built = rules.build_bandwidth(False)
    # caching it in the action changes the plan Spark runs as caching a result does
    gain, benefit, numbers = _first_sight_value(node, stats, size, numbers, rules, reuses, built)
    numbers = {
        **numbers,
        "expected_reuses": reuses,
        "new_values_share": rules.new_values_share,
        "in_action_build_share": rules.in_action_build_share if built else 0.0,
    }
    if gain <= 0 or measured_score(benefit) is None:
        return Verdict(None, Decision(SKIP, "eager_parameter_free_no_benefit", numbers, ESTIMATE))
    return Verdict(guess_score(gain), Decision(CACHE, "eager_parameter_free", numbers, ESTIMATE))


def _first_sight_value(
    node: PlanNode,
    stats: NodeStats,
    size: float | None,
    numbers: dict[str, Any],
    rules: CachingRules,
    expected: float,
    built: float | None = None,
) -> tuple[float, float, dict[str, Any]]:
    """What caching a first-seen operator is worth on estimates: the seconds its
    ``expected`` later uses save, less storing it (at ``built`` where the action builds
    Spark's cache of it on the way) and the first sight's added time; the benefit model's
    value; and the numbers both came from. ``size``: as its template measured it, else
    estimated from the bytes it reads."""
    if size is None:
        size = estimated_result_size(node, numbers["scanned_bytes"], rules.result_ratio)
    texec = numbers["estimated_texec"]
    transfer, store = transfer_seconds(size, rules.load_bandwidth, built or rules.store_bandwidth)
    gain = expected * (texec - transfer) - store - rules.first_sight_seconds
    benefit = rules.benefit_of(stats, expected, texec, size, built)
    numbers = {
        **numbers,
        "estimated_size": size,
        "result_ratio": rules.result_ratio,
        "first_sight_seconds": rules.first_sight_seconds,
        "expected_gain": gain,
        "benefit": benefit,
    }
    return gain, benefit, numbers


def estimated_result_size(node: PlanNode, scanned: int, result_ratio: float) -> float:
    """Bytes a first-seen result is expected to take: its input bytes at the learned result
    ratio, or less where its shape bounds its rows (a one-row aggregate is tiny however
    much it reads, and the ratio, learned over results of every size, would say otherwise)."""
    size = scanned * result_ratio
    rows = max_rows(node)
    if rows is None:
        return size
    width = output_width(node) or UNKNOWN_WIDTH
    return min(size, float(rows * width * BOUNDED_COLUMN_BYTES))
