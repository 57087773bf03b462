"""What a first sight of an ``ORDER BY … LIMIT`` query costs when Criss keeps its top
rows against when it keeps the result the Sort ranks, every path in one application and
in turn (session 38's method: ``criss.workload.replay.run_order``'s orders).

Paths: ``plain`` (Spark), ``top-rows`` (Criss as built: the limit's rows cached by the
action), ``ranked`` (Criss as before ``top_rows``: the operator under the Sort cached by
the action; emulated by patching ``criss.qtree.rewrite.top_rows`` to say no), and
``not-cached`` (Criss with ``eager_results=false``). Each Criss path in a new home; every
path under fresh values (new code to compile, as a stream's first occurrences). A second
sight of the same statement follows on each Criss path (the repeat a first sight is
cached for). One JSON line per template and round, then the totals.

    python -m experiments.results.issue22.session42.probes.top_rows_paths --rounds 6
"""

import argparse
import json
import statistics
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import criss
import criss.planner.workspace as workspace
import criss.qtree.rewrite as rewrite
from criss.sparksession import local_spark
from criss.workload.replay import run_order
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

PATHS = ("plain", "top-rows", "ranked", "not-cached")
#: The TPC-H templates ending in ORDER BY … LIMIT.
TEMPLATES = (2, 3, 10, 18, 21)


@contextmanager
def ranked_results():
    """Criss as before the top rows were storable."""
    saved = rewrite.top_rows, workspace.top_rows
    rewrite.top_rows = workspace.top_rows = lambda node: False
    try:
        yield
    finally:
        rewrite.top_rows, workspace.top_rows = saved


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run(spark, path: str, sql: str) -> dict:
    """The first sight's seconds on ``path`` (and a second sight's, on Criss's paths)."""
    if path == "plain":
        return {"seconds": timed(lambda: spark.sql(sql).collect())}
    options = {"eager_results": False} if path == "not-cached" else {}
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-top-"), **options)
    with ranked_results() if path == "ranked" else nullcontext():
        first = timed(lambda: cs.sql(sql).collect())
        record = cs.last_record
        cs.settle_harvests()  # untimed, as a replay's settle
        second = timed(lambda: cs.sql(sql).collect())
    return {
        "seconds": first,
        "second": second,
        "cached_bytes": record.counters.get("bytes_written", 0),
        "cached": record.counters.get("operators_cached_in_action", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--sf", default="1")
    parser.add_argument("--template", type=int, action="append", help="default: all five")
    args = parser.parse_args()
    templates = tuple(args.template or TEMPLATES)
    spark = local_spark(app_name="top-rows-paths")
    register_views(spark, Path(f"data/tpch/sf{args.sf}"))
    seed, lines = 42000, []
    for round_ in range(args.rounds):
        for qid in templates:
            seed += 1
            run(spark, "plain", statement(qid, seed=seed).sql)  # untimed: compiles
            order = run_order(PATHS, len(lines))
            line = {"query": f"Q{qid}", "round": round_, "first": order[0]}
            for path in order:
                seed += 1
                line[path] = run(spark, path, statement(qid, seed=seed).sql)
            lines.append(line)
            print(json.dumps(line, default=lambda x: round(x, 4)), flush=True)
    summarize(lines, templates)


def summarize(lines: list[dict], templates: tuple[int, ...]) -> None:
    for qid in (*templates, None):
        rows = [x for x in lines if qid is None or x["query"] == f"Q{qid}"]
        plain = sum(x["plain"]["seconds"] for x in rows)
        parts = [f"# {'all' if qid is None else f'Q{qid}':<4} plain {plain:7.2f}s"]
        for path in PATHS[1:]:
            total = sum(x[path]["seconds"] for x in rows)
            extra = statistics.median(x[path]["seconds"] - x["plain"]["seconds"] for x in rows)
            second = statistics.median(x[path]["second"] for x in rows)
            parts.append(
                f"{path} {total / plain:.3f}x (median {extra:+.3f}s, second sight {second:.3f}s)"
            )
        print(" | ".join(parts))


if __name__ == "__main__":
    main()
