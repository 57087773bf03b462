"""One TPC-H template under fresh parameters (qgen's rules, seeded), each statement run by
plain Spark and then through Criss in one application, until Criss reuses something; then
its explain and Spark's formatted plan of the DataFrame it handed out.

    python experiments/results/issue22/session34/probes/reuse_of_one_template.py 2 8 data/tpch/sf1
"""

import random
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch import queries as tpch
from criss.workload.tpch.data import register_views


def main(qid: int, count: int, data: Path) -> None:
    spark = local_spark(app_name="reuse-of-one-template")
    register_views(spark, data)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-one-template-"))
    for warm in (1, 3, 5):
        spark.sql(tpch.statement(warm, seed=1).sql).collect()
    rng = random.Random(11)
    for i in range(count):
        sql = tpch.variant_statement(qid, "orig", tpch.random_params(qid, rng, 1.0)).sql
        started = time.perf_counter()
        spark.sql(sql).collect()
        plain = time.perf_counter() - started
        started = time.perf_counter()
        df = cs.sql(sql)
        df.collect()
        mine = time.perf_counter() - started
        cs.settle_harvests()
        counters = {k: v for k, v in cs.record(df).counters.items() if v}
        print(f"#{i} plain {plain:.2f} criss {mine:.2f}", counters, flush=True)
        if counters.get("operators_reused"):
            print(cs.explain(df))
            df.explain("formatted")
            break
    cs.close()
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
