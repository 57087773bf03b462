"""Benefit models that value a cached operator result.

The Criss model (paper §1.2)::

    Benefit = recency × (ref × (Texec − size/bw) − size/bw)

counts the time to load the result (size/bw) against each reuse and the time to
store it once; ``bw`` is the bandwidth of the tier the data sits in, or the disk's
(the worst case) when deciding whether to cache at all. Where the time to store a result
is measured apart from the medium (``write_bandwidth``: what Criss's writes of results
reached, from the action's cache to the tier's files), the store term uses it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


def transfer_seconds(
    size_bytes: float, bandwidth: float, write_bandwidth: float | None = None
) -> tuple[float, float]:
    """Seconds to load a result once and to store it once: both at ``bandwidth``, storing at
    ``write_bandwidth`` instead where one was measured."""
    return size_bytes / bandwidth, size_bytes / (write_bandwidth or bandwidth)


@runtime_checkable
class BenefitModel(Protocol):
    """A named, swappable valuation of one operator's cached result."""

    name: str

    def benefit(
        self,
        *,
        ref: float,
        texec: float,
        size_bytes: float,
        bandwidth: float,
        recency: float,
        write_bandwidth: float | None = None,
    ) -> float:
        """Higher is more worth keeping; a model may return <= 0 for "never cache".
        ``write_bandwidth`` (None: ``bandwidth``) prices storing the result once."""
        ...


class CrissBenefit:
    """The paper's heterogeneous-media-aware model; only positive benefit is cached."""

    name = "criss"

    def benefit(
        self,
        *,
        ref: float,
        texec: float,
        size_bytes: float,
        bandwidth: float,
        recency: float,
        write_bandwidth: float | None = None,
    ) -> float:
        load, store = transfer_seconds(size_bytes, bandwidth, write_bandwidth)
        return recency * (ref * (texec - load) - store)


class RecyclerBenefit:
    """Recycler's model (Ivanova et al.): ref × cost / size, blind to read/write time."""

    name = "recycler"

    def benefit(
        self,
        *,
        ref: float,
        texec: float,
        size_bytes: float,
        bandwidth: float,
        recency: float,
        write_bandwidth: float | None = None,
    ) -> float:
        return ref * texec / max(size_bytes, 1.0)


class LruBenefit:
    """Least-recently-used as a benefit: only recency counts (a baseline for ablations).

    For choosing what to cache it still refuses results that cost more to store and load
    than to compute, so it differs from the Criss model only in what it keeps.
    """

    name = "lru"

    def benefit(
        self,
        *,
        ref: float,
        texec: float,
        size_bytes: float,
        bandwidth: float,
        recency: float,
        write_bandwidth: float | None = None,
    ) -> float:
        load, store = transfer_seconds(size_bytes, bandwidth, write_bandwidth)
        return recency if ref * (texec - load) - store > 0 else 0.0
