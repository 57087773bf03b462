"""Per logged query of a home, the decision on its result (or on a reused operator): reason
and the numbers it used.

    .venv/bin/python experiments/results/issue22/session57/probes/decisions.py HOME
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from criss.history import QueryHistory

SHOWN = (
    "estimated_texec",
    "texec_source",
    "estimated_size",
    "result_ratio",
    "expected_repeats",
    "repeats_source",
    "expected_gain",
)


def _first_decision(operators: list[dict]) -> tuple | None:
    def telling(op: dict) -> bool:
        return str(op["decision"].get("reason", "")).startswith(("eager", "cached_entry"))

    for op in sorted(operators, key=lambda op: not telling(op)):
        decision = op["decision"]
        numbers = decision.get("numbers") or {}
        shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in numbers.items()}
        return op["path"], op["op"], decision["reason"], {k: shown[k] for k in SHOWN if k in shown}
    return None


def main() -> None:
    history = QueryHistory.read_only(Path(sys.argv[1]) / "catalog.db")
    for position, row in enumerate(reversed(history.recent(limit=None))):
        operators = json.loads(row["decisions"] or "{}").get("operators", [])
        print(position, " ".join(row["sql"].split())[:40], _first_decision(operators))


if __name__ == "__main__":
    main()
