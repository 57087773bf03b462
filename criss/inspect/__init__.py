"""Read a Criss home without a SparkSession: what the ``criss`` CLI and the dashboard show.

Every ``load_*`` function reads the home through the library's own catalog classes opened
read-only (:mod:`criss.inspect.home`: ``QTree.read_only``, ``CacheCatalog.read_only``,
``QueryHistory.read_only``), which is safe while applications write them (WAL), and
returns plain JSON-ready data. Nothing is written under ``home`` except by
:func:`clear_home`. One module per thing shown:

- :mod:`criss.inspect.overview`: tiers, entries, reuse counters, time saved (``criss stats``)
- :mod:`criss.inspect.entries`: entries and one entry (``criss ls``, ``/entries``)
- :mod:`criss.inspect.qtree`: the QTree (``/qtree``)
- :mod:`criss.inspect.queries`: the logged queries and their decisions (``/queries``)
- :mod:`criss.inspect.replays`: replay result files (``/replays``)
- :mod:`criss.inspect.benefits`: bandwidths, quotas and the benefit they give

>>> from criss.inspect import load_overview, load_entries   # doctest: +SKIP
>>> load_overview("/data/criss")["entries"]                  # doctest: +SKIP
12
>>> [e["strip"] for e in load_entries("/data/criss")][:2]     # doctest: +SKIP
['MMDD', 'D.']
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from criss.errors import StorageError
from criss.inspect.benefits import BENEFIT_FORMULA, FALLBACK_BANDWIDTH, entry_benefit, policy
from criss.inspect.benefits import bandwidths as _bandwidths
from criss.inspect.entries import HEX_KEY, STATES, STRIP_MARKS, load_entries, load_entry, valid_key
from criss.inspect.overview import TEXEC_SAVED_FORMULA, TIER_ORDER, load_overview
from criss.inspect.qtree import load_qtree
from criss.inspect.queries import load_queries
from criss.inspect.replays import load_replays

__all__ = [
    "BENEFIT_FORMULA",
    "FALLBACK_BANDWIDTH",
    "HEX_KEY",
    "STATES",
    "STRIP_MARKS",
    "TEXEC_SAVED_FORMULA",
    "TIER_ORDER",
    "_bandwidths",
    "clear_home",
    "entry_benefit",
    "load_entries",
    "load_entry",
    "load_overview",
    "load_qtree",
    "load_queries",
    "load_replays",
    "valid_key",
]


# --- the one command here that writes ------------------------------------------------------------


def clear_home(home: str | Path, tier: str | None = None, **options: Any) -> dict[str, Any]:
    """Drop every cached result and the QTree of ``home``, or only what ``tier`` holds.

    Needs no SparkSession. Entries a live DataFrame of a running application reads are
    kept (``kept_pinned``). ``options`` are session options locating the tiers
    (``memory_dir``, ``alluxio_url``, ...). Returns the overview numbers before and after.
    """
    from criss.config import CrissOptions
    from criss.qtree import QTree
    from criss.space import build_tiers
    from criss.storage.cache import PartitionCache

    path = Path(home).expanduser()
    before = load_overview(path)  # raises NotFoundError for a home that is not there
    opts = CrissOptions.resolve(None, home=str(path), **options)
    writable, everything = build_tiers(opts, opts.home)
    names = [t.name for t in everything]
    if tier is not None and tier not in names:
        raise StorageError(
            f"no tier {tier!r} in this home's configuration; tiers: {', '.join(names)}"
            + (" (the alluxio tier needs --alluxio-url)" if tier == "alluxio" else "")
        )
    cache = PartitionCache(
        opts.home / "cache.db",
        writable,
        readable=[t for t in everything if t not in writable],
        policy=policy(),
        usage=lambda keys: {},
        timeout=opts.catalog_timeout,
    )
    try:
        pinned = cache.pinned()
        cache.clear(tier)
        cache.catalog.forget_owner(cache.owner)
    finally:
        cache.close()
    if tier is None:
        with closing(QTree(opts.home / "catalog.db", timeout=opts.catalog_timeout)) as qtree:
            qtree.clear()
    after = load_overview(path)
    return {
        "home": str(path),
        "tier": tier,
        "kept_pinned": sorted(pinned),
        "before": _counts(before),
        "after": _counts(after),
    }


def _counts(overview: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "entries": overview["entries"],
        "reusable_partitions": overview["reusable_partitions"],
        "qtree_operators": overview["qtree"]["operators"],
        "used_bytes": {t["name"]: t["used_bytes"] for t in overview["tiers"]},
    }
