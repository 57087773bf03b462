import json, statistics, sys, tempfile, time
from pathlib import Path
import criss
from criss.sparksession import local_spark
from criss.workload.replay import run_order
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

spark = local_spark(app_name="fs-micro")
spark.sparkContext.setLogLevel("ERROR")
register_views(spark, Path("data/tpch/sf1"))
eager = criss.session(spark, home=tempfile.mkdtemp(prefix="m-e-"), lift_aggregates=False)
noeager = criss.session(spark, home=tempfile.mkdtemp(prefix="m-n-"), lift_aggregates=False, eager_results=False)
def plain(sql):
    t = time.perf_counter(); spark.sql(sql).collect(); return time.perf_counter() - t
def through(cs):
    def run(sql):
        t = time.perf_counter(); df = cs.sql(sql); t1 = time.perf_counter(); df.collect(); fg = time.perf_counter() - t
        cs.settle_harvests(); return fg
    return run
paths = {"plain": plain, "eager": through(eager), "noeager": through(noeager)}
templates = [int(x) for x in sys.argv[1].split(",")]
rounds = int(sys.argv[2])
out = {p: {} for p in paths}
seed, turn = 5000, 0
for q in templates:
    for _ in range(2): spark.sql(statement(q, seed=seed).sql).collect(); seed += 1
for r in range(rounds):
    for q in templates:
        for p in run_order(tuple(paths), turn):
            seed += 1
            sql = statement(q, seed=seed).sql
            out[p].setdefault(q, []).append(paths[p](sql))
        turn += 1
for q in templates:
    pl = statistics.median(out["plain"][q])
    print(f"Q{q}", " ".join(f"{p} {statistics.median(out[p][q]):.3f} ({statistics.median(out[p][q])-pl:+.3f})" for p in paths))
print("eager report", {k: v for k, v in eager.report().items() if "cached" in k or "reused" in k} if isinstance(eager.report(), dict) else "")
json.dump(out, open("/tmp/micro/out.json", "w"))
