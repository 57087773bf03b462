"""Where cached operator results live: tiers, partitions, bitmaps and the cache catalog."""

from storage.cache import PartitionCache, StoreResult
from storage.catalog import CacheCatalog, EntryRecord, PartitionRecord
from storage.tiers import LocalTier, Tier

__all__ = [
    "CacheCatalog",
    "EntryRecord",
    "LocalTier",
    "PartitionCache",
    "PartitionRecord",
    "StoreResult",
    "Tier",
]
