"""A template's statements of Random-QS-v seed 3 (default Q21: orig, v60, v30, then the
repeats of v60 and v30) through Criss in a fresh home, in that order, each followed by
plain Spark; prints the times, the counters and ``cs.explain`` of each. Criss options as
KEY=VALUE after the order (``base_share=0.5``).

    python experiments/results/issue20/session60/probes/q21_variants.py 21 \
        orig,v60,v30,v60,v30 [base_share=0.5]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def main() -> None:
    template = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    order = sys.argv[2].split(",") if len(sys.argv) > 2 else ["orig", "v60", "v30", "v60", "v30"]
    options = dict(item.split("=", 1) for item in sys.argv[3:])
    spark = local_spark(app_name="variants")
    register_views(spark, Path("data/tpch/sf1"))
    spark.sql(statement(template, "orig", seed=3).sql).collect()  # the JVM warmed
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix=f"q{template}-"), **options)
    for variant in order:
        sql = statement(template, variant, seed=3).sql
        started = time.perf_counter()
        df = cs.sql(sql)
        rows = df.collect()
        seconds = time.perf_counter() - started
        cs.settle_harvests()
        started = time.perf_counter()
        spark.sql(sql).collect()
        plain = time.perf_counter() - started
        counters = {k: c for k, c in cs.last_record.counters.items() if c}
        print(
            f"==== Q{template} {variant}: criss {seconds:.2f} s, plain after {plain:.2f} s, "
            f"{len(rows)} rows; counters {counters}"
        )
        print(cs.explain(df), flush=True)
    cs.close()


if __name__ == "__main__":
    main()
