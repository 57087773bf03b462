"""``/entries``: cached operators by benefit, each with its partition strip."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.inspect import BENEFIT_FORMULA, STATES, load_entries

if TYPE_CHECKING:
    from werkzeug.datastructures import MultiDict

    from criss.dashboard import Settings


def data(settings: Settings, args: MultiDict) -> dict[str, Any]:
    entries = load_entries(settings.home)
    return {
        "home": str(settings.home),
        "count": len(entries),
        "benefit_formula": BENEFIT_FORMULA,
        "state_labels": STATES,
        "entries": entries,
    }
