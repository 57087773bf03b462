"""One line per G1 log (``-Xlog:gc:file=...``, passed with ``--conf
spark.driver.extraJavaOptions=...``): the application's life, its pauses and their seconds,
the young pauses that started a concurrent cycle because of a humongous allocation (an
array over half a G1 region), and the concurrent mark cycles with their seconds. Marking
runs beside the tasks (on two cores, one of three running threads), so its seconds are
what the collection costs a query beyond the pauses ``jvm_gc_seconds`` counts.

    python experiments/results/issue20/session39/probes/gc_summary.py gc-*.log
"""

import re
import sys


def summary(path: str) -> str:
    text = open(path).read()
    pauses = [float(m) for m in re.findall(r"Pause [^\n]*? ([\d.]+)ms\n", text)]
    humongous = len(re.findall(r"Concurrent Start\) \(G1 Humongous Allocation\)", text))
    cycles = [float(m) for m in re.findall(r"Concurrent Mark Cycle ([\d.]+)ms", text)]
    stamps = re.findall(r"^\[([\d.]+)s\]", text, re.M)
    life = float(stamps[-1]) if stamps else 0.0
    return (
        f"{path.rsplit('/', 1)[-1]}: life {life:.0f}s pauses {len(pauses)} "
        f"{sum(pauses) / 1000:.1f}s; humongous-started {humongous}; "
        f"mark cycles {len(cycles)} {sum(cycles) / 1000:.1f}s"
    )


if __name__ == "__main__":
    for log in sys.argv[1:]:
        print(summary(log))
