"""The partition-granular hybrid cache: entries split into partitions across tiers.

An *entry* is one operator's result in ``num_partitions`` partitions. Each partition is
one Parquet file in one tier (or no file when it is empty), recorded in the catalog with
its tier, bytes, rows and CRC-32; the entry's bitmap says which partitions are reusable.
Where a partition goes, and what makes room for it, is decided by
:mod:`policies.placement` from benefits computed with each tier's bandwidth (paper §1.5).

Faults degrade to recomputation: a partition whose file is missing, truncated, corrupt
or unreadable is dropped from the bitmap when it is looked up, so the engine recomputes
it. Partitions pinned by a live DataFrame (of this or another application sharing the
home) are never moved or evicted.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from criss.errors import StorageError
from criss.policies.benefit import BenefitModel
from criss.policies.placement import Move, Placement, TierRoom, Unit, plan_promotion, plan_write
from criss.storage.catalog import EMPTY, CacheCatalog, EntryRecord, PartitionRecord
from criss.storage.staging import Staged, Staging, crc32
from criss.storage.tiers import Tier, move_file

GRANULARITIES = ("partition", "operator")
#: Verified partition files remembered before the memory starts over (each is checked again
#: once): deleted and replaced files would otherwise stay in it for the process's life.
VERIFIED_LIMIT = 100_000

#: key → (ref, recency) of the operators named; supplied by the engine from the QTree.
Usage = Callable[[Iterable[str]], Mapping[str, tuple[int, float]]]


@dataclass
class TierCounters:
    """Traffic of one tier in this application: partitions read (hits), found missing or
    damaged when needed (misses), bytes moved, and placement moves into or out of it."""

    hits: int = 0
    misses: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    promotions: int = 0
    demotions: int = 0
    evictions: int = 0


@dataclass
class StoreResult:
    """What became of freshly computed partitions of one entry."""

    #: Partitions now in the cache: index → where Spark reads it (None: empty, no file).
    stored: dict[int, str | None] = field(default_factory=dict)
    #: Partitions the cache had no room for: index → local file, readable by this query only.
    leftovers: dict[int, str] = field(default_factory=dict)
    bytes_written: int = 0
    #: Bytes and rows of everything computed (stored and leftovers).
    bytes: int = 0
    rows: int = 0

    def add_leftover(self, index: int, uri: str, size: int, rows: int) -> None:
        """Partition ``index`` stays in the staged file ``uri`` (this query reads it there)."""
        self.leftovers[index] = uri
        self.bytes += size
        self.rows += rows

    def files(self) -> dict[int, str]:
        """index → file for every partition that has one."""
        found = {i: uri for i, uri in self.stored.items() if uri is not None}
        return {**found, **self.leftovers}


class PartitionCache:
    """Cached operator results of one ``home``, partition by partition, over ordered tiers.

    ``tiers`` is the placement order (fastest first: memory, disk); ``readable`` adds
    tiers that may still hold data but take no new writes (e.g. memory in disk-only mode).
    """

    def __init__(
        self,
        catalog_path: Path,
        tiers: list[Tier],
        *,
        policy: BenefitModel,
        usage: Usage,
        granularity: str = "partition",
        readable: Iterable[Tier] = (),
        timeout: float = 10.0,
    ) -> None:
        if granularity not in GRANULARITIES:
            raise StorageError(f"granularity must be one of {GRANULARITIES}, not {granularity!r}")
        if not tiers:
            raise StorageError("a cache needs at least one tier")
        self.catalog = CacheCatalog(catalog_path, timeout=timeout)
        self.order = [t.name for t in tiers]
        readable = list(readable)
        self.tiers: dict[str, Tier] = {t.name: t for t in (*tiers, *readable)}
        self.staging = Staging(list(tiers), readable)
        self.policy = policy
        self.usage = usage
        self.granularity = granularity
        self.counters = {name: TierCounters() for name in self.tiers}
        self.faults: Counter = Counter()
        #: Partitions computed but not stored: no tier could make room for them.
        self.refused = 0
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._pins: Counter = Counter()
        #: Reentrant: a finalizer's ``unpin`` may run in this thread while it holds the lock.
        self._pin_lock = threading.RLock()
        #: Partition files whose CRC and rows were checked, by (tier, name, bytes, version).
        self._verified: set[tuple[str, str, int, int]] = set()
        self.reconcile()

    # --- lookup ------------------------------------------------------------------------------

    def lookup(self, key: str) -> EntryRecord | None:
        """Entry ``key`` with only its verified partitions marked reusable, or None."""
        entry = self.catalog.entry(key)
        if entry is None:
            return None
        for index in list(entry.bitmap):
            record = entry.partitions.get(index)
            if record is None or not self._intact(record):
                self._drop(key, index, record, reason="damaged or missing")
        entry = self.catalog.entry(key)
        if entry is None or (not entry.bitmap and entry.num_partitions):
            return None
        if self.granularity == "operator" and not entry.complete:
            return None  # operator granularity: a partial result is no result
        return entry

    def _intact(self, record: PartitionRecord) -> bool:
        """Size against the catalog always; CRC-32 and footer rows once per file version."""
        if record.empty:
            return True
        tier = self.tiers.get(record.tier)
        if tier is None:
            return False
        local = tier.local_path(record.name)
        try:
            if local is not None:
                stat = os.stat(local)
                size, version = stat.st_size, stat.st_mtime_ns
            else:
                size, version = tier.size(record.name), 0
        except OSError:
            return False
        if size != record.bytes:
            return False
        token = (record.tier, record.name, record.bytes, version)
        if token in self._verified:
            return True
        try:
            with tier.open(record.name) as reader:
                if crc32(reader) != record.crc:
                    return False
            if local is not None and pq.ParquetFile(local).metadata.num_rows != record.rows:
                return False
        except (OSError, StorageError, ValueError):  # pyarrow's errors derive from these
            return False
        if len(self._verified) >= VERIFIED_LIMIT:  # files long gone stay in it otherwise
            self._verified.clear()
        self._verified.add(token)
        return True

    def _drop(self, key: str, index: int, record: PartitionRecord | None, reason: str) -> None:
        self.catalog.drop_partition(key, index)
        self.faults[reason] += 1
        if record is not None and record.tier in self.counters and reason != "cleared":
            self.counters[record.tier].misses += 1
        if record is not None and not record.empty and record.tier in self.tiers:
            try:
                self.tiers[record.tier].delete(record.name)
            except (OSError, StorageError):
                pass

    def uris(self, entry: EntryRecord) -> list[str]:
        """Files of every reusable, non-empty partition, in partition order."""
        return list(self.uris_by_index(entry).values())

    def uris_by_index(self, entry: EntryRecord) -> dict[int, str]:
        """index → file of every reusable, non-empty partition, in partition order."""
        return {
            index: self.tiers[record.tier].uri(record.name)
            for index in sorted(entry.bitmap)
            if not (record := entry.partitions[index]).empty
        }

    def record_reads(self, entry: EntryRecord) -> None:
        for index in entry.bitmap:
            record = entry.partitions[index]
            if not record.empty:
                counters = self.counters[record.tier]
                counters.hits += 1
                counters.bytes_read += record.bytes

    # --- writing -----------------------------------------------------------------------------

    def staging_dir(self, key: str) -> Staged:
        """A fresh directory (not created) for Spark to write ``key``'s partitions into."""
        return self.staging.new(key)

    def unstored(self, staged: Staged, indices: list[int]) -> StoreResult:
        """Spark's output kept out of the cache entirely (read by this query only)."""
        result = StoreResult()
        for index, file in self.staging.files(staged, indices).items():
            if file is not None:
                self._leave(result, index, file)
        return result

    def _leave(self, result: StoreResult, index: int, file: Staged) -> None:
        staging = self.staging
        result.add_leftover(index, staging.uri(file), staging.size(file), staging.rows(file))

    def begin(
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
        """Start (or restart) entry ``key``; its old partitions are deleted.

        Raises StorageError when another application's live DataFrame reads ``key``.
        """
        with self.catalog.transaction():
            if self.pinned_elsewhere(key):
                raise StorageError(f"cache entry {key} is being read by another application")
            old = self.catalog.delete_entry(key)
            entry = self.catalog.put_entry(
                key,
                op=op,
                schema_json=schema_json,
                num_partitions=num_partitions,
                layout=layout,
                texec=texec,
                total_bytes=total_bytes,
            )
        for record in old:
            if not record.empty and record.tier in self.tiers:
                self.tiers[record.tier].delete(record.name)
        return entry

    def store(self, entry: EntryRecord, staged: Staged, indices: list[int]) -> StoreResult:
        """Place Spark's output in ``staged`` (task k computed partition ``indices[k]``)."""
        return self.store_files(entry, self.staging.files(staged, indices))

    def store_files(self, entry: EntryRecord, files: Mapping[int, Staged | None]) -> StoreResult:
        """Place partition files (index → file, None: no rows) in the tiers, unit by unit;
        what no tier had room for is returned as leftovers."""
        result = StoreResult()
        units = self._units_of_new(entry, files)
        usage = dict(self.usage({entry.key}))
        for unit in units:
            with self.catalog.transaction():
                placement = plan_write(unit, self._rooms(), self._residents(usage, entry.key))
                if placement.tier is not None:
                    self._execute(placement.steps)
                    self._commit(entry, unit, files, placement.tier, result)
                    continue
            self.refused += len(unit.indices)
            for index in unit.indices:
                if files[index] is not None:
                    self._leave(result, index, files[index])
        return result

    def _units_of_new(self, entry: EntryRecord, files: Mapping[int, Staged | None]) -> list[Unit]:
        sizes = {i: (self.staging.size(f) if f is not None else 0) for i, f in files.items()}
        groups = [tuple(sorted(files))] if self.granularity == "operator" else [(i,) for i in files]
        (ref, recency) = self.usage([entry.key]).get(entry.key, (1, 1.0))
        return [
            Unit(
                entry.key,
                group,
                sum(sizes[i] for i in group),
                self._benefits(entry, sum(sizes[i] for i in group), ref, recency),
            )
            for group in groups
        ]

    def _commit(
        self,
        entry: EntryRecord,
        unit: Unit,
        files: Mapping[int, Staged | None],
        tier_name: str,
        result: StoreResult,
    ) -> None:
        tier = self.tiers[tier_name]
        for index in unit.indices:
            local = files[index]
            if local is None:
                self.catalog.add_partition(PartitionRecord(entry.key, index, EMPTY, "", 0, 0, 0))
                result.stored[index] = None
                continue
            rows, crc = self.staging.rows(local), self.staging.crc(local)
            name = f"{entry.key}/{index:05d}-{uuid.uuid4().hex[:8]}.parquet"
            size = self.staging.place(local, tier, name)
            self.catalog.add_partition(
                PartitionRecord(entry.key, index, tier_name, name, size, rows, crc)
            )
            self.counters[tier_name].bytes_written += size
            result.stored[index] = tier.uri(name)
            result.bytes_written += size
            result.bytes += size
            result.rows += rows

    def locations(self) -> tuple[str, ...]:
        """Where each tier's files are (a local directory, or a URI prefix), as they
        appear in Spark's error messages."""
        found = []
        for tier in self.tiers.values():
            root = tier.local_root()
            found.append(str(root) if root is not None else tier.uri(_PROBE)[: -len(_PROBE)])
        return tuple(found)

    def tiers_in_use(self) -> list[Tier]:
        """Tiers Spark may read or write: those taking writes, and others holding files."""
        return [tier for name, tier in self.tiers.items() if name in self.order or tier.list()]

    # --- placement ---------------------------------------------------------------------------

    def _rooms(self) -> list[TierRoom]:
        used = self.catalog.used_bytes()
        return [
            TierRoom(name, self.tiers[name].capacity_bytes, used.get(name, 0))
            for name in self.order
        ]

    def _residents(self, usage: dict[str, tuple[int, float]], writing: str = "") -> list[Unit]:
        """Every stored unit with its benefit per tier; ``writing``'s own units are pinned."""
        entries = {e.key: e for e in self.catalog.entries()}
        missing = set(entries) - set(usage)
        if missing:
            usage.update(self.usage(missing))
        pinned = self.pinned() | {writing}
        groups: dict[tuple[str, str], list[PartitionRecord]] = {}
        for entry in entries.values():
            for record in entry.partitions.values():
                if record.empty:
                    continue
                group = (
                    entry.key if self.granularity == "operator" else f"{entry.key}/{record.index}"
                )
                groups.setdefault((group, record.tier), []).append(record)
        units = []
        for (_, tier), records in groups.items():
            key = records[0].key
            size = sum(r.bytes for r in records)
            ref, recency = usage.get(key, (1, 1.0))
            units.append(
                Unit(
                    key,
                    tuple(sorted(r.index for r in records)),
                    size,
                    self._benefits(entries[key], size, ref, recency),
                    tier=tier,
                    pinned=key in pinned,
                )
            )
        return units

    def _benefits(self, entry: EntryRecord, size: int, ref: int, recency: float) -> dict:
        """Benefit of ``size`` bytes of ``entry`` kept in each tier (its share of Texec)."""
        total = entry.total_bytes or size or 1
        texec = entry.texec * size / total
        return {
            name: self.policy.benefit(
                ref=ref,
                texec=texec,
                size_bytes=float(size),
                bandwidth=tier.bandwidth or 1e9,
                recency=recency,
            )
            for name, tier in self.tiers.items()
        }

    def _execute(self, steps: Iterable[Move]) -> None:
        for move in steps:
            unit = move.unit
            assert unit.tier is not None
            record = self.catalog.entry(unit.key)
            for index in unit.indices:
                part = record.partitions.get(index) if record else None
                if part is None or part.tier != unit.tier:
                    continue  # another application moved it meanwhile
                if move.to is None:
                    self.tiers[unit.tier].delete(part.name)
                    self.catalog.drop_partition(unit.key, index)
                    self.counters[unit.tier].evictions += 1
                else:
                    move_file(self.tiers[unit.tier], self.tiers[move.to], part.name)
                    self.catalog.move_partition(unit.key, index, move.to)
                    self.counters[move.to].demotions += 1

    def promote(self, entry: EntryRecord) -> int:
        """Move reused partitions in slower tiers to the fastest one when they earn it."""
        fastest = self.order[0]
        slower = [p for p in entry.partitions.values() if p.tier not in (fastest, EMPTY)]
        if len(self.order) < 2 or not slower or entry.key in self.pinned():
            return 0
        promoted = 0
        usage = dict(self.usage({entry.key}))
        with self.catalog.transaction():
            residents = self._residents(usage)
            mine = [u for u in residents if u.key == entry.key and u.tier not in (fastest, EMPTY)]
            for unit in mine:
                decision: Placement = plan_promotion(unit, self._rooms(), self._residents(usage))
                if decision.tier is None:
                    continue
                self._execute(decision.steps)
                self._execute([Move(unit, decision.tier)])
                self.counters[fastest].promotions += len(unit.indices)
                self.counters[fastest].demotions -= len(unit.indices)
                promoted += len(unit.indices)
        return promoted

    # --- pins --------------------------------------------------------------------------------

    def pin(self, keys: Iterable[str]) -> None:
        """Protect entries from eviction and replacement, here and in other applications."""
        with self._pin_lock:
            self._pins.update(keys)
            live = self._live_pins()
        self.catalog.publish_pins(self.owner, live)

    def unpin(self, keys: Iterable[str]) -> None:
        """Release pins (safe from a finalizer: only memory is touched, published later)."""
        with self._pin_lock:
            self._pins.subtract(keys)

    def pin_count(self, key: str) -> int:
        return self._pins.get(key, 0)

    def pinned_elsewhere(self, key: str) -> bool:
        """Whether another live application's DataFrames read ``key``."""
        return key in self.catalog.pinned_by_others(self.owner)

    def _live_pins(self) -> set[str]:
        """The keys pinned now; released ones leave the map, which would otherwise keep
        every key this application ever read. Called with ``_pin_lock`` held, so a key
        dropped here is not being pinned by another thread."""
        live = set()
        for key, count in list(self._pins.items()):
            if count > 0:
                live.add(key)
            else:
                self._pins.pop(key, None)
        return live

    def pinned(self) -> set[str]:
        with self._pin_lock:
            mine = self._live_pins()
        self.catalog.publish_pins(self.owner, mine)
        return mine | self.catalog.pinned_by_others(self.owner)

    # --- maintenance -------------------------------------------------------------------------

    def delete(self, key: str) -> None:
        """Forget entry ``key``; files a live DataFrame reads stay until the next start."""
        keep_files = key in self.pinned()
        for record in self.catalog.delete_entry(key):
            if not keep_files and not record.empty and record.tier in self.tiers:
                self.tiers[record.tier].delete(record.name)

    def clear(self, tier: str | None = None) -> None:
        """Drop every unpinned entry (or only the partitions stored in ``tier``)."""
        pinned = self.pinned()
        for entry in self.catalog.entries():
            if entry.key in pinned:
                continue
            if tier is None:
                self.delete(entry.key)
                continue
            for record in entry.partitions.values():
                if record.tier == tier:
                    self._drop(entry.key, record.index, record, reason="cleared")

    def reconcile(self) -> dict[str, int]:
        """Make catalog and tiers agree: after a crash, or files removed behind our back.

        Temporary files and files no entry records are removed only when no other live
        application shares this home (theirs may be mid-write).
        """
        self.catalog.publish_pins(self.owner, set())
        report = Counter()
        alone = not self.catalog.other_owners_alive(self.owner)
        for name, tier in self.tiers.items():
            recorded = {p.name: p for p in self.catalog.partitions(name)}
            present = tier.list()
            for record in recorded.values():
                if present.get(record.name) != record.bytes:
                    self._drop(record.key, record.index, record, reason="missing at start")
                    report["dropped"] += 1
            if alone:
                report["temp_removed"] += tier.clean_temp()
                for orphan in set(present) - set(recorded):
                    tier.delete(orphan)
                    report["orphans_removed"] += 1
        self.faults.update(report)
        return dict(report)

    def report(self) -> dict[str, Any]:
        used = self.catalog.used_bytes()
        counts = Counter(p.tier for p in self.catalog.partitions())
        tiers = {
            name: {
                "used_bytes": used.get(name, 0),
                "capacity_bytes": tier.capacity_bytes,
                "bandwidth": tier.bandwidth,
                "partitions": counts.get(name, 0),
                "writable": name in self.order,
                **vars(self.counters[name]),
            }
            for name, tier in self.tiers.items()
        }
        return {
            "tiers": tiers,
            "entries": [self.describe(e) for e in self.catalog.entries()],
            "partitions_refused": self.refused,
        }

    def describe(self, entry: EntryRecord) -> dict[str, Any]:
        marks = {name: name[0].upper() for name in self.tiers}
        strip = "".join(
            "." if i not in entry.bitmap else marks.get(entry.partitions[i].tier, "0")
            for i in range(entry.num_partitions)
        )
        return {
            "key": entry.key,
            "op": entry.op,
            "num_partitions": entry.num_partitions,
            "reusable": sorted(entry.bitmap),
            "bitmap": strip,
            "bytes": entry.bytes,
            "rows": entry.rows,
            "texec": entry.texec,
            "created": entry.created,
        }

    def close(self) -> None:
        self.catalog.forget_owner(self.owner)  # this application no longer pins anything
        self.catalog.close()


_PROBE = "probe"
