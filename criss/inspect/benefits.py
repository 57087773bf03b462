"""The benefit of cached entries and QTree operators as a home's catalogs record them.

Bandwidths and quotas come from the QTree's ``meta`` keys a session measured or recorded
(``bandwidth:<tier>:<root>``, ``codec_rate``, ``capacity:<tier>``); the benefit itself is
the ``criss`` policy's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from criss.qtree.tree import NodeRecord

#: Bytes/s assumed for a tier whose bandwidth was never measured in this home.
FALLBACK_BANDWIDTH = 1e9
BENEFIT_FORMULA = (
    "Σ over tiers holding the entry: recency × (ref × (Texec·share − bytes/bw) − bytes/bw), "
    "share = the tier's bytes ÷ the entry's bytes, bw = the tier's measured bandwidth"
)


def media_bandwidths(meta: Mapping[str, Any], home: Path) -> dict[str, float]:
    """Measured bytes/s of each tier's medium (``bandwidth:<tier>:<root>`` keys), this
    home's own root first."""
    found: dict[str, float] = {}
    preferred = {"disk": str(home / "disk")}
    for key, value in meta.items():
        parts = str(key).split(":", 2)
        if parts[0] != "bandwidth" or len(parts) < 3:
            continue
        tier, root = parts[1], parts[2]
        try:
            bandwidth = float(value)
        except (TypeError, ValueError):
            continue
        if bandwidth > 0 and (tier not in found or root == preferred.get(tier)):
            found[tier] = bandwidth
    return found


def codec_rate(meta: Mapping[str, Any]) -> float | None:
    """Bytes/s of Spark's Parquet codec, when a session measured it."""
    try:
        rate = float(meta.get("codec_rate") or 0)
    except (TypeError, ValueError):
        return None
    return rate if rate > 0 else None


def bandwidths(meta: Mapping[str, Any], home: Path) -> dict[str, float]:
    """Bytes/s the benefit model uses per tier: the medium's, combined with Spark's Parquet
    codec rate when the session measured one (1 / (1/medium + 1/codec))."""
    codec = codec_rate(meta)
    media = media_bandwidths(meta, home)
    if codec is None:
        return media
    return {tier: 1 / (1 / bw + 1 / codec) for tier, bw in media.items()}


def quotas(meta: Mapping[str, Any], given: Mapping[str, int | None] | None) -> dict:
    """Quotas given by the caller, else ``capacity:<tier>`` keys a session may have recorded."""
    out: dict[str, int] = {}
    for key, value in meta.items():
        parts = str(key).split(":")
        if parts[0] == "capacity" and len(parts) >= 2 and isinstance(value, (int, float)):
            out[parts[1]] = int(value)
    out.update({k: int(v) for k, v in (given or {}).items() if v})
    return out


def start_time(meta: Mapping[str, Any]) -> float:
    """When the QTree started counting recency (0 for a home without one)."""
    return float(meta.get("start_time") or 0.0)


def recency(node: NodeRecord | None, start: float) -> float:
    """Seconds from the QTree's start to the operator's last use (at least 1 ms)."""
    if node is None or node.stats.last_access is None:
        return 1.0  # what the cache assumes for an operator the QTree does not know
    return max(float(node.stats.last_access) - start, 1e-3)


def policy():
    from criss.policies import get_policy

    return get_policy("criss")


def entry_benefit(
    *,
    ref: int,
    recency: float,
    texec: float,
    tier_bytes: Mapping[str, int],
    bandwidths: Mapping[str, float],
    unstored_bytes: int = 0,
) -> float:
    """The Criss benefit of an entry as its tiers hold it (see :data:`BENEFIT_FORMULA`).

    An entry holding no file is valued with ``unstored_bytes`` on disk, the worst case the
    engine assumes when it decides what to cache (0 bytes for an empty result).
    """
    model = policy()
    total = sum(tier_bytes.values())
    if total <= 0:
        return model.benefit(
            ref=ref,
            texec=texec,
            size_bytes=float(unstored_bytes),
            bandwidth=bandwidths.get("disk") or FALLBACK_BANDWIDTH,
            recency=recency,
        )
    return sum(
        model.benefit(
            ref=ref,
            texec=texec * size / total,
            size_bytes=float(size),
            bandwidth=bandwidths.get(tier) or FALLBACK_BANDWIDTH,
            recency=recency,
        )
        for tier, size in tier_bytes.items()
    )


def node_benefit(node: NodeRecord, start: float, bandwidths: Mapping[str, float]) -> float | None:
    """An uncached operator's benefit on disk (the worst case, as the engine decides what
    to cache), or None without statistics."""
    stats = node.stats
    if stats.texec is None or stats.size_bytes is None:
        return None
    return policy().benefit(
        ref=int(stats.ref),
        texec=float(stats.texec),
        size_bytes=float(stats.size_bytes),
        bandwidth=bandwidths.get("disk") or FALLBACK_BANDWIDTH,
        recency=recency(node, start),
    )
