"""Probe (session 27): the statistics Criss records for TPC-H Q18's operators over its first
two drift-seed-3 runs, and the physical operators whose logical link the metrics walk could
not place.

Found (engine abd3164): on the second run AQE broadcast the reused HAVING subquery over its
finished shuffle stage; that broadcast stage's logical plan is the shuffle stage's own
LogicalQueryStage, which the walk did not restore, so the joins above it fell back to their
first child's path: the customer projection (954eec8d5d21 there) was recorded with the
result's 9 rows (63 B) and 1.82 s, the orders projection with 9 rows. On b022e3a every link
is placed and both keep 150,000 and 1,500,000 rows.

    .venv/bin/python experiments/results/issue20/session27/probes/q18_stats_probe.py data/tpch/sf1
"""

import sys
import tempfile

import criss
from criss.bridge import metrics
from criss.qtree.tree import QTree
from criss.sparksession import local_spark
from criss.workload.streams import drift_stream
from criss.workload.tpch.data import register_views

_record_executions = QTree.record_executions
_path_of = metrics._MetricsWalk._path_of


def record_executions(self, statistics):
    # fingerprints depend on the data's location: read the customer projection's by rows
    for fingerprint, (texec, size, rows) in statistics.items():
        print(f"recorded {fingerprint[:12]}: Texec {texec:.3f}s, {size} B, {rows} rows")
    return _record_executions(self, statistics)


def path_of(self, physical):
    path = _path_of(self, physical)
    if physical.logicalLink().isDefined() and path in (None, False):
        print("unplaced:", physical.getClass().getSimpleName())
    return path


def main(data_dir: str) -> None:
    QTree.record_executions = record_executions
    metrics._MetricsWalk._path_of = path_of
    spark = local_spark(app_name="q18-stats-probe")
    register_views(spark, data_dir)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="q18-stats-"))
    runs = [item for item in drift_stream(100, 3, 1) if item.query == "Q18"][:2]
    for item in runs:
        print(f"== position {item.position}")
        cs.sql(item.sql).collect()
        cs.settle_harvests()


if __name__ == "__main__":
    main(sys.argv[1])
