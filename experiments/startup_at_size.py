"""Start-up and recovery of a large home (issue 21, "Startup and recovery at size").

1. *build*: one application caches the results of ``--statements`` distinct TPC-H
   statements (SF 0.01, 32 shuffle partitions kept apart, so each result is several
   partition files), which fills the QTree and records thousands of partitions.
2. *start-up*: a fresh process opens the home three times; the time of
   ``criss.session()`` alone (Spark's own start excluded) is reported with the home's size.
3. *recovery*: an application caching further statements on the home is killed with
   ``kill -9`` mid-run; a fresh process opens the home (reconciling catalog and tiers:
   partitions missing, temporary files, orphans) and replays 22 of the built statements,
   whose rows must equal plain Spark's and which must be served from the cache.

    .venv/bin/python -m experiments.startup_at_size --statements 300
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "issue21"
CONF = {
    "spark.sql.shuffle.partitions": "32",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
}

#: Runs in a child process: the statements ``range(first, last)`` of the build's draw.
CHILD = textwrap.dedent(
    """
    import json, random, sys, time
    import criss
    from criss.sparksession import local_spark
    from criss.workload.tpch.data import ensure_tpch, register_views
    from criss.workload.tpch.queries import QUERY_IDS, statement

    home, mode, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[5])
    first, last = int(sys.argv[3]), int(sys.argv[4])
    spark = local_spark("criss-startup-at-size", conf=conf)
    register_views(spark, ensure_tpch(0.01, quiet=True))
    draws = [(random.Random(n).choice(QUERY_IDS), n) for n in range(last)]
    started = time.perf_counter()
    cs = criss.session(spark, home=home)
    opened = time.perf_counter() - started
    facts = {"open_seconds": round(opened, 3), "operators": len(cs.qtree),
             "entries": len(cs.cache.catalog.entries()),
             "partitions": len(cs.cache.catalog.partitions()),
             "reconciled": dict(cs.cache.faults)}
    if cs.forget_rounds:  # opening ages the catalog: a round over the whole QTree
        opening = cs.forget_rounds[-1]
        facts["forget_round_ms"] = round(opening.seconds * 1000, 1)
        facts["forget_round_catalog_ms"] = round(opening.catalog_seconds * 1000, 1)
    if mode == "open":
        print(json.dumps(facts), flush=True)
    elif mode == "cache":
        print("RUNNING", flush=True)
        for qid, seed in draws[first:last]:
            cs.sql(statement(qid, seed=seed, sf=0.01).sql).collect()
            cs.settle_harvests()
        after = len(cs.cache.catalog.partitions())
        print(json.dumps(facts | {"partitions_after": after}), flush=True)
    elif mode == "check":
        wrong = served = 0
        for qid, seed in draws[first:last]:
            sql = statement(qid, seed=seed, sf=0.01).sql
            mine = sorted(map(tuple, cs.sql(sql).collect()))
            served += bool(cs.last_query_summary().get("operators_reused"))
            wrong += mine != sorted(map(tuple, spark.sql(sql).collect()))
        checked = {"checked": last - first, "wrong": wrong, "served": served}
        print(json.dumps(facts | checked), flush=True)
    cs.close()
    """
)


def child(home: Path, mode: str, first: int, last: int, **popen) -> subprocess.Popen:
    args = [sys.executable, "-c", CHILD, str(home), mode, str(first), str(last), json.dumps(CONF)]
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **popen
    )


def last_json(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"child failed ({proc.returncode}): {out[-2000:]}")
    return json.loads(lines[-1])


def home_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())


def engine_commit() -> str | None:
    """The commit of the checkout this runs from, if it is one."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip() or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, default=300)
    parser.add_argument("--kill-after", type=float, default=25.0, help="seconds into the run")
    parser.add_argument(
        "--shuffle-partitions",
        type=int,
        default=int(CONF["spark.sql.shuffle.partitions"]),
        help="partitions per shuffle: more make more partition files per cached result",
    )
    args = parser.parse_args()
    CONF["spark.sql.shuffle.partitions"] = str(args.shuffle_partitions)
    home = Path(tempfile.mkdtemp(prefix="criss-at-size-")) / "home"
    n = args.statements
    started = time.perf_counter()
    built = last_json(child(home, "cache", 0, n))
    build_seconds = time.perf_counter() - started
    print(f"built in {build_seconds:.0f} s: {built}", flush=True)
    opens = [last_json(child(home, "open", 0, 0)) for _ in range(3)]
    print(f"opened: {opens}", flush=True)
    victim = child(home, "cache", n, 2 * n, start_new_session=True)
    assert victim.stdout.readline().strip() == "RUNNING"
    time.sleep(args.kill_after)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    checked = last_json(child(home, "check", 0, 22))
    print(f"after kill -9: {checked}", flush=True)
    result = {
        "what": "start-up and recovery of a large home",
        "statements_built": n,
        "build_seconds": round(build_seconds, 1),
        "built": built,
        "opens": opens,
        "open_seconds_median": statistics.median(o["open_seconds"] for o in opens),
        "home_bytes": home_bytes(home),
        "kill_after_seconds": args.kill_after,
        "after_kill": checked,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "conf": CONF,
        "engine": engine_commit(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.shuffle_partitions == 32 else f"-p{args.shuffle_partitions}"
    out = RESULTS / f"startup-at-size-{n}{suffix}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written to {out}")
    if checked["wrong"]:
        raise SystemExit(f"{checked['wrong']} statements returned wrong rows after recovery")


if __name__ == "__main__":
    main()
