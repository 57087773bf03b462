"""What a query planned right after another one's action waits for (session 53).

Before it plans a query, ``CrissSession`` settles the background work of earlier actions
whose results are still being written (``settle_harvests(needed=_pending_keys())``): every
pending write, whether or not the new query could read it. A replay waits for an idle
machine between timed statements, so its first occurrences never show that wait; a user's
script of different queries run back to back does. This probe runs the first N TPC-DS
queries once each in plain Spark, then through Criss (every one a first sight, a fresh
home per pattern) back to back and with ``wait_for_idle`` between them, and times the
settling before planning apart from the rest of ``cs.sql()``. Derived from TPC-DS, not
comparable.

    .venv/bin/python experiments/results/issue22/session53/probes/back_to_back_waits.py 0.1 40
"""

import statistics
import sys
import tempfile
import time

import criss
from criss.engine import CrissSession
from criss.sparksession import local_spark
from criss.workload.idle import wait_for_idle
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids

SETTLED: list[float] = []
_settle = CrissSession.settle_harvests


def _timed_settle(self, needed=None, drain=True):
    started = time.perf_counter()
    try:
        return _settle(self, needed, drain)
    finally:
        if drain and needed is not None:  # the one before planning (match's has drain=False)
            SETTLED.append(time.perf_counter() - started)


CrissSession.settle_harvests = _timed_settle


def run(spark, names, idle):
    """(cs.sql seconds, settle seconds before planning, collect seconds) per query."""
    out = []
    with criss.session(spark, home=tempfile.mkdtemp(prefix="b2b-")) as cs:
        for name in names:
            if idle:
                wait_for_idle(3.0)
            SETTLED.clear()
            started = time.perf_counter()
            try:
                df = cs.sql(query(name))
                planned = time.perf_counter()
                df.collect()
            except Exception:
                continue
            # where the query might read a pending write, it is waited for inside planning
            # (phase "settle", from the branch settle-what-it-may-use on)
            inside = cs.record(df).phase_seconds.get("settle", 0.0)
            out.append((planned - started, sum(SETTLED) + inside, time.perf_counter() - planned))
    return out


def run_plain(spark, names):
    """(0, 0, seconds) per query, plain Spark back to back."""
    out = []
    for name in names:
        started = time.perf_counter()
        try:
            spark.sql(query(name)).collect()
        except Exception:
            continue
        out.append((0.0, 0.0, time.perf_counter() - started))
    return out


def report(label, rows):
    sql, settle, collect = (sum(r[i] for r in rows) for i in range(3))
    waits = [r[1] for r in rows if r[1] > 0.05]
    print(
        f"{label:13s} {len(rows)} queries: cs.sql {sql:6.2f} s, of it settling before planning "
        f"{settle:5.2f} s ({len(waits)} waits > 50 ms, median "
        f"{statistics.median(waits) if waits else 0:.2f} s); actions {collect:6.2f} s"
    )


def main():
    sf, count = float(sys.argv[1]), int(sys.argv[2])
    spark = local_spark(
        "back-to-back-waits",
        conf={
            "spark.sql.shuffle.partitions": "8",
            "spark.sql.autoBroadcastJoinThreshold": str(1024 * 1024),
        },
    )
    register_views(spark, f"data/tpcds/sf{sf:g}")
    names = [n for n in query_ids() if n not in ("q14a", "q14b")][:count]
    for name in names[:3]:  # JVM warm-up, plain Spark
        spark.sql(query(name)).collect()
    print(f"TPC-DS SF {sf:g}, the first {len(names)} queries (q14a/b left out), one pass each")
    started = time.perf_counter()
    report("plain Spark", run_plain(spark, names))
    plain = time.perf_counter() - started
    started = time.perf_counter()
    report("back to back", run(spark, names, idle=False))
    back_to_back = time.perf_counter() - started
    started = time.perf_counter()
    report("idle between", run(spark, names, idle=True))
    idle = time.perf_counter() - started
    print(
        f"wall clock: plain Spark {plain:.1f} s; Criss back to back {back_to_back:.1f} s "
        f"({back_to_back / plain:.2f}x), with idle waits {idle:.1f} s ({idle / plain:.2f}x)"
    )


if __name__ == "__main__":
    main()
