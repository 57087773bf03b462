"""First occurrences of every committed replay with two applications per mode
(``--replicas 2``), each application's total against the first plain application's: how far
two plain Spark applications on the same stream and machine differ (session 52).

    python experiments/results/issue22/session52/probes/replica_spread.py
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[3]


def first_occurrence_totals(result: dict) -> dict[str, float]:
    """Each mode's seconds over the stream's first occurrences of a statement."""
    modes = result["modes"]
    seen: set[str] = set()
    totals = dict.fromkeys(modes, 0.0)
    for position, query in enumerate(modes["spark"]["queries"]):
        if query["statement"] in seen:
            continue
        seen.add(query["statement"])
        for mode, played in modes.items():
            totals[mode] += played["queries"][position]["seconds"]
    return totals


def main() -> None:
    spreads = []
    for path in sorted(RESULTS.glob("issue2*/**/*.json")):
        try:
            result = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        modes = result.get("modes") if isinstance(result, dict) else None
        if not isinstance(modes, dict) or "spark#2" not in modes:
            continue
        totals = first_occurrence_totals(result)
        ratios = {mode: total / totals["spark"] for mode, total in totals.items()}
        spreads.append(ratios["spark#2"])
        shown = "  ".join(f"{mode} {ratio:.3f}" for mode, ratio in ratios.items())
        print(f"{path.relative_to(RESULTS)}\n    {shown}")
    print(
        f"plain spark#2 ÷ spark over {len(spreads)} runs: {min(spreads):.3f} to {max(spreads):.3f}"
    )


if __name__ == "__main__":
    main()
