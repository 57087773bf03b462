"""py4j round trips and time per phase of ``cs.sql`` for first-seen queries: what Criss's
planning asks of the JVM. Each of Q1..Q22 twice, every statement with fresh parameters
(no repeats), after a short untimed warm-up; counts only the calls ``cs.sql`` makes on the
main thread (py4j's garbage-collection thread and background statistics reads apart).

    .venv/bin/python -m experiments.py4j_calls --sf 0.05
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import tempfile
import threading
import time
import traceback
from pathlib import Path

import py4j.clientserver

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import QUERY_IDS, statement


class CallCounter:
    """Counts the main thread's py4j commands, by the innermost Criss frame that sent them."""

    def __init__(self) -> None:
        self.calls: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        self.active = False
        self._send = py4j.clientserver.ClientServerConnection.send_command
        counter, send, main = self, self._send, threading.main_thread()

        def send_command(connection, command):
            started = time.perf_counter()
            try:
                return send(connection, command)
            finally:
                if counter.active and threading.current_thread() is main:
                    counter.count(time.perf_counter() - started)

        py4j.clientserver.ClientServerConnection.send_command = send_command

    def count(self, seconds: float) -> None:
        site = "other"
        for frame in reversed(traceback.extract_stack(limit=40)):
            if "/criss/" in frame.filename or "/qtree/" in frame.filename:
                site = (
                    f"{frame.filename.rsplit('/', 2)[-2]}/{Path(frame.filename).name}:{frame.name}"
                )
                break
        self.calls[site] += 1
        self.seconds[site] += seconds

    def close(self) -> None:
        py4j.clientserver.ClientServerConnection.send_command = self._send


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", default="0.05")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    spark = local_spark(app_name="py4j-calls")
    register_views(spark, Path("data/tpch") / f"sf{args.sf}")
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-py4j-"))
    for qid in QUERY_IDS[:4]:
        cs.sql(statement(qid, seed=1).sql).collect()
    counter, phases, planning, n = CallCounter(), collections.Counter(), 0.0, 0
    for position, qid in enumerate(QUERY_IDS * 2):
        sql = statement(qid, seed=100 + position).sql
        started = time.perf_counter()
        counter.active = True
        df = cs.sql(sql)
        counter.active = False
        planning += time.perf_counter() - started
        df.collect()
        phases.update(cs.record(df).phase_seconds)
        n += 1
    counter.close()
    result = {
        "created": dt.datetime.now().isoformat(timespec="seconds"),
        "sf": args.sf,
        "statements": n,
        "cs_sql_ms_per_query": round(planning / n * 1000, 1),
        "py4j_calls_per_query": round(sum(counter.calls.values()) / n, 1),
        "phase_ms_per_query": {k: round(v / n * 1000, 1) for k, v in phases.items()},
        "calls_per_query_by_site": {
            site: [round(c / n, 1), round(counter.seconds[site] / n * 1000, 1)]
            for site, c in counter.calls.most_common(25)
        },
    }
    print(json.dumps(result, indent=1))
    out = args.out or Path(f"experiments/results/issue22/py4j-calls-sf{args.sf}.json")
    out.write_text(json.dumps(result, indent=1))
    cs.close()
    spark.stop()


if __name__ == "__main__":
    main()
