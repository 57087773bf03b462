"""The cache catalog: entries, their partitions, reuse bitmaps and pins, in SQLite.

One ``home`` has one catalog (``cache.db``), shared by every application using that
home: WAL mode and busy timeouts let them read concurrently, and decisions that change
tier usage run inside ``BEGIN IMMEDIATE`` so two writers never both spend the same room.
Bitmaps are pyroaring's portable serialization; nothing is pickled.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils
from pyroaring import BitMap

from criss.errors import CatalogError
from criss.sqlite import open_catalog, open_read_only, read_rows, refuse_if_read_only

#: Partitions with no rows write no file; their tier is this marker.
EMPTY = ""


@dataclass(frozen=True)
class PartitionRecord:
    key: str
    index: int
    tier: str
    name: str
    bytes: int
    rows: int
    crc: int

    @property
    def empty(self) -> bool:
        return self.tier == EMPTY


@dataclass(frozen=True)
class EntryRecord:
    """One cached operator result: ``num_partitions`` partitions, some of them reusable."""

    key: str
    op: str
    schema_json: str
    num_partitions: int
    #: Identifies how rows were split into partitions; recomputing a subset of partitions is
    #: only correct under the same layout.
    layout: str
    texec: float
    #: Bytes of all partitions when the entry was written (the base of each one's Texec share).
    total_bytes: int
    created: float
    bitmap: BitMap
    partitions: dict[int, PartitionRecord] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions.values())

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.partitions.values())

    @property
    def missing(self) -> list[int]:
        return sorted(set(range(self.num_partitions)) - set(self.bitmap))

    @property
    def complete(self) -> bool:
        return len(self.bitmap) == self.num_partitions


class CacheCatalog:
    """Entries and partitions of one cache space, stored in ``<home>/cache.db``.

    ``read_only=True`` (or :meth:`read_only`) opens it for reading only, as the ``criss``
    CLI and the dashboard do: every method that would change it raises CatalogError.
    """

    def __init__(
        self, db_path: str | Path, *, timeout: float = 10.0, read_only: bool = False
    ) -> None:
        self.path = Path(db_path)
        self.writable = not read_only
        if read_only:
            self.db = open_read_only(self.path, what="cache catalog", timeout=timeout)
        else:
            self.db = open_catalog(
                self.path,
                timeout=timeout,
                setup=_ensure_schema,
                autocommit=True,
                what="cache catalog",
            )
        self._depth = 0

    @classmethod
    def read_only(cls, db_path: str | Path, *, timeout: float = 5.0) -> CacheCatalog:
        """The catalog of ``db_path`` for reading only (``mode=ro``, nothing created): a file
        not there yet reads as a catalog with no entries.

        >>> CacheCatalog.read_only("/nowhere/cache.db").entries()
        []
        """
        return cls(db_path, timeout=timeout, read_only=True)

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return read_rows(self.db, sql, list(params), what="cache catalog", path=self.path)

    def _refuse_if_read_only(self, action: str) -> None:
        refuse_if_read_only(self.writable, what="cache catalog", path=self.path, action=action)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction holding the catalog lock (nested calls join the outer one)."""
        self._refuse_if_read_only("start a write transaction")
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise CatalogError(f"the cache catalog {self.path} is locked: {exc}") from exc
        self._depth = 1
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            self.db.execute("COMMIT")
        finally:
            self._depth = 0

    def _upsert(self, table: str, **row: object) -> None:
        # Plain SQL: sqlite-utils' insert wraps itself in ``with conn:``, which would commit
        # an enclosing BEGIN IMMEDIATE transaction early.
        self._refuse_if_read_only(f"write to {table}")
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self.db.execute(
            f"insert or replace into {table} ({columns}) values ({marks})", list(row.values())
        )

    # --- entries ---------------------------------------------------------------------------

    def entry(self, key: str) -> EntryRecord | None:
        rows = self._rows("select * from entries where key = ?", [key])
        if not rows:
            return None
        parts = self._rows("select * from partitions where key = ?", [key])
        return _entry(rows[0], [_partition(p) for p in parts])

    def entry_keys(self, limit: int) -> list[str] | None:
        """The key of every entry, or None when there are more than ``limit`` (one query;
        partitions not read)."""
        rows = self._rows("select key from entries limit ?", [limit + 1])
        return None if len(rows) > limit else [row["key"] for row in rows]

    def keys_held(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` that have an entry (one query; partitions not read)."""
        wanted = list(keys)
        if not wanted:
            return set()
        marks = ",".join("?" * len(wanted))
        rows = self._rows(f"select key from entries where key in ({marks})", wanted)
        return {row["key"] for row in rows}

    def entries(self) -> list[EntryRecord]:
        """Every entry with its partitions and decoded bitmap, oldest first."""
        parts: dict[str, list[PartitionRecord]] = {}
        for row in self._rows("select * from partitions"):
            parts.setdefault(row["key"], []).append(_partition(row))
        return [
            _entry(row, parts.get(row["key"], []))
            for row in self._rows("select * from entries order by created")
        ]

    def put_entry(
        self,
        key: str,
        *,
        op: str,
        schema_json: str,
        num_partitions: int,
        layout: str,
        texec: float,
        total_bytes: int,
    ) -> EntryRecord:
        """Create entry ``key`` with no reusable partition (replacing any old record)."""
        with self.transaction():
            self.db.execute("delete from partitions where key = ?", [key])
            self._upsert(
                "entries",
                key=key,
                op=op,
                schema_json=schema_json,
                num_partitions=num_partitions,
                layout=layout,
                texec=texec,
                total_bytes=total_bytes,
                created=time.time(),
                bitmap=BitMap().serialize(),
            )
        entry = self.entry(key)
        assert entry is not None
        return entry

    def set_measurements(self, key: str, *, texec: float, total_bytes: int) -> EntryRecord:
        """Record the measured Texec and size of a freshly written entry."""
        self._refuse_if_read_only("record measurements")
        self.db.execute(
            "update entries set texec = ?, total_bytes = ? where key = ?", [texec, total_bytes, key]
        )
        entry = self.entry(key)
        if entry is None:
            raise CatalogError(f"cache entry {key} vanished while it was written")
        return entry

    def delete_entry(self, key: str) -> list[PartitionRecord]:
        """Forget entry ``key``; returns its partitions so their files can be deleted."""
        with self.transaction():
            entry = self.entry(key)
            self.db.execute("delete from partitions where key = ?", [key])
            self.db.execute("delete from entries where key = ?", [key])
        return list(entry.partitions.values()) if entry else []

    # --- partitions ------------------------------------------------------------------------

    def add_partition(self, record: PartitionRecord) -> None:
        """Record a committed partition and mark it reusable in its entry's bitmap."""
        with self.transaction():
            self._upsert(
                "partitions",
                key=record.key,
                idx=record.index,
                tier=record.tier,
                name=record.name,
                bytes=record.bytes,
                rows=record.rows,
                crc=record.crc,
            )
            self._update_bitmap(record.key, add=record.index)

    def drop_partition(self, key: str, index: int) -> PartitionRecord | None:
        """Mark partition ``index`` of ``key`` not reusable; returns what was recorded."""
        with self.transaction():
            rows = self._rows("select * from partitions where key = ? and idx = ?", [key, index])
            self.db.execute("delete from partitions where key = ? and idx = ?", [key, index])
            self._update_bitmap(key, discard=index)
        return _partition(rows[0]) if rows else None

    def move_partition(self, key: str, index: int, tier: str) -> None:
        self._refuse_if_read_only("move a partition")
        self.db.execute(
            "update partitions set tier = ? where key = ? and idx = ?", [tier, key, index]
        )

    def _update_bitmap(self, key: str, add: int | None = None, discard: int | None = None) -> None:
        rows = self._rows("select bitmap from entries where key = ?", [key])
        if not rows:
            raise CatalogError(f"no cache entry {key} to record a partition of")
        bitmap = BitMap.deserialize(rows[0]["bitmap"])
        if add is not None:
            bitmap.add(add)
        if discard is not None:
            bitmap.discard(discard)
        self.db.execute("update entries set bitmap = ? where key = ?", [bitmap.serialize(), key])

    def partitions(self, tier: str | None = None) -> list[PartitionRecord]:
        if tier is None:
            rows = self._rows("select * from partitions where tier != ?", [EMPTY])
        else:
            rows = self._rows("select * from partitions where tier = ?", [tier])
        return [_partition(r) for r in rows]

    def used_bytes(self) -> dict[str, int]:
        return {
            row["tier"]: row["used"]
            for row in self._rows(
                "select tier, sum(bytes) as used from partitions where tier != ? group by tier",
                [EMPTY],
            )
        }

    def clear(self) -> None:
        with self.transaction():
            self.db.execute("delete from partitions")
            self.db.execute("delete from entries")

    # --- pins across applications -------------------------------------------------------------

    def publish_pins(self, owner: str, keys: set[str]) -> None:
        """Record the entries this application's live DataFrames read."""
        self._upsert(
            "pins",
            owner=owner,
            host=socket.gethostname(),
            pid=os.getpid(),
            keys=json.dumps(sorted(keys)),
            updated=time.time(),
        )

    def pinned_by_others(self, owner: str) -> set[str]:
        """Entries pinned by other applications that are still alive (the rows of dead
        processes on this host are deleted, unless the catalog is open read-only)."""
        host = socket.gethostname()
        pinned: set[str] = set()
        for row in self._rows("select * from pins where owner != ?", [owner]):
            if row["host"] == host and not _alive(row["pid"]):
                if self.writable:
                    self.db.execute("delete from pins where owner = ?", [row["owner"]])
                continue
            pinned.update(json.loads(row["keys"]))
        return pinned

    def other_owners_alive(self, owner: str) -> bool:
        """Whether another application has this cache open (its pin row is live)."""
        self.pinned_by_others(owner)  # prunes rows of dead processes on this host
        rows = self._rows("select count(*) as n from pins where owner != ?", [owner])
        return bool(rows) and rows[0]["n"] > 0

    def forget_owner(self, owner: str) -> None:
        self._refuse_if_read_only("forget an owner's pins")
        self.db.execute("delete from pins where owner = ?", [owner])

    def close(self) -> None:
        self.db.conn.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _partition(row: dict) -> PartitionRecord:
    return PartitionRecord(
        key=row["key"],
        index=row["idx"],
        tier=row["tier"],
        name=row["name"],
        bytes=row["bytes"],
        rows=row["rows"],
        crc=row["crc"],
    )


def _entry(row: dict, partitions: list[PartitionRecord]) -> EntryRecord:
    return EntryRecord(
        key=row["key"],
        op=row["op"],
        schema_json=row["schema_json"],
        num_partitions=row["num_partitions"],
        layout=row["layout"],
        texec=row["texec"],
        total_bytes=row["total_bytes"] or 0,
        created=row["created"],
        bitmap=BitMap.deserialize(row["bitmap"]) if row["bitmap"] else BitMap(),
        partitions={p.index: p for p in partitions},
    )


def _ensure_schema(db: sqlite_utils.Database) -> None:
    tables = set(db.table_names())
    if "entries" not in tables:
        db["entries"].create(
            {
                "key": str,
                "op": str,
                "schema_json": str,
                "num_partitions": int,
                "layout": str,
                "texec": float,
                "total_bytes": int,
                "created": float,
                "bitmap": bytes,
            },
            pk="key",
        )
    if "partitions" not in tables:
        db["partitions"].create(
            {
                "key": str,
                "idx": int,
                "tier": str,
                "name": str,
                "bytes": int,
                "rows": int,
                "crc": int,
            },
            pk=("key", "idx"),
        )
        db["partitions"].create_index(["tier"])
    if "pins" not in tables:
        db["pins"].create(
            {"owner": str, "host": str, "pid": int, "keys": str, "updated": float},
            pk="owner",
        )
