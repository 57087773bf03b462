"""Act, part one: serve matched operators from their cached entries.

Each entry is pinned (nobody may move or evict it while the DataFrame lives), promoted
when it beats what memory holds, and completed when partitions are missing: only those
are recomputed when the recomputation's layout is the entry's (paper §1.5).
"""

from __future__ import annotations

import time

from criss.planner.match import CacheView
from criss.planner.workspace import Source, Workspace
from criss.qtree.rewrite import Reuse
from criss.records import Served
from criss.storage.catalog import EntryRecord

ServedReuses = dict[tuple[int, ...], tuple[Reuse, Served]]


def serve(work: Workspace, view: CacheView) -> ServedReuses:
    """Every reuse the match found that could be served, by path, with how it was served."""
    served = {}
    for reuse in work.matched.reuses:
        counts = _serve_one(work, view, reuse)
        if counts is not None:
            served[reuse.path] = (reuse, counts)
    return served


def would_serve(
    view: CacheView, reuses: list[Reuse]
) -> dict[tuple[int, ...], tuple[Reuse, Served]]:
    """What :func:`serve` would do, without pinning, promoting or recomputing (dry run)."""
    served = {}
    for reuse in reuses:
        entry = view.entries[reuse.fingerprint]
        counts = Served(len(entry.bitmap), len(entry.missing), entry.num_partitions, entry.bytes)
        served[reuse.path] = (reuse, counts)
    return served


def _serve_one(work: Workspace, view: CacheView, reuse: Reuse) -> Served | None:
    """Serve ``reuse.path`` from its cached entry, per rewrite rule (None: it could not)."""
    key = reuse.fingerprint
    if key in work.sources:  # the same entry serves another place of this query
        entry = view.entries[key]
        counts = Served(len(entry.bitmap), 0, entry.num_partitions, entry.bytes)
    else:
        counts = _open(work, view, reuse)
        if counts is None:
            return None
    if reuse.rule == "exchange-repartition":
        cached = work.read_plan(reuse.path, key)
        wanted = work.captured.node_at(reuse.path)
        work.replacements[reuse.path] = work.session.bridge.with_children(wanted, [cached])
    elif reuse.derivation is not None:
        work.place_derived(reuse.path, key, reuse.derivation)
    else:
        work.place_read(reuse.path, key, reuse.columns)
    return counts


def _open(work: Workspace, view: CacheView, reuse: Reuse) -> Served | None:
    """Promote, pin and (for missing partitions) recompute the entry ``reuse`` reads."""
    cache, key = work.session.cache, reuse.fingerprint
    if view.entries[key].complete:
        cache.promote(view.entries[key])
    work.lease.pin(key)
    entry = cache.lookup(key)  # again, now that nobody may move or evict it
    if entry is None or (reuse.rule != "exact" and not entry.complete):
        return None
    view.entries[key] = entry
    reused, reused_bytes = len(entry.bitmap), entry.bytes
    cache.record_reads(entry)
    recomputed = 0
    if entry.complete:
        work.sources[key] = Source(cache.uris(entry), entry.schema_json)
    else:
        recomputed = _recompute_missing(work, reuse.path, entry)
        if recomputed is None:
            return None
        reused = entry.num_partitions - recomputed
    return Served(reused, recomputed, entry.num_partitions, reused_bytes)


def _recompute_missing(work: Workspace, path: tuple[int, ...], entry: EntryRecord) -> int | None:
    """Compute only the partitions ``entry`` lacks (all if the layout changed); how many.

    None when the entry cannot be completed (a live DataFrame reads an outdated layout).
    """
    cache = work.session.cache
    started = time.perf_counter()
    try:
        result = work.partitioned(path)
        if (result.num_partitions, result.layout) == (entry.num_partitions, entry.layout):
            indices = entry.missing
        elif cache.pin_count(entry.key) > 1 or cache.pinned_elsewhere(entry.key):
            return None  # a live DataFrame reads the old partitions: leave them alone
        else:
            indices = list(range(result.num_partitions))
            entry = cache.begin(
                entry.key,
                op=entry.op,
                schema_json=result.schema_json,
                num_partitions=result.num_partitions,
                layout=result.layout,
                texec=entry.texec,
                total_bytes=entry.total_bytes,
            )
        everything = indices == list(range(result.num_partitions))
        kept = {} if everything else cache.uris_by_index(entry)  # as looked up, now pinned
        stored, _ = work.write(result, entry, indices)
    finally:
        work.record.materialize_seconds += time.perf_counter() - started
    work.counters["partitions_recomputed"] += len(indices)
    work.settle(entry.key, entry.schema_json, kept, stored)
    return len(indices)
