"""What a first sight adds, in parts (session 62's probe; session 65 adds a filter of
templates, the third argument, e.g. ``2,16,17``, and a line per template at the end).

In one application, each TPC-H template under fresh parameters (drift seed 3's
statements, a new one each round) runs as a first sight three ways, back to back, the
order rotating by round: plain Spark; Criss with its result caching off
(``eager_results=False``: planning, matching, join choices, but no Spark cache in the
action); and Criss as it ships (the result computed into Spark's cache by the action,
written after it). Each Criss way has a fresh home for each run (bandwidths given, so
none is measured). Every run waits for an idle machine; nothing is timed before each
template's untimed run in each way. From the repository root:

    .venv/bin/python first_sight_parts.py SF ROUNDS [TEMPLATES]
"""

import collections
import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.idle import wait_for_idle
from criss.workload.streams import make_stream
from criss.workload.tpch.data import register_views

sf, rounds = sys.argv[1], int(sys.argv[2])
only = {int(x) for x in sys.argv[3].split(",")} if len(sys.argv) > 3 else None
spark = local_spark("parts", master="local[2]", conf={"spark.sql.shuffle.partitions": "8"})
register_views(spark, f"data/tpch/sf{sf}")
#: Given, so that a fresh home measures nothing before its first query.
RATES = {"memory_bandwidth": 2e9, "disk_bandwidth": 5e8, "codec_rate": 2e8}
OPTIONS = {"plain": None, "no_eager": {"eager_results": False}, "criss": {}}
ways: dict = {}


def fresh_homes():
    """A new home for each Criss way: every run below is a first sight in its home."""
    for way, options in OPTIONS.items():
        if ways.get(way) is not None:
            ways[way].close()
        ways[way] = (
            None
            if options is None
            else criss.session(spark, home=tempfile.mkdtemp(), **RATES, **options)
        )


by_template = collections.defaultdict(dict)
for q in make_stream("drift", 2000, seed=3, sf=float(sf)):
    by_template[q.qid][q.sql] = None


def run(way, sql):
    cs = ways[way]
    wait_for_idle(3.0)
    t = time.perf_counter()
    df = cs.sql(sql) if cs else spark.sql(sql)
    planned = time.perf_counter() - t
    df.collect()
    seconds = time.perf_counter() - t
    summary = cs.last_query_summary() if cs else {}
    return seconds, planned, summary.get("operators_cached_in_action", 0)


totals = collections.defaultdict(float)
order = list(OPTIONS)
per = collections.defaultdict(lambda: collections.defaultdict(float))
for qid in sorted(q for q in by_template if only is None or q in only):
    statements = list(by_template[qid])
    fresh_homes()
    for way in order:  # untimed: this template's code compiled on each way
        run(way, statements[0])
    for r in range(rounds):
        sql = statements[1 + r]
        fresh_homes()
        rotated = order[r % 3 :] + order[: r % 3]
        got = {way: run(way, sql) for way in rotated}
        for way, (seconds, planned, _) in got.items():
            totals[way] += seconds
            per[qid][way] += seconds
            per[qid][way + "_sql"] += planned
            totals[way + "_sql"] += planned
        print(
            f"Q{qid} round {r} "
            + " ".join(
                f"{w} {got[w][0]:.3f} (cs.sql {got[w][1]:.3f}, cached {got[w][2]})" for w in order
            ),
            flush=True,
        )
print({k: round(v, 2) for k, v in totals.items()})
print(
    f"no_eager / plain {totals['no_eager'] / totals['plain']:.4f}, "
    f"criss / plain {totals['criss'] / totals['plain']:.4f}, "
    f"criss / no_eager {totals['criss'] / totals['no_eager']:.4f}"
)
for qid, t in per.items():
    ratios = (
        f"no_eager/plain {t['no_eager'] / t['plain']:.3f} "
        f"criss/plain {t['criss'] / t['plain']:.3f} "
        f"criss/no_eager {t['criss'] / t['no_eager']:.3f}"
    )
    planned = " ".join(f"{w} {t[w + '_sql'] / rounds * 1000:.0f}" for w in OPTIONS)
    print(f"Q{qid}: {ratios}; cs.sql ms per run: {planned}")
