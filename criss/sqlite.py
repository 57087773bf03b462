"""Opening a SQLite catalog that several applications share (WAL, busy timeouts, retries),
or one read-only for the ``criss`` CLI and the dashboard (no schema, no pragma that writes)."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlite_utils

from criss.errors import CatalogError


def open_catalog(
    path: Path,
    *,
    timeout: float,
    setup: Callable[[sqlite_utils.Database], None],
    autocommit: bool = False,
    what: str = "catalog",
) -> sqlite_utils.Database:
    """Connect, switch to WAL and create the schema, retrying while another opener holds it.

    Switching journal mode and creating tables need a lock SQLite does not wait for through
    the busy handler in every case, and two openers may race to create the same table, so
    applications starting together retry here.
    """
    deadline = time.monotonic() + timeout
    while True:
        conn = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(path),
                timeout=timeout,
                check_same_thread=False,
                **({"isolation_level": None} if autocommit else {}),
            )
            conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a crash may lose the last update, never corrupt the file.
            conn.execute("PRAGMA synchronous=NORMAL")
            db = sqlite_utils.Database(conn)
            setup(db)
            return db
        except sqlite3.OperationalError as exc:
            if conn is not None:
                conn.close()
            retryable = "locked" in str(exc) or "already exists" in str(exc)
            if not retryable or time.monotonic() > deadline:
                raise CatalogError(f"cannot open the {what} {path}: {exc}") from exc
            time.sleep(random.uniform(0.01, 0.1))
        except (sqlite3.Error, OSError) as exc:
            if conn is not None:
                conn.close()
            raise CatalogError(f"cannot open the {what} {path}: {exc}") from exc


def open_read_only(
    path: Path, *, what: str = "catalog", timeout: float = 5.0
) -> sqlite_utils.Database:
    """Connect to ``path`` read-only (``file:...?mode=ro``): no schema, no WAL pragma.

    Safe while applications write the file (WAL readers never block writers). A file that
    is not there yet opens as an empty in-memory database, so every table reads as no rows
    (:func:`read_rows`) and nothing is created on disk. Any other failure (not a database,
    no permission) is a :class:`CatalogError` naming the file.

    >>> db = open_read_only(Path("/nowhere/catalog.db"), what="QTree catalog")
    >>> read_rows(db, "select * from nodes", what="QTree catalog", path=Path("/nowhere"))
    []
    """
    conn = None
    try:
        if path.is_file():
            uri = f"file:{quote(str(path.resolve()))}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
        else:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute("PRAGMA query_only=ON")
        conn.execute("select count(*) from sqlite_master").fetchone()  # not a database: here
        return sqlite_utils.Database(conn)
    except (sqlite3.Error, OSError) as exc:
        if conn is not None:
            conn.close()
        raise CatalogError(f"cannot open the {what} {path} read-only: {exc}") from exc


def read_rows(
    db: sqlite_utils.Database, sql: str, params: Sequence[Any] = (), *, what: str, path: Path
) -> list[dict[str, Any]]:
    """Rows of ``sql`` as dicts; a table not created yet reads as no rows (a home no session
    wrote that part of), any other failure is a :class:`CatalogError` naming the file."""
    try:
        return [dict(row) for row in db.query(sql, list(params))]
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise CatalogError(f"cannot read the {what} {path}: {exc}") from exc
    except sqlite3.Error as exc:
        raise CatalogError(f"cannot read the {what} {path}: {exc}") from exc


def refuse_if_read_only(writable: bool, *, what: str, path: Path, action: str) -> None:
    """Raise :class:`CatalogError` when a catalog opened read-only is asked to ``action``."""
    if not writable:
        raise CatalogError(f"cannot {action}: the {what} {path} was opened read-only")
