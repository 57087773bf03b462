"""Differential fuzzing of reuse across parameters on real Spark.

Seeded random pairs of a query and a narrower one (an added condition of any kind, a
subquery among them, a narrower range, fewer groups; over one table or an inner or left
join of it with itself) over a table of NULLs, NaN, -0.0, infinities, strings under a
collation ('A' and 'a' equal), decimals, dates and timestamps. Each pair runs in a Criss
home of its own (in one home Criss learns that nothing repeats and stops caching
first-seen results, which leaves nothing to serve the next query), both queries through
Criss and through plain Spark: every row set must be equal, and Criss must raise exactly
where plain Spark raises (under ANSI, ``1 / b`` on a zero). Counts how many queries each
reuse rule served, so a run that served nothing shows it.

    .venv/bin/python -m experiments.subsumption_fuzz --pairs 300 --seed 1 [--no-ansi]

``tests/test_subsumption_fuzz.py`` runs a few dozen pairs in the suite. Runs quoted in
RESULTS.md are under ``experiments/results/issue20/session40/``.
"""

from __future__ import annotations

import argparse
import datetime
import random
import re
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

import criss

START = datetime.date(2020, 1, 1)
NAN, INF = float("nan"), float("inf")
DOUBLES = [-0.0, 0.0, NAN, INF, -INF, None, 1.5, -2.25, 3.0, 0.1]
STRINGS = ["A", "a", "b", "B", None, "ab", "Ab", "", "ba", "c%"]
VIEW = "fuzz_t"
#: The same rows under other column names, for joins and subqueries (nothing ambiguous).
OTHER = "fuzz_u"
COLUMNS = ["a", "b", "c", "cl", "d", "e", "g", "t"]
GROUPABLE = ["g", "a", "b", "c", "cl", "d", "e"]
MEASURES = [
    "count(*) n, sum(a) sa, min(e) mi, max(d) ma, avg(b) ab, count(c) cc",
    "count(*) n, sum(a) sa, count(a) ca, avg(a) aa, min(b) mb, max(cl) mc, avg(e) ae",
    "sum(b) sb, count(b) cb, avg(b) ab, max(t) mt, min(c) mc",
]
RULES = ("rewrites_filter_subsumption", "rewrites_aggregate_rollup")


@dataclass
class FuzzReport:
    pairs: int = 0
    #: Queries whose rows differ from plain Spark's, or that raised on one side only.
    mismatches: list[str] = field(default_factory=list)
    #: Queries each reuse rule served, and queries that reused anything.
    served: Counter = field(default_factory=Counter)


def make_table(spark, rng: random.Random, rows: int = 400) -> None:
    """The view ``VIEW`` over a Parquet file of ``rows`` seeded rows."""
    data = [
        (
            None if i % 13 == 0 else rng.randint(-5, 20),
            rng.choice(DOUBLES),
            rng.choice(STRINGS),
            rng.choice(STRINGS),
            None if i % 17 == 0 else START + datetime.timedelta(rng.randint(0, 60)),
            None if i % 11 == 0 else Decimal(rng.randint(-500, 500)) / 100,
            rng.randint(0, 4),
            datetime.datetime(2021, 3, 1, rng.randint(0, 23), rng.randint(0, 59)),
        )
        for i in range(rows)
    ]
    schema = "a int, b double, c string, cl string, d date, e decimal(6,2), g int, t timestamp"
    path = tempfile.mkdtemp(prefix="criss-fuzz-") + "/t"
    frame = spark.createDataFrame(data, schema)
    columns = ["a", "b", "c", "cl collate utf8_lcase as cl", "d", "e", "g", "t"]
    frame.selectExpr(*columns).coalesce(2).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView(VIEW)
    spark.read.parquet(path).selectExpr("a as ua", "c as uc", "g as ug").createOrReplaceTempView(
        OTHER
    )


def condition(rng: random.Random) -> str:
    n = rng.randint(-5, 20)
    date = START + datetime.timedelta(rng.randint(0, 60))
    return rng.choice(
        [
            f"a > {n}",
            f"a <= {n}",
            f"a between {n} and {n + rng.randint(0, 8)}",
            f"a in ({n}, {n + 1}, {n + 3})",
            "a is null",
            "a is not null",
            f"a % 3 = {n % 3}",
            f"b > {rng.choice(['0.0', '-0.0', '1.0', '-3.0'])}",
            "b < 0",
            "b = 0.0",
            "isnan(b)",
            "b is null",
            "cast(b as string) = '-0.0'",
            "b in (0.0, 1.5)",
            "1 / b > 0",
            "c like 'a%'",
            "c = 'A'",
            "upper(c) = 'A'",
            "c in ('a', 'b', 'ab')",
            "c is null",
            "c > 'a'",
            "cl = 'a'",
            "cl like 'a%'",
            "(cl collate utf8_binary) = 'A'",
            "length(cl) = 2",
            f"d >= date '{date}'",
            f"d < date '{date}'",
            f"e > {Decimal(rng.randint(-500, 500)) / 100}",
            "e is not null",
            f"g in ({rng.randint(0, 4)}, {rng.randint(0, 4)})",
            f"g <> {rng.randint(0, 4)}",
            "t > timestamp '2021-03-01 12:00:00'",
            "hour(t) % 2 = 0",
            f"(a > {n} or c = 'b')",
            f"not (a < {n} and b > 0)",
            "coalesce(a, 0) > 3",
            "case when b > 0 then a else -a end > 2",
            f"a > (select avg(ua) from {OTHER})",
            f"c in (select uc from {OTHER} where ug = {rng.randint(0, 4)})",
            f"exists (select 1 from {OTHER} where ug = g and ua > {n})",
            f"not exists (select 1 from {OTHER} where uc = c and ua < {n})",
        ]
    )


#: What a pair's queries are: rows of the table, the same groups, fewer groups, or rows of
#: a join of the table with itself.
SHAPES = ("rows", "aggregate", "rollup", "join")


def pair(rng: random.Random, shapes: tuple[str, ...] = SHAPES) -> tuple[str, str]:
    """A query, and one its result could serve: the same with more conditions (and, for a
    roll-up, fewer grouping columns)."""
    base = " and ".join(condition(rng) for _ in range(rng.randint(0, 2))) or "true"
    shape = rng.choice(shapes)
    if shape == "join":
        columns = ", ".join(rng.sample(COLUMNS, rng.randint(1, 4)) + ["ua"])
        added = _added(rng, set(columns.split(", ")))
        join = rng.choice(["join", "left join"])
        source = f"{VIEW} {join} {OTHER} on g = ug and ua > {rng.randint(-5, 20)}"
        return (
            f"select {columns} from {source} where {base}",
            f"select {columns} from {source} where {base} and {added}",
        )
    if shape == "rows":
        columns = ", ".join(rng.sample(COLUMNS, rng.randint(2, 6)))
        added = _added(rng, set(columns.split(", ")))
        return (
            f"select {columns} from {VIEW} where {base}",
            f"select {columns} from {VIEW} where {base} and {added}",
        )
    keys = rng.sample(GROUPABLE, rng.randint(1, 3))
    added = _added(rng, set(keys))
    measures = rng.choice(MEASURES)
    wanted = keys if shape == "aggregate" else keys[: max(1, len(keys) - 1)]
    return (
        f"select {', '.join(keys)}, {measures} from {VIEW} where {base} group by {', '.join(keys)}",
        f"select {', '.join(wanted)}, {measures} from {VIEW} where {base} and {added} "
        f"group by {', '.join(wanted)}",
    )


def _added(rng: random.Random, kept: set[str]) -> str:
    """1-2 conditions to add, most often ones reading only ``kept`` columns (those the
    first query's result holds: where reuse across parameters may serve, and so where it
    may go wrong), else any."""
    chosen = []
    for _ in range(rng.randint(1, 2)):
        text = condition(rng)
        if rng.random() < 0.7:
            for _ in range(30):
                if reads(text) <= kept:
                    break
                text = condition(rng)
        chosen.append(text)
    return " and ".join(chosen)


def reads(text: str) -> set[str]:
    """The table's columns a condition names (a subquery's own are named otherwise)."""
    return {column for column in COLUMNS if re.search(rf"\b{column}\b", text)}


def _value_key(value):
    if not isinstance(value, float):
        return value
    return ("nan",) if value != value else round(value, 6)


def _row_key(row) -> tuple:
    return tuple(_value_key(v) for v in row)


def same_rows(got, want) -> bool:
    """Equal as multisets, NaN equal to NaN, doubles to 6 places."""
    return sorted(map(_row_key, got), key=repr) == sorted(map(_row_key, want), key=repr)


def _check(cs, spark, sql: str, report: FuzzReport) -> None:
    """One query through plain Spark and through Criss, any difference noted."""
    try:
        want = spark.sql(sql).collect()
    except Exception as plain_error:  # any type: Criss must raise too
        try:
            cs.sql(sql).collect()
        except Exception:  # any type: raised on both sides
            return
        report.mismatches.append(f"plain Spark raised, Criss did not: {sql}\n  {plain_error}")
        return
    try:
        got = cs.sql(sql).collect()
    except Exception as exc:  # any type: Criss raised where plain Spark did not
        report.mismatches.append(f"Criss raised where plain Spark did not: {sql}\n  {exc}")
        return
    summary = cs.last_query_summary()
    for rule in RULES:
        report.served[rule] += summary.get(rule, 0)
    report.served["reused"] += 1 if summary.get("operators_reused") else 0
    if not same_rows(got, want):
        report.mismatches.append(
            f"wrong rows: {sql}\n  criss {sorted(map(str, got))[:6]}\n"
            f"  plain {sorted(map(str, want))[:6]}\n  {summary}"
        )


def fuzz(
    spark, pairs: int, seed: int, on_mismatch=None, shapes: tuple[str, ...] = SHAPES
) -> FuzzReport:
    """Run ``pairs`` seeded pairs of ``shapes`` on ``spark``; what differed and what reuse
    served."""
    rng = random.Random(seed)
    make_table(spark, rng)
    report = FuzzReport()
    for _ in range(pairs):
        home = tempfile.mkdtemp(prefix="criss-fuzz-home-")
        cs = criss.session(spark, home=home, lift_aggregates=False)
        try:
            before = len(report.mismatches)
            for sql in pair(rng, shapes):
                _check(cs, spark, sql, report)
            for mismatch in report.mismatches[before:]:
                if on_mismatch is not None:
                    on_mismatch(mismatch)
        finally:
            cs.close()
            shutil.rmtree(home, ignore_errors=True)
        report.pairs += 1
    return report


def main() -> None:
    from criss.sparksession import local_spark

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-ansi", action="store_true", help="spark.sql.ansi.enabled=false")
    args = parser.parse_args()
    spark = local_spark(app_name="subsumption-fuzz")
    if args.no_ansi:
        spark.conf.set("spark.sql.ansi.enabled", "false")
    report = fuzz(spark, args.pairs, args.seed, on_mismatch=print)
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    print(
        f"# seed {args.seed}, ANSI {ansi}: {report.pairs} pairs, "
        f"{len(report.mismatches)} mismatches; served: {dict(report.served)}"
    )


if __name__ == "__main__":
    main()
