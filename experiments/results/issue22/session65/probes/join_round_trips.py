"""JVM round trips of the join choices, per statement (session 65): one application, one
home, TPC-H templates 2, 5, 7, 8, 9, 10 and 21 as orig, v60 and v30 under parameter seeds
1-3, each planned by ``cs.sql()`` (its round trips counted by site with
``criss.bridge.roundtrips``) and collected. A count, unlike a time, does not move with the
machine's speed. From the repository root:

    .venv/bin/python experiments/results/issue22/session65/probes/join_round_trips.py SF
"""

import collections
import subprocess
import sys
import tempfile
from pathlib import Path

import criss
from criss.bridge.roundtrips import RoundTripCounter
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

TEMPLATES = (2, 5, 7, 8, 9, 10, 21)
#: Where the join choices' round trips are sent from (``RoundTripCounter``'s site names).
JOIN_SITES = ("bridge/joins.py", "joins/")


def main() -> None:
    sf = sys.argv[1]
    spark = local_spark(app_name="join-round-trips", fixed_heap=True)
    register_views(spark, Path("data/tpch") / f"sf{sf}")
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="join-round-trips-"))
    counter = RoundTripCounter()
    by_template: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    statements: collections.Counter = collections.Counter()
    try:
        for seed in (1, 2, 3):
            for qid in TEMPLATES:
                for variant in ("orig", "v60", "v30"):
                    before = collections.Counter(counter.calls)
                    counter.active = True
                    df = cs.sql(statement(qid, variant, seed, float(sf)).sql)
                    counter.active = False
                    df.collect()
                    statements[qid] += 1
                    by_template[qid].update(collections.Counter(counter.calls) - before)
    finally:
        counter.close()
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"# engine {rev.stdout.strip()}, SF {sf}: JVM round trips per statement in cs.sql()")
    print("template  all  join choices (bridge/joins.py and criss/joins)")
    for qid, calls in by_template.items():
        joins = sum(n for site, n in calls.items() if site.startswith(JOIN_SITES))
        n = statements[qid]
        print(f"Q{qid:<3d} {sum(calls.values()) / n:8.1f} {joins / n:8.1f}")
    cs.close()
    spark.stop()


if __name__ == "__main__":
    main()
