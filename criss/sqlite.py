"""Opening a SQLite catalog that several applications share (WAL, busy timeouts, retries)."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

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
