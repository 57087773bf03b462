"""Ageing: a home's catalog grows with the live workload, not with everything it ever saw.

The QTree keeps every operator it has seen, with statistics and the join measurements
that name it. Over months of ad-hoc queries most of them never come back. Every
``FORGET_EVERY`` queries (and when a session opens) the operators neither referenced
nor cached for ``forget_after`` seconds are forgotten, with everything keyed by their
fingerprint: QTree statistics and edges, meta entries (join key counts, range join
statistics, remembered rewrites) and cache entries left without partitions. What is
cached stays, with every operator under it. The query log keeps its newest rows
(``criss.history.KEEP``); the in-process maps are bounded where they are built.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from criss.qtree import QTree
    from criss.storage.cache import PartitionCache

#: Queries planned between two rounds of forgetting (a round reads the QTree's edges).
FORGET_EVERY = 1000
#: Rounds a session remembers (``forget_rounds``), to report how long rounds hold locks.
FORGET_ROUNDS_KEPT = 32


@dataclass(frozen=True)
class Forgotten:
    """What one round of forgetting removed."""

    operators: int
    entries: int
    #: the whole round: the session's lock is held this long (planning waits)
    seconds: float
    #: the QTree's part, one write transaction: another application's writes wait this long
    catalog_seconds: float


def forget_unused(
    qtree: QTree,
    cache: PartitionCache,
    forget_after: float,
    *,
    pending: Collection[str] = (),
    now: float | None = None,
) -> Forgotten:
    """Forget what was neither used nor cached in the last ``forget_after`` seconds;
    ``pending``, results an action is still to write, stay."""
    started = time.perf_counter()
    now = time.time() if now is None else now
    entries = cache.catalog.entries()
    # a partition-less entry holds no data: it goes once its operator is forgotten
    cached = {e.key for e in entries if e.bitmap} | cache.pinned() | set(pending)
    in_catalog = time.perf_counter()
    gone = qtree.forget(now - forget_after, keep=cached)
    catalog_seconds = time.perf_counter() - in_catalog
    emptied = [e.key for e in entries if e.key in gone and e.key not in cached]
    for key in emptied:
        cache.delete(key)
    return Forgotten(len(gone), len(emptied), time.perf_counter() - started, catalog_seconds)
