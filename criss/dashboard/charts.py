"""Chart geometry computed in Python; the templates only draw it as inline SVG."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

#: Room around the plot for axis labels: left, right, top, bottom.
PAD = (52, 12, 12, 28)
#: Series colours: plain Spark grey, Criss blue, other modes (policy variants) from a palette.
MODE_COLORS = {"spark": "#8c959f", "criss": "#2f81f7"}
PALETTE = ("#bf8700", "#8250df", "#1a7f37", "#cf222e", "#1b7c83", "#57606a")


def series_colors(names) -> dict[str, str]:
    """A stable colour per series name."""
    others = iter(PALETTE * (1 + len(list(names)) // len(PALETTE)))
    return {name: MODE_COLORS.get(name) or next(others) for name in names}


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top`` (steps of 1, 2 or 5 × 10^k)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(math.ceil(top / step - 1e-9)) + 1)]


def _frame(width: int, height: int, top: float, n: int) -> dict[str, Any]:
    left, right, pad_top, bottom = PAD
    ticks = nice_ticks(top)
    return {
        "width": width,
        "height": height,
        "left": left,
        "right": width - right,
        "top": pad_top,
        "bottom": height - bottom,
        "ymax": ticks[-1],
        "ticks": ticks,
        "n": n,
    }


def _y(frame: Mapping[str, Any], value: float) -> float:
    span = frame["bottom"] - frame["top"]
    return round(frame["bottom"] - span * value / frame["ymax"], 1)


def _yticks(frame: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"y": _y(frame, t), "label": f"{t:g}"} for t in frame["ticks"]]


def _xticks(frame: Mapping[str, Any], x_of, labels: Sequence[str]) -> list[dict[str, Any]]:
    n = frame["n"]
    every = max(1, math.ceil(n / 10))
    return [{"x": x_of(i), "label": labels[i]} for i in range(0, n, every)]


def line_chart(
    series: Mapping[str, Sequence[float]],
    labels: Sequence[str] | None = None,
    *,
    width: int = 600,
    height: int = 220,
) -> dict[str, Any]:
    """Polylines of each series over positions 0..n-1 (e.g. cumulative seconds per mode)."""
    n = max((len(v) for v in series.values()), default=0)
    labels = list(labels or [str(i) for i in range(n)])
    top = max((max(v) for v in series.values() if len(v)), default=0.0)
    frame = _frame(width, height, top, n)
    span = frame["right"] - frame["left"]

    def x_of(i: int) -> float:
        return round(frame["left"] + (span * i / (n - 1) if n > 1 else span / 2), 1)

    colors = series_colors(list(series))
    lines = []
    for name, values in series.items():
        points = [(x_of(i), _y(frame, v)) for i, v in enumerate(values)]
        lines.append(
            {
                "name": name,
                "color": colors[name],
                "points": " ".join(f"{x},{y}" for x, y in points),
                "end": {"x": points[-1][0], "y": points[-1][1], "value": values[-1]}
                if points
                else None,
            }
        )
    xticks = _xticks(frame, x_of, labels)
    legend = [{"name": n, "color": c} for n, c in colors.items()]
    return {**frame, "legend": legend, "lines": lines, "yticks": _yticks(frame), "xticks": xticks}


def bar_chart(
    series: Mapping[str, Sequence[float]],
    labels: Sequence[str],
    *,
    width: int = 600,
    height: int = 200,
) -> dict[str, Any]:
    """Grouped bars: for each position, one bar per series, side by side."""
    n = len(labels)
    top = max((max(v) for v in series.values() if len(v)), default=0.0)
    frame = _frame(width, height, top, n)
    slot = (frame["right"] - frame["left"]) / max(n, 1)
    names = list(series)
    bar = max(slot * 0.8 / max(len(names), 1), 0.5)

    def x_of(i: int) -> float:
        return round(frame["left"] + slot * (i + 0.5), 1)

    colors = series_colors(names)
    bars = []
    for k, name in enumerate(names):
        for i, value in enumerate(series[name]):
            y = _y(frame, value)
            bars.append(
                {
                    "mode": name,
                    "color": colors[name],
                    "x": round(frame["left"] + slot * i + slot * 0.1 + k * bar, 1),
                    "y": y,
                    "w": round(bar, 1),
                    "h": round(frame["bottom"] - y, 1),
                    "title": f"#{i} {labels[i]} {name}: {value:.3f} s",
                }
            )
    xticks = _xticks(frame, x_of, labels)
    legend = [{"name": n, "color": c} for n, c in colors.items()]
    return {**frame, "legend": legend, "bars": bars, "yticks": _yticks(frame), "xticks": xticks}
