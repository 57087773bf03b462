"""Where cached operator results live: tiers, partitions, bitmaps and the cache catalog."""

from criss.storage.cache import PartitionCache, StoreResult
from criss.storage.catalog import CacheCatalog, EntryRecord, PartitionRecord
from criss.storage.tiers import LocalTier, Tier

__all__ = [
    "CacheCatalog",
    "EntryRecord",
    "LocalTier",
    "PartitionCache",
    "PartitionRecord",
    "StoreResult",
    "Tier",
]
