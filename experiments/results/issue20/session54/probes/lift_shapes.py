"""Which TPC-H templates' aggregates could be lifted, and which are kept from it by an output
that is an expression over aggregates (Catalyst folds the Project above into the Aggregate).
Dry-run captures at SF 0.05, no action (session 54):

    .venv/bin/python experiments/results/issue20/session54/probes/lift_shapes.py
"""

import tempfile

import criss
from criss.qtree.subsume import parameter_columns, subsumption_key, undecomposed_output
from criss.sparksession import local_spark
from criss.workload.tpch.data import ensure_tpch, register_views
from criss.workload.tpch.queries import QUERY_IDS, statement

spark = local_spark("lift-shapes", conf={"spark.sql.shuffle.partitions": "4"})
register_views(spark, ensure_tpch(0.05, quiet=True))
with criss.session(spark, home=tempfile.mkdtemp(), dry_run=True) as cs:
    for qid in QUERY_IDS:
        tree = cs.canonical_tree(cs.bridge.capture(spark.sql(statement(qid, seed=1, sf=0.05).sql)))
        for n in tree.walk():
            if n.op != "Aggregate":
                continue
            k = subsumption_key(n)
            if k is None:
                print(f"Q{qid:<2} {str(n.path):14} no subsumption key")
                continue
            shape = k[1]
            params = sorted({a.column[:8] for a in shape.atoms if a.kind in ("compare", "in")})
            kinds = [o.kind if o.kind != "aggregate" else o.function for o in shape.outputs]
            # the engine's own rules (criss.planner.lift), not a copy of them
            if parameter_columns(shape) is None:
                why = "no range or IN list on a column it does not group by"
            else:
                why = undecomposed_output(shape) or "liftable"
            print(f"Q{qid:<2} {str(n.path):14} params={len(params)} outputs={kinds} -> {why}")
