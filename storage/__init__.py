"""Where cached operator results live: tiers, entries and their manifests."""

from storage.store import Entry, EntryStore

__all__ = ["Entry", "EntryStore"]
