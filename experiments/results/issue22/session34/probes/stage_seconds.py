"""What a fresh home learns as Spark's fixed seconds per stage: N TPC-H statements under
fresh parameters (qgen's rules, seeded) through Criss in a new application and home, with
each run's observation (its seconds, its operators' task seconds over the parallelism, its
stages) and the learned rate after it.

    python experiments/results/issue22/session34/probes/stage_seconds.py 30 data/tpch/sf1
"""

import random
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.planner.learning import Learning
from criss.sparksession import local_spark
from criss.workload.tpch import queries as tpch
from criss.workload.tpch.data import register_views

_learn_from_run = Learning.learn_from_run


def _reporting(self, facts):
    if facts.seconds > 0 and facts.stages > 0:
        per_stage = (facts.seconds - facts.compute_seconds) / facts.stages
        print(
            f"   observed: {facts.seconds:.3f} s, compute {facts.compute_seconds:.3f} s,"
            f" {facts.stages} stages -> {per_stage:.3f} s a stage",
            flush=True,
        )
    _learn_from_run(self, facts)


def main(count: int, data: Path) -> None:
    Learning.learn_from_run = _reporting
    spark = local_spark(app_name="stage-seconds")
    register_views(spark, data)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-stage-seconds-"))
    rng = random.Random(3)
    for i in range(count):
        qid = rng.choice(tpch.QUERY_IDS)
        sql = tpch.variant_statement(qid, "orig", tpch.random_params(qid, rng, 1.0)).sql
        started = time.perf_counter()
        cs.sql(sql).collect()
        seconds = time.perf_counter() - started
        cs.settle_harvests()
        print(f"#{i} Q{qid} {seconds:.2f} s; stage_seconds now {cs.learning.stage_seconds:.3f}")
    cs.close()
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]))
