"""One module per dashboard page; each page is served as HTML and as a ``.json`` twin.

A page module has ``data(settings, args, **url_args) -> dict`` (what the ``.json`` twin
returns) and may have ``extra(data, args) -> dict``: things only the HTML needs, such as
chart geometry, computed from that same data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from criss.dashboard.views import entries, entry, overview, qtree, queries, replays


@dataclass(frozen=True)
class Page:
    name: str
    title: str
    rule: str
    json_rule: str
    template: str
    data: Callable[..., dict[str, Any]]
    extra: Callable[..., dict[str, Any]] | None = None
    in_nav: bool = True


PAGES = (
    Page("index", "Overview", "/", "/index.json", "overview.html", overview.data),
    Page("qtree", "QTree", "/qtree", "/qtree.json", "qtree.html", qtree.data, extra=qtree.extra),
    Page("entries", "Entries", "/entries", "/entries.json", "entries.html", entries.data),
    Page(
        "entry",
        "Entry",
        "/entries/<key>",
        "/entries/<key>.json",
        "entry.html",
        entry.data,
        in_nav=False,
    ),
    Page("queries", "Queries", "/queries", "/queries.json", "queries.html", queries.data),
    Page(
        "replays",
        "Replays",
        "/replays",
        "/replays.json",
        "replays.html",
        replays.data,
        extra=replays.extra,
    ),
)
