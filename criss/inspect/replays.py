"""Replay result files (``criss replay --out``) as the dashboard's replays page shows
them: per mode, each query's seconds and the running total."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load_replays(results_dir: str | Path | None) -> dict[str, Any]:
    """Replay results JSON files (``criss replay --out``) found under ``results_dir``."""
    if results_dir is None:
        return {"dir": None, "replays": [], "skipped": []}
    root = Path(results_dir).expanduser()
    replays, skipped = [], []
    for path in sorted(root.rglob("*.json")) if root.is_dir() else []:
        name = path.relative_to(root).as_posix()
        try:
            replays.append(_replay(name, json.loads(path.read_text())))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            skipped.append({"name": name, "reason": f"not a replay result: {exc}"})
    return {"dir": str(root), "replays": replays, "skipped": skipped}


def _replay(name: str, data: dict[str, Any]) -> dict[str, Any]:
    modes = data["modes"]
    first = next(iter(modes.values()))["queries"]
    return {
        "name": name,
        "stream": data.get("stream"),
        "seed": data.get("seed"),
        "sf": data.get("sf"),
        "queries": data.get("queries", len(first)),
        "created": data.get("created"),
        "labels": [
            q["query"] + ("" if q.get("variant", "orig") == "orig" else f"-{q['variant']}")
            for q in first
        ],
        "modes": {mode: _series(result) for mode, result in modes.items()},
        "comparison": data.get("comparison"),
    }


def _series(result: dict[str, Any]) -> dict[str, Any]:
    seconds = [float(q["seconds"]) for q in result["queries"]]
    running, cumulative = 0.0, []
    for s in seconds:
        running += s
        cumulative.append(running)
    return {
        "total_seconds": float(result.get("total_seconds", running)),
        "seconds": seconds,
        "cumulative": cumulative,
    }
