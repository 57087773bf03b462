"""Range join: plain Spark 4 (nested loop) vs Criss (bucket equi-join), same data, one session.

    python -m experiments.joins.range_join --points 1000000 --intervals 50000

Three interval tables over the same points (keys 0..1e9, generated deterministically from
``xxhash64`` and written to Parquet): ``disjoint`` (intervals shorter than their spacing),
``overlapping`` (each point in ~5 intervals) and ``skewed`` (disjoint, but 1 % of the
intervals are 2000x longer). Query per case::

    select count(*), sum(pid), sum(iid), bit_xor(xxhash64(pid, iid))
    from points join intervals on p between s and e

With ``--outer`` the query is ``intervals LEFT JOIN points`` instead (every interval kept;
written to ``--out``, e.g. ``range_join_outer.json``).

Criss runs it twice (first run: measures the interval statistics; repeated run: a new
query object, statistics and any cached operators reused). Spark's nested loop on all
points is timed for the ``--full-spark`` cases; for the others Spark and Criss both run on
the first ``--subset`` points too (checksums asserted equal there), and the full Spark time
is *extrapolated* linearly from the subset (marked ``spark_extrapolated`` in the JSON).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import criss
from criss.sparksession import local_spark

RESULTS = Path(__file__).resolve().parents[1] / "results" / "joins"
QUERY = (
    "select count(*) as n, sum(pid) as sp, sum(iid) as si, bit_xor(xxhash64(pid, iid)) as h"
    " from {points} join {intervals} on p between s and e"
)
#: ``--outer``: every interval kept, met by points or not (the preserved side is the one
#: exploded into buckets, so Criss joins inner and adds the unmatched intervals)
QUERY_OUTER = (
    "select count(*) as n, sum(pid) as sp, sum(iid) as si, bit_xor(xxhash64(pid, iid)) as h"
    " from {intervals} left join {points} on p between s and e"
)
SPAN = 1_000_000_000


def generate(spark, root: Path, points: int, intervals: int) -> dict[str, str]:
    """Write the points and the three interval tables; returns name → Parquet path."""
    spacing = SPAN // intervals
    tables = {
        "points": f"select id as pid, pmod(xxhash64(id, 1), {SPAN}) as p from range({points})",
        "disjoint": (
            f"select id as iid, id * {spacing} + pmod(xxhash64(id, 2), {spacing // 2}) as s,"
            f" id * {spacing} + pmod(xxhash64(id, 2), {spacing // 2})"
            f" + pmod(xxhash64(id, 3), {spacing // 2}) as e from range({intervals})"
        ),
        "overlapping": (
            f"select id as iid, id * {spacing} as s,"
            f" id * {spacing} + pmod(xxhash64(id, 3), {10 * spacing}) as e"
            f" from range({intervals})"
        ),
        "skewed": (
            f"select id as iid, id * {spacing} as s, id * {spacing} + case"
            f" when pmod(xxhash64(id, 4), 100) = 0 then {1000 * spacing}"
            f" else pmod(xxhash64(id, 3), {spacing // 2}) end as e from range({intervals})"
        ),
    }
    paths = {}
    for name, sql in tables.items():
        path = root / name
        spark.sql(sql).repartition(4).write.mode("overwrite").parquet(str(path))
        paths[name] = str(path)
    return paths


def timed(run) -> tuple[float, list]:
    start = time.perf_counter()
    rows = [tuple(r) for r in run()]
    return time.perf_counter() - start, rows


def planned_and_timed(cs, query: str) -> tuple[float, list, Any]:
    """Seconds of ``cs.sql(query).collect()``, its rows, and the planned DataFrame."""
    start = time.perf_counter()
    df = cs.sql(query)
    rows = [tuple(r) for r in df.collect()]
    return time.perf_counter() - start, rows, df


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--intervals", type=int, default=50_000)
    ap.add_argument("--subset", type=int, default=100_000, help="points for extrapolated cases")
    ap.add_argument("--full-spark", default="disjoint", help="cases Spark runs in full (comma)")
    ap.add_argument("--out", type=Path, default=RESULTS / "range_join.json")
    ap.add_argument("--cases", default="disjoint,overlapping,skewed")
    ap.add_argument(
        "--methods",
        default="",
        help="also force these Criss methods (option range_join_method), e.g. bucket,index",
    )
    ap.add_argument("--no-spark", action="store_true", help="skip Spark's nested loop")
    ap.add_argument("--outer", action="store_true", help="intervals LEFT JOIN points (QUERY_OUTER)")
    args = ap.parse_args(argv)
    query = QUERY_OUTER if args.outer else QUERY
    full_spark = set(filter(None, args.full_spark.split(",")))

    spark = local_spark("range-join-experiment", conf={"spark.sql.shuffle.partitions": "8"})
    work = Path(tempfile.mkdtemp(prefix="criss-range-join-"))
    try:
        paths = generate(spark, work / "data", args.points, args.intervals)
        spark.read.parquet(paths["points"]).createOrReplaceTempView("points")
        spark.read.parquet(paths["points"]).where(f"pid < {args.subset}").createOrReplaceTempView(
            "points_subset"
        )
        cs = criss.session(spark, home=work / "home")
        cases = []
        for case in args.cases.split(","):
            spark.read.parquet(paths[case]).createOrReplaceTempView(case)
            if args.methods:
                cases.append(run_methods(spark, cs, query, case, args.methods.split(",")))
            else:
                cases.append(run_case(spark, cs, query, case, args, case in full_spark))
            print(json.dumps(cases[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "command": "python -m experiments.joins.range_join "
        f"--points {args.points} --intervals {args.intervals} --subset {args.subset}"
        f" --full-spark {args.full_spark} --cases {args.cases}"
        + (f" --methods {args.methods}" if args.methods else "")
        + (" --outer" if args.outer else ""),
        "spark_version": spark.version,
        "points": args.points,
        "intervals": args.intervals,
        "query": query,
        "cases": cases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    if not args.methods:
        plot(result, args.out.with_suffix(".png"))
    return result


def run_case(spark, cs, template: str, case: str, args, spark_full: bool) -> dict:
    query = template.format(points="points", intervals=case)
    # timed from cs.sql: Criss plans (and writes what it caches) there, not in collect
    criss_first, rows_first, first = planned_and_timed(cs, query)
    criss_repeat, rows_repeat, repeated = planned_and_timed(cs, query)
    assert rows_first == rows_repeat, (case, rows_first, rows_repeat)
    explain = cs.explain(repeated)
    # the repeat may be served whole from the cache: the choice is the first run's
    choice = next((ln.strip() for ln in cs.explain(first).splitlines() if "range_join" in ln), "")
    out = {
        "case": case,
        "criss_first_s": round(criss_first, 3),
        "criss_repeat_s": round(criss_repeat, 3),
        "criss_rows": rows_first,
        "choice": choice,
        "join_details": [c.details for c in cs._records[first].joins],
        "explain_repeat": explain.splitlines()[:12],
    }
    if spark_full:
        spark_s, rows_spark = timed(lambda: spark.sql(query).collect())
        assert rows_spark == rows_first, (case, rows_spark, rows_first)
        out.update(spark_s=round(spark_s, 3), spark_extrapolated=False, checksums_equal=True)
    else:
        subset = template.format(points="points_subset", intervals=case)
        spark_sub, rows_sub = timed(lambda: spark.sql(subset).collect())
        criss_sub, rows_criss_sub = timed(lambda: cs.sql(subset).collect())
        assert rows_sub == rows_criss_sub, (case, rows_sub, rows_criss_sub)
        out.update(
            spark_s=round(spark_sub * args.points / args.subset, 3),
            spark_extrapolated=True,
            spark_subset_points=args.subset,
            spark_subset_s=round(spark_sub, 3),
            criss_subset_s=round(criss_sub, 3),
            checksums_equal_on_subset=True,
        )
    out["speedup_first"] = round(out["spark_s"] / criss_first, 1)
    out["speedup_repeat"] = round(out["spark_s"] / criss_repeat, 1)
    return out


def run_methods(spark, cs, template: str, case: str, methods: list[str]) -> dict:
    """Criss with each method forced, first and repeated run; checksums must agree."""
    query = template.format(points="points", intervals=case)
    out: dict = {"case": case}
    rows_seen = None
    saved = cs.options
    for method in methods:
        # one session for every method: its options are read per query
        cs.options = dataclasses.replace(saved, range_join_method=method)
        try:
            first, rows, _ = planned_and_timed(cs, query)
            again, rows_again, repeated = planned_and_timed(cs, query)
        finally:
            cs.options = saved
        assert rows == rows_again and (rows_seen is None or rows == rows_seen), (method, rows)
        rows_seen = rows
        out[method] = {
            "first_s": round(first, 3),
            "repeat_s": round(again, 3),
            "details": [c.details for c in cs._records[repeated].joins],
        }
    out["rows"] = rows_seen
    out["checksums_equal"] = True
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = result["cases"]
    names = [c["case"] for c in cases]
    series = [
        ("Spark nested loop", [c["spark_s"] for c in cases]),
        ("Criss first run", [c["criss_first_s"] for c in cases]),
        ("Criss repeated", [c["criss_repeat_s"] for c in cases]),
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.27
    for i, (label, values) in enumerate(series):
        xs = [j + (i - 1) * width for j in range(len(cases))]
        bars = ax.bar(xs, values, width, label=label)
        ax.bar_label(bars, labels=[f"{v:.1f}" for v in values], fontsize=7)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(
        [
            n + (" (Spark extrapolated)" if c["spark_extrapolated"] else "")
            for n, c in zip(names, cases, strict=True)
        ],
        fontsize=8,
    )
    ax.set_yscale("log")
    ax.set_ylabel("seconds (log)")
    ax.set_title(f"Range join, {result['points']:,} points x {result['intervals']:,} intervals")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
