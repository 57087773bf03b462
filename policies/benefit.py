"""Benefit models that value a cached operator result.

The Criss model (paper §1.2)::

    Benefit = recency × (ref × (Texec − size/bw) − size/bw)

counts the time to load the result (size/bw) against each reuse and the time to
store it once; ``bw`` is the bandwidth of the tier the data sits in, or the disk's
(the worst case) when deciding whether to cache at all.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class BenefitModel(Protocol):
    """A named, swappable valuation of one operator's cached result."""

    name: str

    def benefit(
        self, *, ref: float, texec: float, size_bytes: float, bandwidth: float, recency: float
    ) -> float:
        """Higher is more worth keeping; a model may return <= 0 for "never cache"."""
        ...


class CrissBenefit:
    """The paper's heterogeneous-media-aware model; only positive benefit is cached."""

    name = "criss"

    def benefit(
        self, *, ref: float, texec: float, size_bytes: float, bandwidth: float, recency: float
    ) -> float:
        transfer = size_bytes / bandwidth
        return recency * (ref * (texec - transfer) - transfer)


class RecyclerBenefit:
    """Recycler's model (Ivanova et al.): ref × cost / size, blind to read/write time."""

    name = "recycler"

    def benefit(
        self, *, ref: float, texec: float, size_bytes: float, bandwidth: float, recency: float
    ) -> float:
        return ref * texec / max(size_bytes, 1.0)


class LruBenefit:
    """Least-recently-used as a benefit: only recency counts (a baseline for ablations).

    For choosing what to cache it still refuses results that cost more to store and load
    than to compute, so it differs from the Criss model only in what it keeps.
    """

    name = "lru"

    def benefit(
        self, *, ref: float, texec: float, size_bytes: float, bandwidth: float, recency: float
    ) -> float:
        transfer = size_bytes / bandwidth
        return recency if ref * (texec - transfer) - transfer > 0 else 0.0
