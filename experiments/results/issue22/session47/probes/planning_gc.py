"""cs.sql()'s planning of every TPC-DS query's first sight with Python's cyclic garbage
collector on and off, side by side in one application: two homes, each statement planned
in both (the order alternating), each run plain first (untimed); the actions run untimed.

    .venv/bin/python PROBE [--data-dir data/tpcds/sf0.1]
"""

import argparse
import gc
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids

parser = argparse.ArgumentParser()
parser.add_argument("--data-dir", default="data/tpcds/sf0.1")
args = parser.parse_args()
spark = local_spark(app_name="planning-gc")
register_views(spark, Path(args.data_dir))
names = [q for q in query_ids() if q != "q90"]
seconds = {"gc on": 0.0, "gc off": 0.0}
collections_during = {"gc on": 0, "gc off": 0}
with (
    criss.session(spark, home=tempfile.mkdtemp()) as on,
    criss.session(spark, home=tempfile.mkdtemp()) as off,
):
    for i, name in enumerate(names):
        text = query(name)
        spark.sql(text).collect()
        for label in ("gc on", "gc off") if i % 2 == 0 else ("gc off", "gc on"):
            cs = on if label == "gc on" else off
            before = sum(s["collections"] for s in gc.get_stats())
            if label == "gc off":
                gc.disable()
            started = time.perf_counter()
            df = cs.sql(text)
            seconds[label] += time.perf_counter() - started
            gc.enable()
            collections_during[label] += sum(s["collections"] for s in gc.get_stats()) - before
            df.collect()
            cs.settle_harvests()
n = len(names)
for label in seconds:
    print(
        f"{label}: planning {seconds[label]:.2f} s ({1000 * seconds[label] / n:.1f} ms per query), "
        f"{collections_during[label]} collections during planning"
    )
spark.stop()
