"""Per template: seconds, classes compiled and compile ms of each mode of one run
(``first_sight_by_template.py``'s JSON and stderr), and the totals.

    python summarize.py RUN_DIR PLAIN CRISS [TEE]   (file stems, e.g. plain-1 criss-1 tee-1)
"""

import json
import re
import sys
from pathlib import Path


def compile_ms(err: Path) -> dict[str, list[float]]:
    current, found = None, {}
    for line in err.read_text().splitlines():
        if line.startswith("MARK "):
            current = line.split()[1]
            found[current] = [0, 0.0]
        elif line.startswith("END "):
            current = None
        elif current and (m := re.search(r"Code generated in ([\d.]+) ms", line)):
            found[current][0] += 1
            found[current][1] += float(m.group(1))
    return found


def main() -> None:
    where, stems = Path(sys.argv[1]), sys.argv[2:]
    runs = {s: {r["q"]: r for r in json.loads((where / f"{s}.json").read_text())} for s in stems}
    compiled = {s: compile_ms(where / f"{s}.err") for s in stems}
    totals = {s: [0.0, 0, 0.0] for s in stems}
    print("template", *(f"{s}:s/classes/compile_ms" for s in stems))
    for q in runs[stems[0]]:
        cells = []
        for s in stems:
            seconds, (count, ms) = runs[s][q]["s"], compiled[s].get(q, [0, 0.0])
            cells.append(f"{seconds:.3f}/{count}/{ms:.0f}")
            totals[s][0] += seconds
            totals[s][1] += count
            totals[s][2] += ms
        print(q, *cells)
    base = totals[stems[0]][0]
    for s in stems:
        seconds, count, ms = totals[s]
        ratio = seconds / base
        print(f"{s}: {seconds:.2f} s ({ratio:.3f}x), {count} classes, {ms:.0f} ms compiling")


if __name__ == "__main__":
    main()
