"""Filter-based joins side by side with plain Spark 4 (one Spark session, checksums equal).

    python -m experiments.joins.filters --sf 1

Runs TPC-H orders ⋈ lineitem with orders filtered by date to 1 %, 10 %, 50 %, 100 % of its
rows (seed 000's sweep), with a narrow big side (two lineitem columns) and a wide one (all
sixteen), and a star join (lineitem with filtered orders, part and supplier, Q5/Q8/Q9
style), as:

- ``spark``: plain Spark 4, runtime Bloom filters at their default thresholds;
- ``spark_lowered``: plain Spark with the runtime Bloom filter thresholds lowered so it is
  injected (application side ≥ 1 MB scanned, creation side ≤ 1 GB);
- ``semi_prefilter`` / ``runtime_filters`` / ``bloom_join``: Criss with only that
  optimization switched on, deciding from its measurements (nothing cached);
- ``*_forced``: the same with the thresholds lifted, to show where it loses;
- ``semi_prefilter_w{1,2,4}``, ``_wnone``: the forced prefilter with ``w × cores`` shuffle
  partitions for the join (seed 000's parallelism), or none (Spark's own partitioning).

Writes ``experiments/results/joins/filters.json`` and ``filters.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import criss
from criss.policies import filters as policy
from criss.sparksession import local_spark
from criss.workload.tpch.data import data_dir_for, ensure_tpch, register_views

RESULTS = Path(__file__).resolve().parents[1] / "results" / "joins"
DAYS = 2406  # o_orderdate spans 1992-01-01 .. 1998-08-02
LINEITEM = (
    "l_orderkey l_partkey l_suppkey l_linenumber l_quantity l_extendedprice l_discount l_tax"
    " l_returnflag l_linestatus l_shipdate l_commitdate l_receiptdate l_shipinstruct"
    " l_shipmode l_comment"
).split()
ALGOS = ("semi_prefilter", "bloom_join", "runtime_filters")
LOWERED = {
    "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold": "1MB",
    "spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold": "1GB",
}


def join_query(fraction: float, wide: bool) -> str:
    cols = LINEITEM if wide else ["l_orderkey", "l_extendedprice"]
    return (
        f"select count(*) as n, sum(o_totalprice) as p,"
        f" sum(pmod(xxhash64({', '.join(cols)}), 1000003)) as h"
        f" from orders join lineitem on o_orderkey = l_orderkey"
        f" where o_orderdate < date_add(date'1992-01-01', {int(DAYS * fraction) + 1})"
    )


STAR = """
select count(*) as n, sum(l_extendedprice * (1 - l_discount)) as revenue,
       sum(pmod(xxhash64(l_orderkey, l_partkey, l_suppkey, l_linenumber, l_shipdate), 1000003)) as h
from lineitem, orders, part, supplier
where l_orderkey = o_orderkey and l_partkey = p_partkey and l_suppkey = s_suppkey
  and o_orderdate < date'1993-01-01'
  and p_type like '%BRASS'
  and s_nationkey in (1, 2, 3, 4, 5)
"""


@contextlib.contextmanager
def patched(**values: Any) -> Iterator[None]:
    before = {k: getattr(policy, k) for k in values}
    for k, v in values.items():
        setattr(policy, k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            setattr(policy, k, v)


@contextlib.contextmanager
def spark_conf(spark: Any, conf: dict[str, str]) -> Iterator[None]:
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)


FORCED = {"MAX_SURVIVAL": 1.0, "MAX_FILTER_SURVIVAL": 1.0, "FIXED_COST_S": 0.0, "SHUFFLE_RATE": 1.0}


def timed(run: Callable[[], list], repeats: int) -> dict[str, Any]:
    times, rows = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        rows = run()
        times.append(time.perf_counter() - start)
    return {
        "first_s": round(times[0], 3),
        "median_s": round(statistics.median(times[1:] or times), 3),
        "times": [round(t, 3) for t in times],
        "checksum": [str(v) for v in rows[0]],
    }


def run_case(
    spark: Any, sessions: dict[str, Any], sql: str, repeats: int, variants: list[str]
) -> dict:
    out: dict[str, Any] = {}
    for variant in variants:
        if variant == "spark":
            out[variant] = timed(lambda: spark.sql(sql).collect(), repeats)
            out[variant]["spark_bloom_injected"] = _bloom_injected(spark, sql)
        elif variant == "spark_lowered":
            with spark_conf(spark, LOWERED):
                out[variant] = timed(lambda: spark.sql(sql).collect(), repeats)
                out[variant]["spark_bloom_injected"] = _bloom_injected(spark, sql)
        else:
            algo, patch = variant, {}
            if variant.endswith("_forced"):
                algo, patch = variant.removesuffix("_forced"), dict(FORCED)
                if algo == "bloom_join":  # no exact key set may be broadcast: Bloom decides
                    patch["MAX_EXACT_KEY_BYTES"] = -1
            elif "_w" in variant:
                algo, w = variant.split("_w")
                patch = dict(FORCED, PARALLELISM_W=None if w == "none" else int(w))
            session = sessions[algo]
            with patched(**patch):
                out[variant] = timed(lambda s=session: s.sql(sql).collect(), repeats)
                out[variant]["explain"] = _join_lines(session, sql)
        print(
            f"  {variant:28s} {out[variant]['median_s']:7.3f}s"
            f" (first {out[variant]['first_s']:.3f}s)",
            flush=True,
        )
    sums = {v: r["checksum"] for v, r in out.items()}
    reference = sums["spark"]
    for variant, checksum in sums.items():
        if checksum != reference:
            raise AssertionError(f"{variant} checksum {checksum} != spark {reference} for {sql}")
    return out


def _bloom_injected(spark: Any, sql: str) -> bool:
    plan = spark.sql(f"explain extended {sql}").first()[0]
    return "might_contain" in plan


def _join_lines(session: Any, sql: str) -> list[str]:
    text = session.explain(session.sql(sql))
    return [line.strip() for line in str(text).splitlines() if line.strip().startswith("join:")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fractions", default="0.01,0.1,0.5,1.0")
    parser.add_argument("--parts", default="join,star,w")
    parser.add_argument("--out", type=Path, default=RESULTS / "filters.json")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    data = ensure_tpch(args.sf, data_dir_for(args.sf), quiet=True)
    spark = local_spark("criss-join-filters")
    register_views(spark, data)
    sessions = _sessions(spark, Path(tempfile.mkdtemp(prefix="criss-join-filters-")))
    result: dict[str, Any] = {
        "sf": args.sf,
        "repeats": args.repeats,
        "cores": spark.sparkContext.defaultParallelism,
        "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "policy": {k: getattr(policy, k) for k in dir(policy) if k.isupper()},
        "join": [],
        "star": None,
        "parallelism": None,
        "bloom": None,
    }
    if "join" in parts:
        fractions = [float(f) for f in args.fractions.split(",")]
        result["join"] = _join_sweep(spark, sessions, fractions, args.repeats)
    if "w" in parts:
        result["parallelism"] = _parallelism(spark, sessions, args.repeats)
    if "bloom" in parts:
        result["bloom"] = _bloom(spark, sessions, args.repeats)
    if "star" in parts:
        print("star join lineitem ⋈ orders ⋈ part ⋈ supplier", flush=True)
        variants = ["spark", "spark_lowered", "semi_prefilter", "runtime_filters"]
        result["star"] = {
            "sql": STAR,
            "runs": run_case(spark, sessions, STAR, args.repeats, variants),
        }
    _write(result, args.out)


def _sessions(spark: Any, home: Path) -> dict[str, Any]:
    """One Criss session per algorithm, with only that join optimization switched on."""
    return {
        algo: criss.session(
            spark,
            home=home / algo,
            codec_rate="20m",
            disk_bandwidth="100m",
            memory_bandwidth="1g",
            eager_results=False,
            min_ref=1,  # measure join inputs on first sight; min_texec below stops caching
            min_texec=1e9,
            **{a: a == algo for a in (*ALGOS, "range_join")},
        )
        for algo in ALGOS
    }


def _join_sweep(
    spark: Any, sessions: dict[str, Any], fractions: list[float], repeats: int
) -> list[dict[str, Any]]:
    """orders (each fraction kept) ⋈ narrow and wide lineitem, every variant."""
    algos = ["semi_prefilter", "bloom_join"]
    cases = []
    for wide in (False, True):
        for fraction in fractions:
            sql = join_query(fraction, wide)
            print(f"orders {fraction:.0%} ⋈ lineitem ({'wide' if wide else 'narrow'})", flush=True)
            variants = ["spark", "spark_lowered", *algos, *(f"{a}_forced" for a in algos)]
            case = run_case(spark, sessions, sql, repeats, variants)
            cases.append({"fraction": fraction, "wide": wide, "sql": sql, "runs": case})
    return cases


def _parallelism(spark: Any, sessions: dict[str, Any], repeats: int) -> dict[str, Any]:
    """The forced prefilter with w × cores shuffle partitions, at orders 10 % ⋈ lineitem."""
    sql = join_query(0.1, True)
    print("parallelism w at orders 10 % ⋈ lineitem (wide)", flush=True)
    variants = ["spark", *(f"semi_prefilter_w{w}" for w in ("none", "1", "2", "4", "8"))]
    return {"sql": sql, "runs": run_case(spark, sessions, sql, repeats, variants)}


def _bloom(spark: Any, sessions: dict[str, Any], repeats: int) -> dict[str, Any]:
    """SF1 orders(10 %, 50 %) ⋈ wide lineitem: plain, exact prefilter, Bloom filter."""
    runs: dict[str, Any] = {}
    for fraction in (0.1, 0.5):
        sql = join_query(fraction, True)
        print(f"Bloom join: orders {fraction:.0%} ⋈ lineitem (wide)", flush=True)
        variants = ["spark", "semi_prefilter_forced", "bloom_join", "bloom_join_forced"]
        case = run_case(spark, sessions, sql, repeats, variants)
        runs |= {f"{fraction:.0%} {v}": r for v, r in case.items()}
    return {"sql": join_query(0.1, True), "runs": runs}


def _write(result: dict[str, Any], out: Path) -> None:
    """Write ``result`` (parts not run this time kept from the previous file) and its plot."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        previous = json.loads(out.read_text())
        for key in ("join", "star", "parallelism", "bloom"):
            if not result[key] and previous.get(key):
                result[key] = previous[key]
    out.write_text(json.dumps(result, indent=1, default=str))
    plot(result, out.with_suffix(".png"))
    print(f"wrote {out}")


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(w, [c for c in result["join"] if c["wide"] == w]) for w in (False, True)]
    panels = [(w, cases) for w, cases in panels if cases]
    extra = [k for k in ("star", "parallelism", "bloom") if result.get(k)]
    fig, axes = plt.subplots(
        1, len(panels) + len(extra), figsize=(6 * (len(panels) + len(extra)), 4.5)
    )
    axes = list(axes) if hasattr(axes, "__iter__") else [axes]
    for ax, (wide, cases) in zip(axes, panels, strict=False):
        variants = list(cases[0]["runs"])
        width = 0.8 / len(variants)
        for i, v in enumerate(variants):
            xs = [j + i * width for j in range(len(cases))]
            ax.bar(xs, [c["runs"][v]["median_s"] for c in cases], width, label=v)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cases))])
        ax.set_xticklabels([f"{c['fraction']:.0%}" for c in cases])
        ax.set_xlabel("orders kept by the date filter")
        ax.set_ylabel("median seconds")
        ax.set_title(
            f"orders ⋈ lineitem, SF{result['sf']:g}, {'wide' if wide else 'narrow'} lineitem"
        )
        ax.legend(fontsize=7)
    for ax, key in zip(axes[len(panels) :], extra, strict=False):
        runs = result[key]["runs"]
        ax.bar(range(len(runs)), [r["median_s"] for r in runs.values()])
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(list(runs), rotation=30, ha="right", fontsize=7)
        titles = {
            "star": "star join (Q8-style)",
            "parallelism": "prefilter, w × cores partitions",
            "bloom": "orders(10 %/50 %) ⋈ wide lineitem: exact vs Bloom",
        }
        ax.set_title(titles[key])
        ax.set_ylabel("median seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
