"""``cs.report()``: a plain dict for programs that prints as a short summary for people.

>>> from criss.report import Report
>>> print(Report({"counters": {"queries": 3}, "tiers": {}, "entries": []}))  # doctest: +SKIP
Criss report: 3 queries ...
"""

from __future__ import annotations

from typing import Any

from criss.console import human_bytes


class Report(dict):
    """The dict ``CrissSession.report()`` always returned (JSON-ready, same keys), with a
    ``str()`` that reads: queries, operators reused and cached, fallbacks, each tier's use
    against its capacity and its hits, cached entries, and time saved when it is known."""

    def __str__(self) -> str:
        return "\n".join(_lines(self))

    def __repr__(self) -> str:
        return f"Report({dict.__repr__(self)})"


def _lines(report: dict[str, Any]) -> list[str]:
    counters = report.get("counters") or {}
    setting = ", ".join(
        f"{k} {report[k]}" for k in ("policy", "media", "granularity") if report.get(k)
    )
    lines = [
        f"Criss report for {report.get('home', 'this session')}"
        + (f" ({setting})" if setting else ""),
        f"  queries            {counters.get('queries', 0)}"
        + _share(counters.get("fallbacks", 0), "fell back to plain Spark"),
        f"  operators          {counters.get('operators_reused', 0)} reused, "
        f"{counters.get('operators_cached', 0)} cached, "
        f"{counters.get('operators_seen', 0)} seen",
        f"  partitions         {counters.get('partitions_reused', 0)} reused (hits), "
        f"{counters.get('partitions_recomputed', 0)} recomputed (misses)",
    ]
    lines += [_tier_line(name, tier) for name, tier in (report.get("tiers") or {}).items()]
    entries = report.get("entries") or []
    reusable = sum(len(e.get("reusable") or ()) for e in entries)
    total = sum(e.get("num_partitions") or 0 for e in entries)
    lines.append(f"  entries            {len(entries)} ({reusable}/{total} partitions reusable)")
    saved = _time_saved(report)
    if saved is not None:
        lines.append(f"  time saved         {saved:.2f} s")
    faults = {k: v for k, v in (report.get("faults") or {}).items() if v}
    if faults:
        lines.append("  faults             " + ", ".join(f"{k} {v}" for k, v in faults.items()))
    return lines


def _share(count: int, what: str) -> str:
    return f" ({count} {what})" if count else ""


def _tier_line(name: str, tier: dict[str, Any]) -> str:
    used, capacity = tier.get("used_bytes") or 0, tier.get("capacity_bytes")
    space = (
        f"{human_bytes(used)} of {human_bytes(capacity)}"
        if capacity
        else f"{human_bytes(used)} (no quota)"
    )
    return (
        f"  {name + ' tier':<18} {space}, {tier.get('partitions', 0)} partitions, "
        f"{tier.get('hits', 0)} hits, {tier.get('misses', 0)} misses"
    )


def _time_saved(report: dict[str, Any]) -> float | None:
    """Seconds saved, when the report carries them (``time_saved_seconds`` or ``time``)."""
    if report.get("time_saved_seconds") is not None:
        return float(report["time_saved_seconds"])
    time = report.get("time") or {}
    value = time.get("texec_saved_seconds") if isinstance(time, dict) else None
    return None if value is None else float(value)
