"""Rates learned from what ran: the scan rate behind Texec estimates, the Parquet ratio behind
size estimates, and statistics read off executed plans in the background.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from criss.qtree.plan import PlanNode
from criss.qtree.tree import EXECUTED_PLAN, QTree

log = logging.getLogger("criss")

#: Input bytes per second assumed before any materialization has been measured.
DEFAULT_SCAN_RATE = 64e6
#: Bytes of Parquet per byte of Spark's default row width (learned from every write; TPC-H
#: intermediates measured 0.1-0.3 at SF1).
DEFAULT_PARQUET_RATIO = 0.25
PARQUET_RATIO_MIN_BYTES = 1 << 20
#: Operators whose output has as many rows as their single input.
_ROW_PRESERVING = ("Project",)


class Learning:
    """The session's learned rates (kept in the QTree's meta table) and its harvests."""

    def __init__(self, qtree: QTree) -> None:
        self.qtree = qtree
        self._scan_rate: float | None = None
        self._parquet_ratio: float | None = None
        self._harvester: ThreadPoolExecutor | None = None
        self._harvests: list[Future] = []
        #: Background seconds spent reading statistics off executed plans.
        self.harvest_seconds = 0.0

    @property
    def scan_rate(self) -> float:
        if self._scan_rate is None:
            self._scan_rate = float(self.qtree.meta("scan_rate", DEFAULT_SCAN_RATE))
        return self._scan_rate

    @property
    def parquet_ratio(self) -> float:
        if self._parquet_ratio is None:
            self._parquet_ratio = float(self.qtree.meta("parquet_ratio", DEFAULT_PARQUET_RATIO))
        return self._parquet_ratio

    def learn_scan_rate(
        self, node: PlanNode, texec: float, served: Iterable[tuple[int, ...]] = ()
    ) -> None:
        """Blend in the input bytes per second of a measured materialization. Table bytes
        under ``served`` paths were not read (the cache stood in for them): counting them
        would inflate the rate, and every later estimate would fall below ``min_texec``."""
        scanned = node.scanned_bytes_outside(served)
        if scanned and texec > 0:
            self._scan_rate = 0.7 * self.scan_rate + 0.3 * (scanned / texec)
            self.qtree.set_meta("scan_rate", self._scan_rate)

    def learn_parquet_ratio(self, rows: int, row_width: int, size_bytes: int) -> None:
        """Blend in the Parquet bytes per default-width byte of a measured write (big
        enough that file footers do not dominate)."""
        if rows > 0 and row_width > 0 and size_bytes >= PARQUET_RATIO_MIN_BYTES:
            ratio = min(max(size_bytes / (rows * row_width), 0.02), 4.0)
            self._parquet_ratio = 0.7 * self.parquet_ratio + 0.3 * ratio
            self.qtree.set_meta("parquet_ratio", self._parquet_ratio)

    def harvest_later(self, read: Callable[[float], dict[str, tuple[float, int, int]]]) -> None:
        """Run ``read(parquet_ratio)`` (statistics off an executed plan) in the background;
        :meth:`settle` stores what it returns before the next query is planned."""
        if self._harvester is None:
            self._harvester = ThreadPoolExecutor(1, thread_name_prefix="criss-harvest")
        ratio = self.parquet_ratio
        self._harvests.append(self._harvester.submit(_timed, read, ratio))

    def settle(self) -> int:
        """Store the statistics read in the background (waiting for reads still running);
        how many operators got statistics."""
        stored = 0
        while self._harvests:
            future = self._harvests.pop(0)
            try:
                estimates, seconds = future.result()
            except Exception as exc:  # any failure of a background read only costs statistics
                log.info("no statistics from an executed plan: %s", exc)
                continue
            self.qtree.record_estimates(estimates, source=EXECUTED_PLAN)
            stored += len(estimates)
            self.harvest_seconds += seconds
        return stored

    def close(self) -> None:
        self.settle()
        if self._harvester is not None:
            self._harvester.shutdown()


def _timed(read: Callable[[float], Any], ratio: float) -> tuple[Any, float]:
    started = time.perf_counter()
    return read(ratio), time.perf_counter() - started


def statistics_from_metrics(
    tree: PlanNode,
    metrics: dict[tuple[int, ...], Any],
    wanted: set[str],
    wall: float,
    parquet_ratio: float,
) -> dict[str, tuple[float, int, int]]:
    """(Texec, size, rows) of the ``wanted`` operators of an executed ``tree``.

    Texec is the operator's subtree's share of the job's ``wall`` seconds by task time;
    size is rows × default row width × the Parquet ratio; a Project has its input's rows.
    """
    total = sum(m.task_seconds for m in metrics.values())
    if total <= 0:
        return {}

    def rows_of(n: PlanNode) -> int | None:
        m = metrics.get(n.path)
        if m is not None and m.rows is not None:
            return m.rows
        if n.op in _ROW_PRESERVING and len(n.children) == 1:
            return rows_of(n.children[0])
        return None

    estimates = {}
    for n in tree.walk():
        rows = rows_of(n) if n.fingerprint in wanted and n.path in metrics else None
        if rows is None:
            continue
        depth = len(n.path)
        inside = sum(m.task_seconds for p, m in metrics.items() if p[:depth] == n.path)
        size = rows * metrics[n.path].row_width * parquet_ratio
        estimates[n.fingerprint] = (wall * inside / total, int(size), rows)
    return estimates
