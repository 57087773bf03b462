"""The query log as the CLI and the dashboard show it: each logged query with what it
reused and cached, read from the decisions it stored as JSON (``criss.records``), never
from its explain text (which is for people)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from criss.history import QueryHistory
from criss.inspect.home import open_home
from criss.records import operators_from_json


def logged_queries(history: QueryHistory, limit: int | None = None) -> list[dict[str, Any]]:
    """Logged queries, newest first, with what they reused and cached read from the
    decisions each query stored as JSON (a row logged before decisions were stored shows
    its counters only)."""
    rows = history.recent(limit)
    for row in rows:
        operators = operators_from_json(row.pop("decisions", None))
        row["reused"] = [
            {
                "key": o.entry,
                "rule": o.rule,
                "partitions": o.served.reused if o.served else None,
                "of": o.served.total if o.served else None,
            }
            for o in operators
            if o.reused
        ]
        row["cached"] = sorted({o.fingerprint for o in operators if o.cached})
    return rows


def load_queries(home: str | Path, limit: int = 50) -> list[dict[str, Any]]:
    """The most recent queries of the log: times, counters, reused and cached entries, explain."""
    with open_home(home) as h:
        return logged_queries(h.history, limit)
