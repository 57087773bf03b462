"""The replay's wait for an idle machine (criss.workload.idle): it waits while the CPUs are
busy, stops once a window is quiet, gives up after its limit and never blocks where the CPU
times cannot be read. A thread writes the counters in /proc/stat's format, so busy and idle
spells are exact whatever else runs on the machine."""

from __future__ import annotations

import os
import threading
import time

import pytest

from criss.errors import WorkloadError
from criss.workload.idle import wait_for_idle
from criss.workload.replay import ReplayConfig


def _write_stat(path, busy, idle):
    # user nice system idle iowait irq softirq steal; replaced whole, as /proc/stat reads
    fresh = path.with_suffix(".new")
    fresh.write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\n")
    os.replace(fresh, path)


def _cpu_counters(path, busy_for: float, stop: threading.Event) -> None:
    """Count jiffies as a 2-core machine would: all busy for ``busy_for`` seconds, then idle."""
    busy = idle = 0
    started = time.perf_counter()
    while not stop.is_set():
        if time.perf_counter() - started < busy_for:
            busy += 2
        else:
            idle += 2
        _write_stat(path, busy, idle)
        time.sleep(0.01)


@pytest.fixture
def stat_file(tmp_path):
    path = tmp_path / "stat"
    _write_stat(path, 0, 0)
    return path


def _waited(path, *, busy_for: float, max_seconds: float) -> float:
    """What ``wait_for_idle`` waits while the counters say busy for ``busy_for`` seconds."""
    stop = threading.Event()
    thread = threading.Thread(target=_cpu_counters, args=(path, busy_for, stop), daemon=True)
    thread.start()
    try:
        return wait_for_idle(max_seconds, stat_path=str(path), window=0.1)
    finally:
        stop.set()
        thread.join()


def test_it_waits_while_the_cpus_are_busy_and_stops_once_they_are_idle(stat_file):
    waited = _waited(stat_file, busy_for=0.5, max_seconds=5.0)
    assert 0.45 <= waited < 1.5, waited


def test_it_gives_up_at_its_limit_on_a_machine_that_stays_busy(stat_file):
    waited = _waited(stat_file, busy_for=60, max_seconds=0.5)
    assert 0.5 <= waited < 1.0, waited


def test_an_idle_machine_is_waited_for_one_window_only(stat_file):
    waited = _waited(stat_file, busy_for=0, max_seconds=5.0)
    assert waited < 0.5, waited


def test_it_does_not_wait_when_told_not_to_or_when_cpu_times_cannot_be_read(tmp_path):
    assert wait_for_idle(0.0) == 0.0
    assert wait_for_idle(5.0, stat_path=str(tmp_path / "missing")) == 0.0
    garbled = tmp_path / "garbled"
    garbled.write_text("cpu  a b c\n")
    assert wait_for_idle(5.0, stat_path=str(garbled)) == 0.0


def test_a_negative_wait_is_refused_by_name():
    with pytest.raises(WorkloadError, match=r"idle_wait=-1\.0.*0 \(do not wait\) or more"):
        ReplayConfig(stream="random", idle_wait=-1.0)
