"""A bounded log of the queries planned through Criss, for the dashboard and ``criss`` CLI.

Stored in the home's ``catalog.db`` (table ``queries``) so any process can read it.
Recording is best effort: a locked or broken log never fails a query.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import sqlite_utils

from criss.errors import CatalogError
from criss.sqlite import open_catalog

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
    "invalidated",
    "statistics_from_execution",
    "results_ordered_on_driver",
    "entries_written_on_driver",
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
            },
            pk="id",
        )


class QueryHistory:
    def __init__(self, db_path: Path, *, timeout: float = 10.0) -> None:
        self.db = open_catalog(db_path, timeout=timeout, setup=_ensure_schema, what="query log")

    def record(
        self,
        *,
        sql: str | None,
        planning_seconds: float,
        materialize_seconds: float,
        counters: dict[str, int],
        fallback: str | None,
        explain: str,
    ) -> None:
        try:
            with self.db.conn:
                cursor = self.db.execute(
                    "insert into queries (at, pid, sql, planning_seconds, materialize_seconds, "
                    "counters, fallback, explain) values (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        time.time(),
                        os.getpid(),
                        sql,
                        planning_seconds,
                        materialize_seconds,
                        json.dumps(counters),
                        fallback,
                        explain,
                    ],
                )
                if cursor.lastrowid and cursor.lastrowid % 100 == 0:
                    self.db.execute("delete from queries where id <= ?", [cursor.lastrowid - KEEP])
        except sqlite3.Error as exc:
            log.warning("could not record the query in the log: %s", exc)

    def recent(self, limit: int = 50) -> list[dict[str, Any]]:
        try:
            rows = self.db.query("select * from queries order by id desc limit ?", [limit])
            return [{**r, "counters": json.loads(r["counters"] or "{}")} for r in rows]
        except sqlite3.Error as exc:
            raise CatalogError(f"cannot read the query log: {exc}") from exc

    def close(self) -> None:
        self.db.conn.close()
