"""``/queries``: the most recent queries planned through Criss, with their explain text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.inspect import load_queries

if TYPE_CHECKING:
    from werkzeug.datastructures import MultiDict

    from criss.dashboard import Settings

MAX_LIMIT = 2000


def data(settings: Settings, args: MultiDict) -> dict[str, Any]:
    limit = min(max(args.get("limit", 50, type=int) or 50, 1), MAX_LIMIT)
    rows = load_queries(settings.home, limit=limit)
    return {"home": str(settings.home), "limit": limit, "count": len(rows), "queries": rows}
