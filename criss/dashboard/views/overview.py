"""``/``: tiers, entries and partitions, reuse counters and time saved vs time spent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.inspect import load_overview

if TYPE_CHECKING:
    from werkzeug.datastructures import MultiDict

    from criss.dashboard import Settings


def data(settings: Settings, args: MultiDict) -> dict[str, Any]:
    return load_overview(settings.home, capacities=settings.capacities)
