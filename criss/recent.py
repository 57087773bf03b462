"""A bounded, thread-safe map that keeps its most recently used items."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class RecentItems:
    """Up to ``limit`` items; the least recently used is evicted first, and its
    ``release`` (given with ``put``) is called. Safe to use from several threads (the
    engine's background statistics reads capture plans too)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: OrderedDict[Hashable, tuple[Any, Callable[[], None] | None]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._items)

    def pop(self, key: Hashable) -> Any:
        """Remove ``key``'s item and return it (None if absent); its release is not called."""
        with self._lock:
            found = self._items.pop(key, None)
        return None if found is None else found[0]

    def put(self, key: Hashable, value: Any, release: Callable[[], None] | None = None) -> None:
        evicted = []
        with self._lock:
            self._items[key] = (value, release)
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                evicted.append(self._items.popitem(last=False)[1][1])
        for old_release in evicted:
            if old_release is not None:
                old_release()
