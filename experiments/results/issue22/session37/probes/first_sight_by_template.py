"""Per template, what a first sight in a new home added to plain Spark's time in one
application (``do_nothing_overhead --fresh-home``): with first-seen results cached by the
action and without (``--option eager_results=false``), side by side, as medians over the
rounds, with the medians of the action alone (``collect``) and of Criss's planning.

    python -m experiments.results.issue22.session37.probes.first_sight_by_template \\
        EAGER.json NO_EAGER.json
"""

import json
import statistics
import sys
from collections import defaultdict


def extras(path: str) -> dict[str, dict[str, float]]:
    """Template → median extra seconds in total, in the action, and Criss's planning."""
    runs = defaultdict(list)
    for run in json.load(open(path))["runs"]:
        plain, criss = run["plain"], run["criss"]
        total = criss["total"] - plain["total"]
        action = criss["collect"] - plain["collect"]
        runs[run["query"]].append((total, action, criss["planning"]))
    return {
        template: {
            "total": statistics.median(r[0] for r in rows),
            "action": statistics.median(r[1] for r in rows),
            "planning": statistics.median(r[2] for r in rows),
        }
        for template, rows in runs.items()
    }


def main(eager_path: str, plain_path: str) -> None:
    eager, not_eager = extras(eager_path), extras(plain_path)
    print("template  cached: total  action  planning | not cached: total  action  planning")
    for template in sorted(eager, key=lambda t: int(t[1:])):
        a, b = eager[template], not_eager.get(template)
        right = f"{b['total']:+14.3f}  {b['action']:+6.3f}  {b['planning']:8.3f}" if b else "-"
        left = f"{a['total']:+13.3f}  {a['action']:+6.3f}  {a['planning']:8.3f}"
        print(f"{template:<8}  {left} |{right}")
    for name, table in (("cached", eager), ("not cached", not_eager)):
        totals = [row["total"] for row in table.values()]
        print(f"{name}: median over templates {statistics.median(totals):+.3f} s")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
