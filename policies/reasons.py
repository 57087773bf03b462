"""Why each operator was cached or not, in words: reason codes, and the text every reader
(``explain``, the query log, ``criss stats``, the dashboard) renders them with.

>>> from criss.policies.reasons import Decision, describe
>>> describe(Decision("skip", "below_min_ref", {"ref": 1, "min_ref": 2}))
'seen 1x; cached to collect statistics from 2x'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CACHE, SKIP, REUSE = "cache", "skip", "reuse"
#: Where a decision's numbers came from.
MEASURED, ESTIMATE = "measured", "estimate"
#: Where an estimated Texec came from, as ``describe`` words it.
BYTES_SOURCE = "from its stages and the bytes it reads"
TEMPLATE_SOURCE = "as {template_measured} runs of its template under other values measured"
#: Where a first-seen result's expected repeats come from: the home's recent queries, or
#: those and its template's queries under other values.
HOME_REPEATS = "of a first-seen result here"
TEMPLATE_REPEATS = (
    "of it: {template_repeats} of its template's {template_queries} queries under other "
    "values were repeats, with the home's share of repeats ({home_repeat_share:.0%}) "
    "counted as {template_prior_queries:g} more"
)

#: Reason code → the words every reader shows (formatted with the decision's numbers).
REASONS: Mapping[str, str] = {
    # cached
    "largest_benefit": "largest benefit on its branch ({benefit:.3g})",
    "shared_base": (
        "benefit {benefit:.3g}: of the operators below a join under one cached for a "
        "larger benefit on its branch that keep base_share ({base_share:.2f}) of it, the "
        "one keeping the least: what a query changed higher up still shares; of the bases "
        "cached here {base_read_share:.0%} were read by a later query, and the "
        "{expected_base_reads:.2f} reads expected would save {base_gain:.3f}s more than "
        "caching it costs (Texec {texec:.3f}s, {size_bytes} bytes)"
    ),
    "collect_statistics": "seen {ref}x without statistics: cached to measure it",
    "eager_result": (
        "a first-seen query's result, cached eagerly: the {expected_repeats:.2f} repeats "
        "expected {repeats_source} would save {expected_gain:.3f}s more than "
        "caching it costs (estimated Texec {estimated_texec:.3f}s {texec_source}, "
        "~{estimated_size:.0f} bytes; building Spark's cache of rows the action does not "
        "return adds {in_action_build_share:.0%} of writing them)"
    ),
    "eager_parameter_free": (
        "first seen, cached by the action on an estimate: no value a query chose selects its "
        "rows (no literal in its filters and joins), and the {expected_reuses:.2f} reuses by "
        "other statements expected of such an aggregate here ({new_values_share:.0%} of the "
        "queries of templates seen before came under new values) would save {expected_gain:.3f}s "
        "more than caching it costs (estimated Texec {estimated_texec:.3f}s {texec_source}, "
        "~{estimated_size:.0f} bytes; caching it on first sight adds {first_sight_seconds:.3f}s "
        "to the query)"
    ),
    "whole_result": "reuse_scope=results: the query's whole result",
    # reused
    "cached_entry": "served from a cached entry",
    # not cached
    "uncacheable": "{why}",
    "results_scope": "reuse_scope=results: only whole query results are cached",
    "not_storable": "{op} results are not stored (cheap to recompute or order-sensitive)",
    "not_tracked": "not tracked",
    "table_copy_most_rows": (
        "a copy of one table keeping {rows} of its {table_rows} rows: no cheaper to read back "
        "than scanning its columns again"
    ),
    "no_benefit": (
        "benefit {benefit:.3g} <= 0 (read back at {bandwidth:.3g} B/s ({read_source}), stored at "
        "{write_bandwidth:.3g} B/s, building Spark's cache of it in the action included at "
        "{in_action_build_share:.0%} of writing it)"
    ),
    "outranked": "another operator on its branch has a larger benefit",
    "unprojected_scan": (
        "filters a table without narrowing its columns: a copy would hold every column "
        "(cached once measured, or as a query's result)"
    ),
    "widened_copy_most_rows": (
        "a copy of one table keeping {rows} of its {table_rows} rows, with columns looked up "
        "in tables Spark broadcasts: no cheaper to read back than scanning it and looking "
        "them up again"
    ),
    "union_copy_most_rows": (
        "a union of table copies keeping {rows} of their tables' {table_rows} rows: no "
        "cheaper to read back than scanning their columns again"
    ),
    "union_copy_unmeasured": (
        "a union of table copies: cached only once its rows are measured, if it keeps few "
        "of its tables' rows (Spark measures no rows of a union: its inputs, each a table "
        "copy, are judged instead)"
    ),
    "widened_copy_unmeasured": (
        "a copy of one table with columns looked up in tables Spark broadcasts: cached only "
        "once its rows are measured (from an executed plan), if it keeps few of the table's "
        "rows"
    ),
    "table_copy_unmeasured": (
        "a copy of one table: cached only once its rows are measured (from an executed "
        "plan), if it keeps few of the table's rows"
    ),
    "below_min_texec": (
        "estimated Texec {estimated_texec:.3f}s ({stages} stages x {stage_seconds:.3f}s + "
        "{scanned_bytes} input bytes at {scan_rate:.3g} B/s) < min_texec {min_texec}s"
    ),
    "below_min_texec_template": (
        "estimated Texec {estimated_texec:.3f}s {texec_source} < min_texec {min_texec}s"
    ),
    "eager_no_benefit": (
        "a first-seen query's result: the {expected_repeats:.2f} repeats expected "
        "{repeats_source} would not pay for caching it (expected gain "
        "{expected_gain:.3f}s, benefit {benefit:.3g}: estimated Texec {estimated_texec:.3f}s "
        "{texec_source}, ~{estimated_size:.0f} bytes; caching it on first sight adds "
        "{first_sight_seconds:.3f}s to the query, and building Spark's cache of rows the action "
        "does not return {in_action_build_share:.0%} of writing them)"
    ),
    "eager_parameter_free_no_benefit": (
        "first seen; no value a query chose selects its rows, but the {expected_reuses:.2f} "
        "reuses by other statements expected of such an aggregate here "
        "({new_values_share:.0%} of the queries of templates seen before came under new "
        "values) would not pay for "
        "caching it (expected gain {expected_gain:.3f}s: estimated Texec "
        "{estimated_texec:.3f}s {texec_source}, ~{estimated_size:.0f} bytes)"
    ),
    "base_rarely_read": (
        "a shared base (benefit {benefit:.3g}, Texec {texec:.3f}s, {size_bytes} bytes), but "
        "of the bases cached here {base_read_share:.0%} were read by a later query: the "
        "{expected_base_reads:.2f} reads expected would not pay for caching it (expected "
        "gain {base_gain:.3f}s, with {in_action_seconds:.2f}s the action takes longer for it)"
    ),
    "rarely_read_again": (
        "seen {ref}x, benefit {benefit:.3g} (Texec {texec:.3f}s, {size_bytes} bytes), but of "
        "the operators under a result cached here {reread_share:.0%} were read by a later "
        "query: the {expected_rereads:.2f} reads expected would not pay for caching it in the "
        "action (expected gain {expected_gain:.3f}s, with {in_action_seconds:.2f}s the action "
        "takes longer for each operator under its result it caches)"
    ),
    "below_min_ref": "seen {ref}x; cached to collect statistics from {min_ref}x",
    "cheap_to_compute": (
        "measured Texec {texec:.3f}s < min_texec {min_texec}s: inside a query, cheaper to "
        "compute again than to read back (a read changes the plan Spark compiles)"
    ),
    "outranked_unmeasured": "another operator on its branch ranks higher",
    # lifting an aggregate (criss.policies.lifting)
    "lift_pays": (
        "lifted: {expected_values:.2f} new parameter values expected x (Texec {texec:.3f}s - "
        "{read_seconds:.3f}s to roll up) gain {gain:.3f}s more than computing it "
        "{cost_ratio:.2f}x ({cost_source}) and writing it ({write_seconds:.3f}s) cost"
    ),
    "lift_no_gain": (
        "not lifted: {expected_values:.2f} new parameter values expected x (Texec "
        "{texec:.3f}s - {read_seconds:.3f}s to roll up) do not pay for computing it "
        "{cost_ratio:.2f}x ({cost_source}) and writing it ({write_seconds:.3f}s): gain "
        "{gain:.3f}s"
    ),
    "lift_eager": (
        "lifted: lift_aggregates=eager (the benefit model would not: {expected_values:.2f} "
        "new parameter values expected, computing it {cost_ratio:.2f}x, gain {gain:.3f}s)"
    ),
    "lift_cheap": (
        "not lifted: measured Texec {texec:.3f}s under other parameters < min_texec {min_texec}s"
    ),
    "lift_too_large": "not lifted: {why}",
    "rolled_up_result_cached": (
        "result cached as itself: {expected_repeats:.2f} repeats expected x (a roll-up, "
        "~{roll_up_seconds:.3f}s, against reading it, {read_seconds:.3f}s) save {gain:.3f}s "
        "more than caching it costs ({write_seconds:.3f}s to write, {first_sight_seconds:.3f}s "
        "in the action)"
    ),
    "rolled_up_result_not_cached": (
        "result not cached as itself: {expected_repeats:.2f} repeats expected x (a roll-up, "
        "~{roll_up_seconds:.3f}s, against reading it, {read_seconds:.3f}s) do not pay for "
        "caching it ({write_seconds:.3f}s to write, {first_sight_seconds:.3f}s in the "
        "action): gain {gain:.3f}s"
    ),
    "lift_refused": "not lifted: refused before ({why})",
    "lift_not_decomposable": "not lifted: {why}",
    # widening a selection to the conditions its template shares (criss.planner.widen)
    "widen_pays": (
        "widened: {expected_values:.2f} new parameter values expected x (Texec {texec:.3f}s "
        "- {read_seconds:.3f}s to read the copy) gain {gain:.3f}s more than writing it "
        "({write_seconds:.3f}s for ~{lifted_rows:,.0f} rows) costs"
    ),
    "widen_no_gain": (
        "not widened: {expected_values:.2f} new parameter values expected x (Texec "
        "{texec:.3f}s - {read_seconds:.3f}s to read the copy) do not pay for writing it "
        "({write_seconds:.3f}s for ~{lifted_rows:,.0f} rows): gain {gain:.3f}s"
    ),
    "widen_eager": (
        "widened: lift_aggregates=eager (the benefit model would not: gain {gain:.3f}s)"
    ),
    "widen_unmeasured": "not widened: no Texec measured for the selection under other values",
    "widen_cheap": (
        "not widened: measured Texec {texec:.3f}s under other values < min_texec {min_texec}s"
    ),
    "widen_refused": "not widened: refused before ({why})",
    "widen_too_large": (
        "not widened: the copy would hold ~{rows:,.0f} rows (the conditions it drops keep "
        "{kept_share:.1%} of the table, by its files' column ranges), more than the "
        "{max_rows:,} that read back in less than the selection's Texec {texec:.3f}s"
    ),
}


@dataclass(frozen=True)
class Decision:
    """One operator's verdict: ``action`` (cache, skip, reuse), a reason code from
    :data:`REASONS`, the numbers it used and where they came from."""

    action: str
    reason: str
    numbers: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "reason": self.reason,
            "numbers": dict(self.numbers),
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        return cls(data["action"], data["reason"], data.get("numbers") or {}, data.get("source"))


def describe(decision: Decision) -> str:
    """The reason in words; an unknown code (from a newer Criss) is shown as it is."""
    template = REASONS.get(decision.reason)
    if template is None:
        return decision.reason
    try:
        # decisions logged before reads were measured priced them at the calibrated rate,
        # estimated every Texec from input bytes and every repeat from the home's alone,
        # and priced storing a first-seen result at writing it alone
        defaults = {
            "in_action_build_share": 0.0,
            "read_source": "calibrated",
            "texec_source": BYTES_SOURCE,
            "repeats_source": HOME_REPEATS,
        }
        numbers = dict(decision.numbers)
        if "first_sight_cost" in numbers:  # logged when it was a share of the estimated Texec
            numbers.setdefault(
                "first_sight_seconds",
                numbers["first_sight_cost"] * numbers.get("estimated_texec", 0.0),
            )
        return template.format(**{**defaults, **numbers})
    except (KeyError, ValueError, TypeError):
        return decision.reason
