"""Does a home's state stay bounded over a long run? (issue 21, "Bounded state")

Plans N TPC-H statements through one Criss session, planning only: nothing is cached or
run (``eager_results=False``, ``min_ref`` out of reach), so the run measures what every
query leaves in the catalog, not Spark. Statements draw a query (Q1-Q22) and a parameter
seed from a pool of ``--pool`` seeds (qgen's substitution rules), so most are new and
some recur, as in an analyst's months of ad-hoc work. Every ``--every`` statements it
records the QTree's operators and edges, the meta entries, the catalog files' bytes and
the median planning time of the last window.

    .venv/bin/python -m experiments.bounded_state --statements 10000 --forget-after 120
    .venv/bin/python -m experiments.bounded_state --statements 3000 --forget-after 0

``--forget-after`` is the ageing window in seconds (``forget_after``); 0 turns ageing
off. The run's wall clock stands for months: a window of minutes over 10,000 statements
ages operators as a window of weeks would over a team's year.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import ensure_tpch, register_views
from criss.workload.tpch.queries import QUERY_IDS, statement

RESULTS = Path(__file__).parent / "results" / "issue21"


def taken(rounds) -> list:
    """The rounds of forgetting since the last sample (the session keeps the latest few)."""
    out = list(rounds)
    rounds.clear()
    return out


def sample(cs, home: Path, done: int, window: list[float], started: float, rounds: list) -> dict:
    db = cs.qtree.db

    def count(table: str) -> int:
        return db.execute(f"select count(*) from {table}").fetchone()[0]

    return {
        "statements": done,
        "seconds": round(time.perf_counter() - started, 1),
        "operators": count("nodes"),
        "edges": count("edges"),
        "meta": count("meta"),
        "logged_queries": count("queries"),
        "catalog_bytes": sum(p.stat().st_size for p in home.glob("catalog.db*")),
        "cache_bytes": sum(p.stat().st_size for p in home.glob("cache.db*")),
        "planning_median_ms": round(statistics.median(window) * 1000, 1) if window else None,
        "planning_max_ms": round(max(window) * 1000, 1) if window else None,
        "forgotten": cs.counters["operators_forgotten"],
        # each round holds the session's lock for `ms`, and catalog.db's write lock
        # (another application's writes wait) for `catalog_ms`
        "forget_rounds": [
            {
                "ms": round(r.seconds * 1000, 1),
                "catalog_ms": round(r.catalog_seconds * 1000, 1),
                "operators": r.operators,
                "entries": r.entries,
            }
            for r in rounds
        ],
    }


def run(statements: int, forget_after: float, seed: int, pool: int, every: int, sf: float):
    spark = local_spark("criss-bounded-state", conf={"spark.sql.shuffle.partitions": "8"})
    register_views(spark, ensure_tpch(sf, quiet=True))
    home = Path(tempfile.mkdtemp(prefix="criss-bounded-"))
    rng = random.Random(seed)
    samples, window = [], []
    options = {"eager_results": False, "min_ref": 10**9, "forget_after": forget_after}
    with criss.session(spark, home=str(home), **options) as cs:
        started = time.perf_counter()
        samples.append(sample(cs, home, 0, window, started, taken(cs.forget_rounds)))
        for done in range(1, statements + 1):
            sql = statement(rng.choice(QUERY_IDS), seed=rng.randrange(pool), sf=sf).sql
            cs.sql(sql)
            window.append(cs.last_record.planning_seconds)
            if done % every == 0:
                samples.append(sample(cs, home, done, window, started, taken(cs.forget_rounds)))
                window = []
                print(json.dumps(samples[-1]), flush=True)
        fallbacks = cs.counters["fallbacks"]
    return {
        "what": "bounded state, planning only",
        "statements": statements,
        "forget_after": forget_after,
        "seed": seed,
        "pool": pool,
        "sf": sf,
        "fallbacks": fallbacks,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "spark": spark.version,
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, default=10000)
    parser.add_argument("--forget-after", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pool", type=int, default=5000, help="parameter seeds to draw from")
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--sf", type=float, default=0.01)
    args = parser.parse_args()
    result = run(args.statements, args.forget_after, args.seed, args.pool, args.every, args.sf)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"bounded-state-{args.statements}-forget{args.forget_after:g}-seed{args.seed}.json"
    (RESULTS / name).write_text(json.dumps(result, indent=1) + "\n")
    print(f"written to {RESULTS / name}")


if __name__ == "__main__":
    main()
