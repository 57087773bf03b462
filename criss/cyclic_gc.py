"""Python's cyclic garbage collector paused while Criss plans a query."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, as it was after it.

    Planning builds a query's plan trees (plain-Python dicts, tuples and frozen nodes,
    a hundred thousand objects for a TPC-DS query, all freed by reference counting) and
    each 700 allocations would start a collection that walks the young objects, and now
    and then the whole heap. Over 117 TPC-DS first sights that was 13 % of the planning
    (experiments/results/issue22/session47/planning-gc-*.out). Cycles made meanwhile are
    collected once it is back on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
