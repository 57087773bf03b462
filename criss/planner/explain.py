"""``cs.explain()``: a query record in words, one line per operator."""

from __future__ import annotations

from criss.policies.reasons import Decision, describe
from criss.qtree.subsume import derivation_text
from criss.qtree.tree import EXECUTED_PLAN
from criss.records import OperatorRecord, QueryRecord

#: What each kind of the record's ``lifts`` weighed, as explain names it.
LIFT_KINDS = {
    "aggregate": "lift of Aggregate",
    "selection": "widening of selection",
    "result": "caching of the rolled-up result",
}


def format_explain(record: QueryRecord, labels: bool = True) -> str:
    """The record as text; ``labels`` names operators by their JVM plan (a walk of it each)."""
    lines = [_header(record)]
    if record.fallback:
        lines.append(f"  fell back to plain Spark: {record.fallback}")
    if record.counters.get("results_ordered_on_driver"):
        lines.append("  result: read on the driver and put in ORDER BY order there (no Spark job)")
    if record.counters.get("entries_written_on_driver"):
        lines.append(
            f"  {record.counters['entries_written_on_driver']} cached result(s) small enough to "
            "be collected and written on the driver (no Spark write job)"
        )
    if record.counters.get("operators_written_through"):
        lines.append(
            f"  {record.counters['operators_written_through']} result(s) to cache are written "
            "by the tasks of this DataFrame's own action (write-through), each partition as it "
            "finishes, and cached when Spark reports the action"
        )
    elif record.counters.get("operators_cached_in_action"):
        lines.append(
            f"  {record.counters['operators_cached_in_action']} result(s) to cache are computed "
            "by this DataFrame's own action into Spark's cache (nothing of them ran in "
            "cs.sql), and written to Criss's tiers from there after the action"
        )
    elif record.job_reason:
        lines.append(f"  written by a materialization job, not by the action: {record.job_reason}")
    for choice in record.joins:
        lines.append(f"  join: {choice.describe()}")
    for lift in record.lifts:
        decision = Decision.from_json(lift)
        what = LIFT_KINDS.get(lift.get("kind", "aggregate"), "lift of Aggregate")
        lines.append(f"  {what} [{lift['fingerprint'][:12]}]: {describe(decision)}")
    for operator in record.operators:
        lines.append(_operator_line(record, operator, labels))
    return "\n".join(lines)


def _header(record: QueryRecord) -> str:
    reused, cached = ("would reuse", "would cache") if record.dry_run else ("reused", "cached")
    header = (
        f"Criss plan ({record.counters.get('operators_reused', 0)} {reused}, "
        f"{record.counters.get('operators_cached', 0)} {cached}, "
        f"planning {record.planning_seconds * 1000:.0f} ms, "
        f"materializing {record.materialize_seconds:.2f} s)"
        + (" - dry run: nothing was cached, recomputed or recorded" if record.dry_run else "")
    )
    phases = [f"{name} {seconds * 1000:.0f}" for name, seconds in record.phase_seconds.items()]
    return header + (f"\n  time by phase (ms): {', '.join(phases)}" if phases else "")


def _operator_line(record: QueryRecord, d: OperatorRecord, labels: bool) -> str:
    indent = "  " * (len(d.path) + 1)
    label = _label(record, d) if labels else d.op
    served = f"; {d.served.describe()}" if d.served else ""
    if d.unread:
        served += (
            f"; cached entry {d.unread['entry'][:12]} not read: measured Texec "
            f"{d.unread['texec']:.3f}s < min_texec {d.unread['min_texec']:g}s, computing it "
            "costs no more than reading it back"
        )
    stats = _stats_text(d)
    return f"{indent}{label[:80]}  [{d.fingerprint[:12]}] {_state(record, d)}{served}" + (
        f"  ({stats})" if stats else ""
    )


def _state(record: QueryRecord, d: OperatorRecord) -> str:
    if d.reused:
        via = "" if d.rule == "exact" else f" via {d.rule}"
        if d.derivation is not None:
            via += f" ({derivation_text(d.derivation)})"
        return ("WOULD REUSE entry " if record.dry_run else "REUSED entry ") + d.reused[:12] + via
    if d.cached:
        verb = "WOULD CACHE as " if record.dry_run else "CACHED as "
        how = ""
        if record.counters.get("operators_written_through") and not record.dry_run:
            how = " by its action (write-through)"
        elif record.counters.get("operators_cached_in_action") and not record.dry_run:
            how = " by its action (Spark's cache)"
        return f"{verb}{d.cached[:12]}{how}: {describe(d.decision)}"
    if not d.looked_up:
        return f"never matched; not cached: {describe(d.decision)}"
    return ("matched" if d.matched else "new") + f"; not cached: {describe(d.decision)}"


def _stats_text(d: OperatorRecord) -> str:
    stats = d.stats
    if stats is None:
        return ""
    if stats.measured:
        text = (
            f"ref={stats.ref} Texec={stats.texec:.3f}s size={stats.size_bytes}B rows={stats.rows}"
        )
        return text + (" from the executed plan" if stats.source == EXECUTED_PLAN else "")
    if d.cached:
        numbers = d.decision.numbers
        source = (
            f"{numbers.get('scanned_bytes', 0)}B read from its tables"
            if "template_measured" not in numbers
            else f"{numbers['template_measured']} runs of its template under other values"
        )
        return (
            f"ref={stats.ref}, no statistics yet: cached on an estimate, Texec ~"
            f"{numbers.get('estimated_texec', 0.0):.2f}s from {source}; measured as it is written"
        )
    return f"ref={stats.ref} (no statistics yet)"


def _label(record: QueryRecord, d: OperatorRecord) -> str:
    if record.captured is None:
        return d.op
    try:
        return record.captured.label_at(d.path)
    except Exception:  # the JVM is gone (session stopped): the operator name will do
        return d.op
