"""Garbage collection during the timed statements of committed replays, per mode: the JVM's
collector seconds each query's record carries (``jvm_gc_seconds``), summed, beside the
mode's total time.

    python -m experiments.results.issue22.session38.probes.gc_by_mode REPLAY.json ...
"""

import json
import sys
from pathlib import Path


def main(paths: list[str]) -> None:
    print("replay | mode: total s, GC s (share)")
    for path in paths:
        modes = json.loads(Path(path).read_text()).get("modes", {})  # probes' JSON: none
        cells = []
        for mode, facts in modes.items():
            queries = facts["queries"]
            if "jvm_gc_seconds" not in queries[0]:
                continue
            total = sum(q["seconds"] for q in queries)
            gc = sum(q.get("jvm_gc_seconds") or 0.0 for q in queries)
            cells.append(f"{mode}: {total:.1f}, {gc:.1f} ({gc / total:.1%})")
        if cells:
            print(f"{Path(path).name} | " + " | ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
