"""cProfile of one first sight planned in an existing home (the home a first-sight-split
run left): the statement is a TPC-DS query with its years shifted, so it is new to the
home while its tables and most of its operators are not.

    .venv/bin/python PROBE HOME QUERY [--data-dir data/tpcds/sf1]
"""

import argparse
import cProfile
import pstats
import re
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query

parser = argparse.ArgumentParser()
parser.add_argument("home")
parser.add_argument("query")
parser.add_argument("--data-dir", default="data/tpcds/sf1")
args = parser.parse_args()
spark = local_spark(app_name="profile-one")
register_views(spark, Path(args.data_dir))
text = query(args.query)
for shift in (1, 2):
    shifted = re.sub(r"\b(199\d|200\d)\b", lambda m, shift=shift: str(int(m[1]) + shift), text)
    spark.sql(shifted).collect()
with criss.session(spark, home=args.home) as cs:
    shifted = re.sub(r"\b(199\d|200\d)\b", lambda m: str(int(m[1]) + 1), text)
    started = time.perf_counter()
    df = cs.sql(shifted)
    print("unprofiled planning", time.perf_counter() - started, dict(cs.record(df).phase_seconds))
    shifted = re.sub(r"\b(199\d|200\d)\b", lambda m: str(int(m[1]) + 2), text)
    profile = cProfile.Profile()
    profile.enable()
    df = cs.sql(shifted)
    profile.disable()
    print("profiled phases", dict(cs.record(df).phase_seconds))
stats = pstats.Stats(profile)
stats.sort_stats("cumulative").print_stats(70)
stats.sort_stats("tottime").print_stats(25)
spark.stop()
