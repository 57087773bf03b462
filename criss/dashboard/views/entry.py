"""``/entries/<key>``: one cached operator, partition by partition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.inspect import BENEFIT_FORMULA, load_entry, valid_key

if TYPE_CHECKING:
    from werkzeug.datastructures import MultiDict

    from criss.dashboard import Settings


def data(settings: Settings, args: MultiDict, key: str) -> dict[str, Any]:
    entry = load_entry(settings.home, valid_key(key))
    return {"home": str(settings.home), "benefit_formula": BENEFIT_FORMULA, "entry": entry}
