"""``/replays``: replay result files: cumulative time plain Spark vs Criss, per-query bars."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.dashboard.charts import bar_chart, line_chart
from criss.inspect import load_replays

if TYPE_CHECKING:
    from werkzeug.datastructures import MultiDict

    from criss.dashboard import Settings


def data(settings: Settings, args: MultiDict) -> dict[str, Any]:
    return load_replays(settings.results_dir)


def extra(data: dict[str, Any], args: MultiDict) -> dict[str, Any]:
    charts = {}
    for replay in data["replays"]:
        modes = replay["modes"]
        charts[replay["name"]] = {
            "cumulative": line_chart(
                {m: s["cumulative"] for m, s in modes.items()}, replay["labels"]
            ),
            "per_query": bar_chart({m: s["seconds"] for m, s in modes.items()}, replay["labels"]),
        }
    return {"charts": charts}
