"""Wait for an idle machine before a timed statement of a replay.

After a query returns, its application is not done with the cores: the JVM compiles hot
code, collects garbage and cleans up cached blocks and shuffle files for another 0.1-0.4 s
at about half the machine (measured for plain Spark and Criss alike on 2 cores,
``experiments/results/issue22/session19/probes/linger-*``). A replay that times the next
mode's statement at once hands it that work; waiting, untimed, until the machine is idle
keeps each mode's time its own.
"""

from __future__ import annotations

import time

#: Where Linux counts the time every CPU spent (its first line sums them all).
PROC_STAT = "/proc/stat"
#: The machine counts as idle when its CPUs were busy less than this share of a window.
IDLE_BUSY_SHARE = 0.15
IDLE_WINDOW_SECONDS = 0.1
#: The longest a replay waits by default (``criss replay --idle-wait``): over the drift
#: streams at SF 1 the machine was idle after one window at the median, 0.6 s at most.
IDLE_WAIT_SECONDS = 3.0


def _cpu_times(stat_path: str) -> tuple[int, int] | None:
    """(all, idle) jiffies of every CPU so far, or None where they cannot be read."""
    try:
        with open(stat_path) as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    return sum(fields), fields[3] + fields[4]  # idle and waiting for I/O


def wait_for_idle(
    max_seconds: float,
    *,
    stat_path: str = PROC_STAT,
    busy_share: float = IDLE_BUSY_SHARE,
    window: float = IDLE_WINDOW_SECONDS,
) -> float:
    """Wait until the CPUs were busy less than ``busy_share`` of a ``window``, at most
    ``max_seconds`` (0: not at all); the seconds waited. Where the CPU times cannot be read
    (not Linux), it does not wait."""
    started = time.perf_counter()
    before = _cpu_times(stat_path) if max_seconds > 0 else None
    if before is None:
        return 0.0
    while time.perf_counter() - started < max_seconds:
        time.sleep(window)
        after = _cpu_times(stat_path)
        if after is None:
            break
        total, idle = after[0] - before[0], after[1] - before[1]
        if total > 0 and (total - idle) / total < busy_share:
            break
        before = after
    return round(time.perf_counter() - started, 4)
