import sys, tempfile, time, statistics
from pathlib import Path
import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement
spark = local_spark(app_name="jobs"); spark.sparkContext.setLogLevel("ERROR")
register_views(spark, Path("data/tpch/sf1"))
sc = spark.sparkContext
cs = criss.session(spark, home=tempfile.mkdtemp(prefix="m-j-"), lift_aggregates=False)
cs2 = criss.session(spark, home=tempfile.mkdtemp(prefix="m-j2-"), lift_aggregates=False, eager_results=False)
def jobs_of(fn, group):
    sc.setJobGroup(group, group)
    t = time.perf_counter(); fn(); s = time.perf_counter() - t
    sc.setJobGroup("none", "none")
    ids = sc.statusTracker().getJobIdsForGroup(group)
    stages = sum(len(sc.statusTracker().getJobInfo(j).stageIds) for j in ids)
    return s, len(ids), stages
times = {"plain": [], "eager": [], "noeager": []}
for q in [int(x) for x in sys.argv[1].split(",")]:
    for i in range(4):
        sql = statement(q, seed=9000 + i).sql
        for name, fn in (("plain", lambda: spark.sql(sql).collect()), ("eager", lambda: cs.sql(sql).collect()), ("noeager", lambda: cs2.sql(sql).collect())):
            s, j, st = jobs_of(fn, f"{name}-{q}-{i}")
            cs.settle_harvests(); cs2.settle_harvests()
            times[name].append(s)
            print(f"Q{q} {i} {name:8s} {s:.3f}s jobs {j} stages {st}", flush=True)
