"""An analyst narrowing a result by conditions of any kind (a LIKE, an OR, arithmetic),
through Criss and through plain Spark side by side in one application (SF 1).

The first statement (a quarter of lineitem's rows, five columns) is cached as a first-seen
result; each refinement adds one condition to it, which filter subsumption serves from the
cached rows when the cache holds the columns the condition reads (``ad3b692``). Each
refinement runs on plain Spark and through Criss in ``run_order``'s orders; rows are
compared and the rule that served it printed.

    python -m experiments.results.issue20.session39.probes.refine_by_condition --rounds 3
"""

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.replay import run_order
from criss.workload.tpch.data import register_views

BASE = (
    "select l_orderkey, l_quantity, l_extendedprice, l_shipmode, l_comment from lineitem "
    "where l_shipdate >= date '1995-01-01' and l_shipdate < date '1996-09-01'"
)
REFINEMENTS = {
    "like": " and l_comment like '%express%'",
    "or": " and (l_shipmode = 'AIR' or l_quantity > 45)",
    "arithmetic": " and l_extendedprice / l_quantity > 2000",
    "not-in-or-like": " and not (l_shipmode in ('MAIL', 'SHIP') or l_comment like '%ironic%')",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spark = local_spark(app_name="refine-by-condition")
    register_views(spark, Path("data/tpch/sf1"))
    lines = []
    for round_ in range(args.rounds):
        cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-refine-"))
        cs.sql(BASE).collect()
        cs.settle_harvests()
        for name, condition in REFINEMENTS.items():
            sql = BASE + condition
            line = {"round": round_, "refinement": name}
            for path in run_order(("plain", "criss"), len(lines)):
                started = time.perf_counter()
                if path == "plain":
                    plain_rows = spark.sql(sql).collect()
                else:
                    df = cs.sql(sql)  # Criss's planning is the user's time too
                    criss_rows = df.collect()
                    counters = cs.record(df).counters
                line[path] = time.perf_counter() - started
            cs.settle_harvests()
            line["rows"] = len(plain_rows)
            line["equal"] = Counter(map(tuple, plain_rows)) == Counter(map(tuple, criss_rows))
            line["served_by"] = sorted(k for k in counters if k.startswith("rewrites_"))
            lines.append(line)
            print(json.dumps(line, default=lambda x: round(x, 4)), flush=True)
        cs.close()
    for name in REFINEMENTS:
        rows = [line for line in lines if line["refinement"] == name]
        plain = sum(r["plain"] for r in rows) / len(rows)
        through = sum(r["criss"] for r in rows) / len(rows)
        print(f"# {name}: plain {plain:.3f} s, Criss {through:.3f} s ({through / plain:.2f}x)")


if __name__ == "__main__":
    main()
