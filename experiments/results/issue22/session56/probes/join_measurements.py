"""Which join inputs a stream measures (key counts, a Spark job each after an action), what
each measurement cost, and what the join optimizations decided where they were measured.

Session 56's copy of session 54's probe: it also prints, per position, the measurements
that query queued and its join decisions that measured rows or keys took part in.

    .venv/bin/python experiments/results/issue22/session54/probes/join_measurements.py \
        --stream drift --seed 3 --sf 1 --queries 100
"""

import argparse
import collections
import tempfile
import time

import criss
from criss.engine import CrissSession
from criss.sparksession import local_spark
from criss.workload.replay import ReplayConfig
from criss.workload.tpch.data import ensure_tpch, register_views

MEASURED = []  # (seconds, key)
QUEUED = []  # (position, query, key)
CURRENT = {"item": None}
_orig = CrissSession.measure_after_action


def _timed_measure(self, key, measure):
    def timed():
        started = time.perf_counter()
        try:
            return measure()
        finally:
            MEASURED.append((time.perf_counter() - started, key))

    if key not in self._measuring and key not in self._measurements:
        QUEUED.append((CURRENT["item"].position, CURRENT["item"].query, key))
    return _orig(self, key, timed)


CrissSession.measure_after_action = _timed_measure


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stream", default="drift")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--queries", type=int, default=100)
    a = p.parse_args()
    config = ReplayConfig(
        stream=a.stream, queries=a.queries, sf=a.sf, seed=a.seed, modes=("criss",)
    )
    spark = local_spark("join-measurements", conf={"spark.sql.shuffle.partitions": "8"})
    register_views(spark, ensure_tpch(a.sf, quiet=True))
    reasons = collections.Counter()
    chosen = collections.Counter()
    settle = 0.0
    with criss.session(spark, home=tempfile.mkdtemp()) as cs:
        for item in config.stream_queries():
            CURRENT["item"] = item
            df = cs.sql(item.sql)
            df.collect()
            started = time.perf_counter()
            cs.settle_harvests()
            settle += time.perf_counter() - started
            record = cs.last_record
            queued = [q[2][-8:] for q in QUEUED if q[0] == item.position]
            notable = [
                c
                for c in record.joins
                if any(w in c.reason for w in ("measured", "est.", "adaptive", "survival", "keeps"))
            ]
            if queued or notable:
                print("position", item.position, item.query, "queued", queued)
                for choice in notable:
                    print("     ", choice.optimization, choice.join[:50], "|", choice.reason[:150])
            for choice in record.joins:
                if choice.chosen:
                    chosen[(choice.optimization, choice.reason[:60])] += 1
                else:
                    reasons[(choice.optimization, choice.reason[:90])] += 1
        counters = cs.report()["counters"]
    print("measurement jobs", len(MEASURED), "seconds", round(sum(s for s, _ in MEASURED), 2))
    for s, k in MEASURED:
        print(f"  {s:6.2f} s  {k}")
    print("after-action settle seconds", round(settle, 2))
    print("applied:", dict(chosen))
    print("refusals (optimization, reason): count")
    for (o, r), n in reasons.most_common(40):
        print(f"  {n:4d}  {o:16s} {r}")
    print({k: v for k, v in counters.items() if "join" in k})


main()
