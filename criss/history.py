"""A bounded log of the queries planned through Criss, for the dashboard and ``criss`` CLI.

Stored in the home's ``catalog.db`` (table ``queries``) so any process can read it.
Recording is best effort: a locked or broken log never fails a query. A query's explain
text and decisions (~15 KB of text, most of the log) are kept zlib-compressed; rows
written before that are plain text and read as they are.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
import zlib
from pathlib import Path
from typing import Any

import sqlite_utils

from criss.sqlite import open_catalog, open_read_only, read_rows, refuse_if_read_only

log = logging.getLogger("criss")

#: Rows kept; older ones are deleted as new ones arrive.
KEEP = 2000

#: What a session counts (``cs.report()["counters"]``); each logged query carries its share.
COUNTERS = (
    "queries",
    "operators_seen",
    "operators_matched",
    "operators_reused",
    "operators_cached",
    "partitions_reused",
    "partitions_recomputed",
    "bytes_written",
    "bytes_read",
    "fallbacks",
    "fallbacks_at_execution",
    "invalidated",
    "operators_forgotten",
    "entries_forgotten",
    "statistics_from_execution",
    "results_ordered_on_driver",
    "entries_written_on_driver",
    "operators_written_through",
    "partitions_written_through",
    "operators_cached_in_action",
    "partitions_cached_in_action",
)


def _ensure_schema(db: sqlite_utils.Database) -> None:
    if "queries" not in db.table_names():
        db["queries"].create(
            {
                "id": int,
                "at": float,
                "pid": int,
                "sql": str,
                "planning_seconds": float,
                "materialize_seconds": float,
                "counters": str,
                "fallback": str,
                "explain": str,
                "decisions": str,
            },
            pk="id",
        )
    elif "decisions" not in db["queries"].columns_dict:  # a log written before decisions
        try:
            db["queries"].add_column("decisions", str)
        except sqlite3.OperationalError as exc:  # another application added it just now
            if "duplicate column" not in str(exc):
                raise


class QueryHistory:
    """The query log of one home. ``read_only=True`` (or :meth:`read_only`) opens it for
    reading only: :meth:`record` then raises CatalogError instead of logging."""

    def __init__(self, db_path: Path, *, timeout: float = 10.0, read_only: bool = False) -> None:
        self.path = Path(db_path)
        self.writable = not read_only
        if read_only:
            self.db = open_read_only(self.path, what="query log", timeout=timeout)
        else:
            self.db = open_catalog(
                self.path, timeout=timeout, setup=_ensure_schema, what="query log"
            )

    @classmethod
    def read_only(cls, db_path: str | Path, *, timeout: float = 5.0) -> QueryHistory:
        """The log in ``db_path`` for reading only (``mode=ro``, nothing created): a file or
        table not there yet reads as no queries.

        >>> QueryHistory.read_only("/nowhere/catalog.db").recent()
        []
        """
        return cls(Path(db_path), timeout=timeout, read_only=True)

    def record(
        self,
        *,
        sql: str | None,
        planning_seconds: float,
        materialize_seconds: float,
        counters: dict[str, int],
        fallback: str | None,
        explain: str,
        decisions: str | None = None,
    ) -> int | None:
        """Log one query: its counters, its explain text (for people) and its decisions as
        JSON (``criss.records``: what the CLI and the dashboard read); its id in the log."""
        refuse_if_read_only(self.writable, what="query log", path=self.path, action="log a query")
        try:
            with self.db.conn:
                cursor = self.db.execute(
                    "insert into queries (at, pid, sql, planning_seconds, materialize_seconds, "
                    "counters, fallback, explain, decisions) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        time.time(),
                        os.getpid(),
                        sql,
                        planning_seconds,
                        materialize_seconds,
                        json.dumps(counters),
                        fallback,
                        _packed(explain),
                        _packed(decisions),
                    ],
                )
                if cursor.lastrowid and cursor.lastrowid % 100 == 0:
                    self.db.execute("delete from queries where id <= ?", [cursor.lastrowid - KEEP])
            return cursor.lastrowid
        except Exception as exc:  # any type (SQLite, encoding a text): the log is best effort
            log.warning("could not record the query in the log: %s", exc)
            return None

    def update_counters(self, query_id: int, counters: dict[str, int]) -> None:
        """Replace a logged query's counters (what its action cached after it was planned)."""
        try:
            with self.db.conn:
                self.db.execute(
                    "update queries set counters = ? where id = ?", [json.dumps(counters), query_id]
                )
        except sqlite3.Error as exc:
            log.warning("could not update the query log: %s", exc)

    def recent(self, limit: int | None = 50) -> list[dict[str, Any]]:
        """Logged queries, newest first (every one when ``limit`` is None), each row as
        stored with its ``counters`` decoded; ``decisions`` stays the JSON text
        (:func:`criss.records.operators_from_json` reads it)."""
        sql = "select * from queries order by id desc" + (" limit ?" if limit else "")
        rows = read_rows(self.db, sql, [limit] if limit else [], what="query log", path=self.path)
        return [
            {
                **row,
                "counters": _counters(row["counters"]),
                "explain": _unpacked(row.get("explain")),
                "decisions": _unpacked(row.get("decisions")),
            }
            for row in rows
        ]

    def close(self) -> None:
        self.db.conn.close()


def _packed(text: str | None) -> bytes | None:
    return None if text is None else zlib.compress(text.encode(), 6)


def _unpacked(value: str | bytes | None) -> str | None:
    """A logged text: compressed (bytes), or plain from a log written before compression."""
    if isinstance(value, bytes):
        try:
            return zlib.decompress(value).decode()
        except (zlib.error, UnicodeDecodeError):
            return None
    return value


def _counters(text: str | None) -> dict[str, Any]:
    try:
        counters = json.loads(text or "{}")
    except ValueError:
        return {}
    return counters if isinstance(counters, dict) else {}
