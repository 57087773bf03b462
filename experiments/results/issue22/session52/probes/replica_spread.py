"""First occurrences of every committed replay with two applications per mode
(``--replicas 2``), each application's total against the first plain application's: how far
two plain Spark applications on the same stream and machine differ (session 52).

    .venv/bin/python -m experiments.results.issue22.session52.probes.replica_spread
"""

from __future__ import annotations

import json
from pathlib import Path

from experiments.summary import split_first_and_repeats, statement_keys

RESULTS = Path(__file__).resolve().parents[3]


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
        keys = statement_keys(result)
        totals = {
            mode: split_first_and_repeats(played["queries"], keys)[0]
            for mode, played in modes.items()
        }
        ratios = {mode: total / totals["spark"] for mode, total in totals.items()}
        spreads.append(ratios["spark#2"])
        shown = "  ".join(f"{mode} {ratio:.3f}" for mode, ratio in ratios.items())
        print(f"{path.relative_to(RESULTS)}\n    {shown}")
    print(
        f"plain spark#2 ÷ spark over {len(spreads)} runs: {min(spreads):.3f} to {max(spreads):.3f}"
    )


if __name__ == "__main__":
    main()
