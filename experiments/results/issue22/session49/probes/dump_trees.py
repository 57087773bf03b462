"""Dump the captured (pre-canonical) trees of every TPC-DS query, for offline profiling."""

import pickle
import sys
import tempfile
from pathlib import Path

import criss
import criss.engine as engine
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids

TREES = []
original = engine.CrissSession.canonical_tree


def grab(self, captured):
    TREES.append(captured.tree)
    return original(self, captured)


engine.CrissSession.canonical_tree = grab
spark = local_spark(app_name="dump")
register_views(spark, Path(sys.argv[1]))
with criss.session(spark, home=tempfile.mkdtemp()) as cs:
    for name in [q for q in query_ids() if q != "q90"]:
        cs.sql(query(name))
pickle.dump(TREES, open(sys.argv[2], "wb"))
print(len(TREES))
spark.stop()
