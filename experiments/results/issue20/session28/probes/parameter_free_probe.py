"""Probe (session 28): which operators of each TPC-H template are parameter-free aggregates
(criss.qtree.parameters), and how a new home decides about them on first sight. Planning
only (no action runs).

Found (engines 2277122 and 300a191, SF 1, qgen's parameters with seed 1): Q17's per-part
average and Q18's per-order sum (twice in its plan) and no other template; each decided
`eager_parameter_free` in a new home.

    .venv/bin/python experiments/results/issue20/session28/probes/parameter_free_probe.py \\
        data/tpch/sf1 > parameter_free_probe.out
"""

import sys
import tempfile

import criss
from criss.qtree.parameters import parameter_free_intermediates
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import QUERY_IDS, statement


def main(data_dir: str) -> None:
    spark = local_spark(app_name="parameter-free-probe")
    register_views(spark, data_dir)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="parameter-free-"))
    for qid in QUERY_IDS:
        cs.sql(statement(qid, seed=1).sql)
        tree = cs.canonical_tree(cs.last_record.captured)
        found = [(n.op, n.path) for n in parameter_free_intermediates(tree)]
        decided = [
            (o.op, o.path, o.decision.reason)
            for o in cs.last_record.operators
            if o.decision.reason.startswith("eager_parameter_free")
        ]
        print(f"Q{qid}", found, decided, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
