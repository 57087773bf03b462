"""Reuse across parameters on real Spark: filter subsumption and aggregate roll-up.

Each case runs a query through Criss (its result is cached), then another that the cached
result subsumes, and compares the second's rows with plain Spark's; counters prove which
rule served it. The table holds NULLs, NaN, boundary values, dates, decimals and strings.
"""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from rowcompare import assert_same_rows
from sparkjobs import jobs_in

import criss
from criss.qtree.subsume import AGGREGATE_ROLLUP, FILTER_SUBSUMPTION

pytestmark = pytest.mark.spark

NAN = float("nan")


@pytest.fixture(scope="module")
def params_table(spark, tmp_path_factory):
    """t(x int, s string, d date, f double, m decimal(15,2), g int, h string, v int, k
    decimal(6,2)); Catalyst sums ``k`` as a long of its unscaled values."""
    rows = []
    for i in range(60):
        rows.append(
            (
                None if i % 13 == 0 else i % 20,
                None if i % 11 == 0 else "abcdefghijklmn"[i % 14],
                datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 31),
                NAN if i % 17 == 0 else (None if i % 19 == 0 else i / 7 - 3),
                Decimal(i * 37 % 1000) / 100,
                i % 5,
                None if i % 23 == 0 else "pq"[i % 2],
                i % 9,
                None if i % 7 == 0 else Decimal(i * 13 % 500) / 100,
            )
        )
    path = str(tmp_path_factory.mktemp("params") / "t")
    schema = (
        "x int, s string, d date, f double, m decimal(15,2), g int, h string, v int, k decimal(6,2)"
    )
    spark.createDataFrame(rows, schema).coalesce(1).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("params_t")
    return "params_t"


@pytest.fixture
def cs(spark, params_table, tmp_path):
    session = criss.session(spark, home=str(tmp_path / "home"), lift_aggregates=False)
    yield session
    session.close()


def _through(cs, spark, sql):
    rows = cs.sql(sql).collect()
    assert_same_rows(rows, spark.sql(sql).collect())
    return rows, cs.last_query_summary()


def _rule_count(summary, rule):
    return summary.get(f"rewrites_{rule.replace('-', '_')}", 0)


IN12 = ", ".join(f"'{c}'" for c in "abcdefghijkl")
IN11 = ", ".join(f"'{c}'" for c in "abcdefghijk")
SERVED = [
    # (name, cached query, query it serves, rule)
    (
        "narrower range",
        "select x, s from params_t where x > 3",
        "select x, s from params_t where x > 5",
        FILTER_SUBSUMPTION,
    ),
    (
        "open from closed bound",
        "select x, s from params_t where x >= 3",
        "select s from params_t where x > 3",
        FILTER_SUBSUMPTION,
    ),
    (
        "range inside a range",
        "select x, d from params_t where x between 2 and 15",
        "select d, x from params_t where x > 4 and x <= 15",
        FILTER_SUBSUMPTION,
    ),
    (
        "IN subset",
        "select s, x from params_t where s in ('a', 'b', 'c')",
        "select s, x from params_t where s in ('c', 'a')",
        FILTER_SUBSUMPTION,
    ),
    (
        "IN over ten literals",
        f"select s, x from params_t where s in ({IN12})",
        f"select s from params_t where s in ({IN11})",
        FILTER_SUBSUMPTION,
    ),
    (
        "an added conjunct",
        "select x, d, s from params_t where x > 3",
        "select x, s from params_t where x > 3 and d >= date '2020-01-12'",
        FILTER_SUBSUMPTION,
    ),
    (
        "NaN above every double",
        "select f, x from params_t where f > 1.0",
        "select f, x from params_t where f > 2.5",
        FILTER_SUBSUMPTION,
    ),
    (
        "an empty result",
        "select x, s from params_t where x > 3",
        "select x, s from params_t where x > 1000",
        FILTER_SUBSUMPTION,
    ),
    (
        "decimals and dates",
        "select m, d from params_t where m >= 1.5 and d < date '2020-01-25'",
        "select m from params_t where m > 2.25 and d <= date '2020-01-10'",
        FILTER_SUBSUMPTION,
    ),
    (
        "an added LIKE",
        "select x, s from params_t where x > 3",
        "select x, s from params_t where x > 3 and s like 'a%'",
        FILTER_SUBSUMPTION,
    ),
    (
        "an added OR over NULLs and NaN, and a narrower range",
        "select x, s, f from params_t where x > 3",
        "select f, x from params_t where x > 5 and (s = 'c' or f > 0.5)",
        FILTER_SUBSUMPTION,
    ),
    (
        "an added NOT of arithmetic",
        "select x, s from params_t where x > 3",
        "select s from params_t where x > 3 and not (x % 3 = 1)",
        FILTER_SUBSUMPTION,
    ),
    (
        "a condition the cache applied, on a column it dropped",
        "select x from params_t where s like '%b%' or s is null",
        "select x from params_t where (s like '%b%' or s is null) and x < 10",
        FILTER_SUBSUMPTION,
    ),
    (
        "an added condition on grouping columns",
        "select g, h, count(distinct v) n, avg(f) a from params_t where g >= 1 group by g, h",
        "select g, h, count(distinct v) n, avg(f) a from params_t "
        "where g >= 1 and (h = 'p' or g % 2 = 0) group by g, h",
        FILTER_SUBSUMPTION,
    ),
    (
        "a roll-up under an added condition on a grouping column",
        "select g, h, sum(x) sx, count(*) c from params_t where g >= 1 group by g, h",
        "select h, sum(x) sx, count(*) c from params_t where g >= 1 and g % 2 = 0 group by h",
        AGGREGATE_ROLLUP,
    ),
    (
        "same groups, filter on a grouping column",
        "select g, h, count(distinct v) n, avg(f) a from params_t where g >= 1 group by g, h",
        "select g, h, count(distinct v) n, avg(f) a from params_t where g >= 3 group by g, h",
        FILTER_SUBSUMPTION,
    ),
    (
        "roll-up to fewer groups",
        "select g, h, sum(x) sx, count(*) c, count(x) cx, min(m) mn, max(d) mx, sum(m) sm, "
        "count(m) cm, avg(m) am, sum(k) sk, sum(f) sf, count(f) cf from params_t "
        "where g >= 1 group by g, h",
        "select h, sum(x) sx, count(*) c, count(x) cx, min(m) mn, max(d) mx, avg(m) am, "
        "sum(k) sk, avg(f) af from params_t where g >= 2 group by h",
        AGGREGATE_ROLLUP,
    ),
    (
        "roll-up to one empty group",
        "select g, h, sum(x) sx, count(*) c, count(x) cx, max(m) mx from params_t "
        "where g >= 1 group by g, h",
        "select sum(x) sx, count(*) c, count(x) cx, max(m) mx from params_t where g > 7",
        AGGREGATE_ROLLUP,
    ),
]


@pytest.mark.parametrize(("name", "cached", "wanted", "rule"), SERVED, ids=[c[0] for c in SERVED])
def test_a_cached_result_under_other_parameters_serves_the_query(
    cs, spark, name, cached, wanted, rule
):
    _through(cs, spark, cached)
    assert cs.last_query_summary().get("operators_cached", 0) >= 1
    # (explained as it ran: a roll-up's result may be cached as itself, and read exactly next)
    planned = cs.sql(wanted)
    assert_same_rows(planned.collect(), spark.sql(wanted).collect())
    said = cs.explain(planned)
    assert _rule_count(cs.last_query_summary(), rule) == 1, said
    assert f"via {rule}" in said


NOT_SERVED = [
    (
        "wider range",
        "select x, s from params_t where x > 5",
        "select x, s from params_t where x > 3",
    ),
    (
        "closed from open bound",
        "select x, s from params_t where x > 3",
        "select x, s from params_t where x >= 3",
    ),
    (
        "a column the cache lacks",
        "select x from params_t where x > 3",
        "select x, s from params_t where x > 5",
    ),
    (
        "a residual on a column the cache lacks",
        "select s from params_t where x > 3",
        "select s from params_t where x > 5",
    ),
    (
        "an added condition on a column the cache lacks",
        "select x from params_t where x > 3",
        "select x from params_t where x > 3 and s like 'a%'",
    ),
    (
        "an added condition on a column the groups hide",
        "select g, sum(x) sx from params_t where g >= 1 group by g",
        "select g, sum(x) sx from params_t where g >= 1 and (v = 2 or g = 3) group by g",
    ),
    (
        "count distinct to fewer groups",
        "select g, h, count(distinct v) n from params_t group by g, h",
        "select h, count(distinct v) n from params_t group by h",
    ),
    (
        "a filter on a column the groups hide",
        "select g, sum(x) sx from params_t where v > 2 group by g",
        "select g, sum(x) sx from params_t where v > 4 group by g",
    ),
]


@pytest.mark.parametrize(("name", "cached", "wanted"), NOT_SERVED, ids=[c[0] for c in NOT_SERVED])
def test_a_cached_result_that_does_not_hold_the_answer_is_not_used(cs, spark, name, cached, wanted):
    _through(cs, spark, cached)
    _, summary = _through(cs, spark, wanted)
    assert _rule_count(summary, FILTER_SUBSUMPTION) == _rule_count(summary, AGGREGATE_ROLLUP) == 0


@pytest.fixture(scope="module")
def merged_table(spark, tmp_path_factory):
    """m(f double, s string collate UTF8_LCASE, v int): -0.0 beside 0.0, NaN, and strings
    equal under the collation ('A', 'a'); Spark groups each of those as one."""
    rows = [(-0.0, "A", 1), (0.0, "a", 2), (-0.0, "A", 3), (NAN, "b", 4), (1.5, "B", 5)]
    rows += [(0.0, "b", 6), (None, None, 7), (2.5, "a", 8)]
    path = str(tmp_path_factory.mktemp("merged") / "m")
    frame = spark.createDataFrame(rows, "f double, s string, v int")
    frame.selectExpr("f", "s collate utf8_lcase as s", "v").coalesce(1).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("merged_t")
    return "merged_t"


MERGED_GROUPS = [
    (
        "the sign of a zero, where -0.0 and 0.0 are one group",
        "select f, count(*) c, sum(v) sv from merged_t where v > 0 group by f",
        "select f, count(*) c, sum(v) sv from merged_t "
        "where v > 0 and cast(f as string) = '-0.0' group by f",
        FILTER_SUBSUMPTION,
        0,
    ),
    (
        "a binary comparison, where the collation makes 'A' and 'a' one group",
        "select s, count(*) c, sum(v) sv from merged_t where v > 0 group by s",
        "select s, count(*) c, sum(v) sv from merged_t "
        "where v > 0 and (s collate utf8_binary) = 'a' group by s",
        FILTER_SUBSUMPTION,
        0,
    ),
    (
        "a range, which Spark compares -0.0 and NaN by as the groups do",
        "select f, count(*) c, sum(v) sv from merged_t where v > 0 group by f",
        "select f, count(*) c, sum(v) sv from merged_t where v > 0 and f >= 0 group by f",
        FILTER_SUBSUMPTION,
        1,
    ),
    (
        "the same condition on an integer grouping column",
        "select v, count(*) c from merged_t where v > 0 group by v",
        "select v, count(*) c from merged_t where v > 0 and cast(v as string) like '%2%' "
        "group by v",
        FILTER_SUBSUMPTION,
        1,
    ),
    (
        "a roll-up to a collated column, whose groups Spark names by a string it saw",
        "select s, v % 2 k, count(*) c, sum(v) sv from merged_t where v > 0 group by s, v % 2",
        "select s, count(*) c, sum(v) sv from merged_t where v > 0 group by s",
        AGGREGATE_ROLLUP,
        0,
    ),
    (
        "a roll-up under a condition on a collated column it no longer groups by",
        "select s, count(*) c, sum(v) sv from merged_t where v > 0 group by s",
        "select count(*) c, sum(v) sv from merged_t where v > 0 and (s collate utf8_binary) = 'a'",
        AGGREGATE_ROLLUP,
        0,
    ),
    (
        "a roll-up to a double column",
        "select v, f, count(*) c from merged_t where v > 0 group by v, f",
        "select f, count(*) c from merged_t where v > 0 group by f",
        AGGREGATE_ROLLUP,
        1,
    ),
]


@pytest.mark.parametrize(
    ("name", "cached", "wanted", "rule", "served"),
    MERGED_GROUPS,
    ids=[c[0] for c in MERGED_GROUPS],
)
def test_a_condition_that_tells_apart_what_a_group_merges_is_not_applied_to_groups(
    spark, merged_table, tmp_path, name, cached, wanted, rule, served
):
    """Cached groups of a double or collated column hold one value for rows the query's
    condition tells apart: applied to the groups, it would see only that one (no rows for
    ``-0.0``, where plain Spark counts the rows of -0.0 under the group 0.0); rolled up,
    a group of collated strings would keep another of its strings than Spark does."""
    cs = criss.session(spark, home=str(tmp_path / "home"), lift_aggregates=False)
    try:
        _through(cs, spark, cached)
        assert cs.last_query_summary().get("operators_cached", 0) >= 1
        _, summary = _through(cs, spark, wanted)
        assert _rule_count(summary, rule) == served
    finally:
        cs.close()


def test_a_residual_equality_keeps_negative_zeros_in_cached_files(spark, tmp_path):
    """A cached result read by Spark from its files (not on the driver): the residual
    ``b = 0.0`` keeps the rows of -0.0, as Spark's ``=`` does over the table (whose
    dictionary holds 0.0), though the cached file's dictionary holds -0.0 and not 0.0,
    which Parquet's dictionary filter would skip."""
    rows = [(-0.0, 5, None), (1.5, 2, "x"), (-0.0, 3, None), (0.0, 9, None)] * 4
    path = str(tmp_path / "z")
    spark.createDataFrame(rows, "b double, a int, c string").coalesce(1).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("zeros_t")
    cs = criss.session(
        spark, home=str(tmp_path / "home"), lift_aggregates=False, local_read_bytes=0
    )
    try:
        _through(cs, spark, "select a, b, c from zeros_t where a in (2, 3, 5)")
        rows, summary = _through(
            cs, spark, "select a, b, c from zeros_t where a in (2, 3, 5) and b = 0.0"
        )
        assert _rule_count(summary, FILTER_SUBSUMPTION) == 1
        assert len(rows) == 8
    finally:
        cs.close()


def test_explain_says_which_cached_columns_meet_the_query_condition(cs, spark):
    _through(cs, spark, "select x, s, d from params_t where x > 3")
    wanted = "select d from params_t where x > 3 and (s = 'a' or x = 7)"
    _, summary = _through(cs, spark, wanted)
    assert _rule_count(summary, FILTER_SUBSUMPTION) == 1
    assert "c0, c1 meet the query's own condition" in cs.explain(cs.sql(wanted))


def test_only_cached_variants_are_decoded_when_looking_for_a_subsumer(cs, spark, monkeypatch):
    """A template seen under many parameters keeps its variants in the QTree; looking for a
    cached result that subsumes a query decodes and looks up the cached ones only."""
    from criss.qtree.subsume import Shape

    _through(cs, spark, "select x, s from params_t where x > 3")
    for bound in (4, 6, 7, 8, 9):  # planned, never run: in the QTree, not in the cache
        cs.sql(f"select x, s from params_t where x > {bound}")
    decoded = []
    loads = Shape.loads.__func__
    monkeypatch.setattr(
        Shape, "loads", classmethod(lambda cls, t: decoded.append(t) or loads(cls, t))
    )
    _, summary = _through(cs, spark, "select x, s from params_t where x > 5")
    assert _rule_count(summary, FILTER_SUBSUMPTION) == 1
    cached = {e["key"] for e in cs.report()["entries"]}
    assert decoded and len(decoded) <= 2 * len(cached)  # matched twice: capture, then match
    (shared,) = cs.qtree._rows(
        "select subsume_key, count(*) n from nodes where subsume_key is not null "
        "group by 1 order by n desc limit 1"
    )
    assert shared["n"] >= 7  # every variant is in the QTree: they were there to decode


def test_a_tpch_aggregate_rolls_up_across_parameters(tpch, tmp_path):
    """Q1's measures by ship date serve Q1 itself under other DELTAs."""
    cs = criss.session(tpch, home=str(tmp_path / "home"))
    by_day = (
        "select l_returnflag, l_linestatus, l_shipdate, sum(l_quantity) sum_qty, "
        "sum(l_extendedprice) sum_base_price, "
        "sum(l_extendedprice * (1 - l_discount)) sum_disc_price, "
        "count(l_quantity) n_qty, count(l_extendedprice) n_price, count(l_discount) n_disc, "
        "sum(l_discount) sum_disc, count(*) count_order "
        "from lineitem where l_shipdate <= date '1998-11-01' group by 1, 2, 3"
    )
    _through(cs, tpch, by_day)
    for delta in (60, 90, 117):
        q1 = (
            "select l_returnflag, l_linestatus, sum(l_quantity) sum_qty, "
            "sum(l_extendedprice) sum_base_price, "
            "sum(l_extendedprice * (1 - l_discount)) sum_disc_price, avg(l_quantity) avg_qty, "
            "avg(l_extendedprice) avg_price, avg(l_discount) avg_disc, count(*) count_order "
            f"from lineitem where l_shipdate <= date '1998-12-01' - interval '{delta}' day "
            "group by 1, 2"
        )
        _, summary = _through(cs, tpch, q1)
        assert _rule_count(summary, AGGREGATE_ROLLUP) == 1, cs.explain(cs.sql(q1))
    cs.close()


@pytest.mark.parametrize("in_action", [True, False], ids=["by-the-action", "by-a-job"])
def test_an_aggregate_seen_under_other_parameters_is_lifted_and_rolled_up(
    spark, params_table, tmp_path, in_action
):
    """The second time an aggregate comes with other filter values it is computed grouped
    by the filtered columns too, once: by the user's action, or by a job in ``cs.sql()``
    where the action cannot cache; every later value is a roll-up of that."""
    cs = criss.session(
        spark,
        home=str(tmp_path / "home"),
        min_texec=0,
        cache_in_action=in_action,
        lift_aggregates="eager",
    )

    def query(low: int, day: int) -> str:
        return (
            "select h, sum(x) sx, count(*) c, avg(m) am, min(f) mf from params_t "
            f"where v > {low} and d <= date '2020-01-{day:02d}' group by h"
        )

    _through(cs, spark, query(2, 20))
    assert cs.last_query_summary().get("aggregates_lifted", 0) == 0  # no evidence yet
    planned = {}
    # by the action: computed on the way to the query's rows, no job of Criss's own
    jobs = jobs_in(spark, "lift", lambda: planned.update(df=cs.sql(query(4, 25))))
    assert (jobs == 0) == in_action
    assert_same_rows(planned["df"].collect(), spark.sql(query(4, 25)).collect())
    summary = cs.last_query_summary()
    assert summary["aggregates_lifted"] == 1 and _rule_count(summary, AGGREGATE_ROLLUP) == 1
    assert summary.get("aggregates_lifted_in_action", 0) == int(in_action)
    assert summary.get("operators_cached_in_action", 0) == int(in_action)
    assert summary["operators_cached"] == 1
    said = cs.explain(planned["df"])
    assert ("computed by its action (Spark's cache)" in said) == in_action, said
    for low, day in ((0, 31), (7, 3), (8, 1)):  # the last keeps no row
        _, summary = _through(cs, spark, query(low, day))
        assert summary.get("aggregates_lifted", 0) == 0
        assert _rule_count(summary, AGGREGATE_ROLLUP) == 1, cs.explain(cs.sql(query(low, day)))
    cs.close()


@pytest.mark.parametrize(
    ("outputs", "grouping"),
    [
        ("100.00 * sum(case when h = 'p' then m else 0 end) / sum(m) ratio", ""),
        ("sum(x) / count(*) per_row, 2 * avg(m) + min(f) - max(v) mixed, count(x) n", "h"),
        ("sum(m) * 2 doubled, avg(f) / 3 third", "g"),
    ],
    ids=["ratio-of-sums", "grouped-mix", "decimals-and-nan"],
)
def test_an_expression_over_aggregates_is_lifted_and_rolled_up(
    spark, params_table, tmp_path, outputs, grouping
):
    """TPC-H Q14's shape: an expression over aggregates (Catalyst folds the Project
    computing it into the Aggregate) under a range that changes from query to query. The
    lifted result keeps each aggregate of the expression, and every later range is a
    roll-up of them with the expression computed over them in the query's own types:
    decimals, averages, NULLs and NaN, an empty range, rows equal plain Spark's. (A sum of
    decimals of at most 8 digits, which Catalyst computes on their unscaled longs, is not
    one of them: see the next test's kind.)"""
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")

    def query(day: int) -> str:
        columns, tail = (f"{grouping}, ", f" group by {grouping}") if grouping else ("", "")
        return f"select {columns}{outputs} from params_t where d <= date '2020-01-{day:02d}'{tail}"

    _through(cs, spark, query(20))
    _, summary = _through(cs, spark, query(25))
    assert summary["aggregates_lifted"] == 1, cs.explain(cs.sql(query(25)))
    for day in (31, 3, 1):
        _, summary = _through(cs, spark, query(day))
        assert _rule_count(summary, AGGREGATE_ROLLUP) == 1, cs.explain(cs.sql(query(day)))
        assert summary.get("aggregates_lifted", 0) == 0
    empty = query(1).replace("2020-01-01", "2019-12-31")
    _, summary = _through(cs, spark, empty)  # no row in range: NULL sums, a count of 0
    assert _rule_count(summary, AGGREGATE_ROLLUP) == 1
    cs.close()


def test_an_expression_reading_a_column_outside_its_aggregates_says_why_it_is_not_lifted(
    spark, params_table, tmp_path
):
    """An expression over an aggregate and a grouping column is not rolled up (only
    expressions over aggregates and literals are): it is not lifted however often it
    recurs, and the record, the counters and ``explain`` say why; rows stay plain Spark's."""
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")

    def query(day: int) -> str:
        return (
            "select g, sum(x) * g scaled from params_t "
            f"where d <= date '2020-01-{day:02d}' group by g"
        )

    _, summary = _through(cs, spark, query(20))
    assert summary.get("lifts_not_decomposable", 0) == 0  # no evidence of recurrence yet
    for day in (25, 12):
        df = cs.sql(query(day))
        assert_same_rows(df.collect(), spark.sql(query(day)).collect())
        summary = cs.last_query_summary()
        assert summary.get("aggregates_lifted", 0) == 0
        assert summary["lifts_not_decomposable"] == 1
        said = cs.explain(df)
        assert "not lifted: an output is an expression that reads a column" in said, said
        [lift] = cs.record(df).lifts
        assert lift["reason"] == "lift_not_decomposable" and lift["path"] == []
    assert cs.report()["counters"]["lifts_not_decomposable"] == 2
    cs.close()


def test_an_aggregate_whose_other_conditions_vary_too_is_not_lifted(spark, params_table, tmp_path):
    """Each query also excludes another value (``x <> n``, as the no-repeat stream's salted
    tables do): a lifted result would keep its own exclusion and serve none of the next
    queries, so nothing is lifted; rows stay plain Spark's."""
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    for low, salt in ((2, 1), (4, 2), (0, 3), (6, 4)):
        sql = (
            "select h, sum(m) sm, count(*) c from params_t "
            f"where v > {low} and x <> {salt} group by h"
        )
        _, summary = _through(cs, spark, sql)
        assert summary.get("aggregates_lifted", 0) == 0, cs.explain(cs.sql(sql))
        assert _rule_count(summary, AGGREGATE_ROLLUP) == 0
    cs.close()


@pytest.mark.parametrize(
    ("growth", "reason", "lifted"),
    [
        (1, "too large", (0, 1, 0)),
        (100, "too large: 3 groups measured under other parameters", (0, 0, 0)),
    ],
    ids=["refused-after-the-action", "refused-from-measured-groups"],
)
def test_a_lifted_aggregate_too_large_is_not_tried_again(
    spark, params_table, tmp_path, monkeypatch, growth, reason, lifted
):
    """A lifted result over the row bound serves the query whose action computed it, and
    is then dropped; when the groups measured under other parameters already predict that,
    it is not computed at all. Either way it is never tried again."""
    import importlib

    lift = importlib.import_module("criss.planner.lift")  # the package exports lift()
    monkeypatch.setattr(lift, "LIFT_MAX_ROWS", 3)
    monkeypatch.setattr(lift, "LIFT_GROWTH", growth)
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    queries = [f"select h, count(*) c from params_t where x > {n} group by h" for n in (1, 2, 3)]
    for sql, expected in zip(queries, lifted, strict=True):
        _, summary = _through(cs, spark, sql)
        assert _rule_count(summary, AGGREGATE_ROLLUP) == expected
        assert summary.get("aggregates_lifted", 0) == expected
    refused = [k for k in cs.qtree.meta_items() if k.startswith(lift.LIFT_REFUSED)]
    assert len(refused) == 1
    said = cs.qtree.meta(refused[0])
    assert said == reason or said.startswith(reason + ","), said
    cs.close()


@pytest.mark.parametrize(
    ("condition", "lifted"),
    [("v > {n}", True), ("v > {n} and d <= date '2020-01-2{n}'", False)],
    ids=["one-lifted-column", "two-lifted-columns"],
)
def test_each_lifted_column_multiplies_the_groups_expected(
    spark, params_table, tmp_path, monkeypatch, condition, lifted
):
    """One group lifted over one column is expected to make 100 (under the bound of 5,000
    set here); over two columns 10,000: refused before any job (TPC-H Q6's three columns)."""
    import importlib

    lift = importlib.import_module("criss.planner.lift")
    monkeypatch.setattr(lift, "LIFT_MAX_ROWS", 5000)
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    for n in (1, 2, 3):
        sql = f"select count(*) c, sum(x) s from params_t where {condition.format(n=n)}"
        _, summary = _through(cs, spark, sql)
        assert summary.get("aggregates_lifted", 0) == (lifted and n == 2), cs.explain(cs.sql(sql))
    refused = [cs.qtree.meta(k) for k in cs.qtree.meta_items() if k.startswith(lift.LIFT_REFUSED)]
    assert len(refused) == (0 if lifted else 1)
    if not lifted:
        assert "x100 for each of 2 lifted columns" in refused[0], refused


def test_other_aggregates_of_the_same_input_do_not_count_as_evidence(
    spark, params_table, tmp_path, monkeypatch
):
    """Only the same grouping and outputs under other values decide a lift: an aggregate of
    the same rows by another, larger grouping (20 groups, over the bound the measured groups
    allow: refused for itself) neither starts nor prevents it."""
    import importlib

    lift = importlib.import_module("criss.planner.lift")
    monkeypatch.setattr(lift, "LIFT_MAX_ROWS", 1000)  # lifted only from <= 10 groups
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    for n in (1, 2):
        _, summary = _through(
            cs, spark, f"select x, count(*) c from params_t where v > {n} group by x"
        )
    refused = [k for k in cs.qtree.meta_items() if k.startswith(lift.LIFT_REFUSED)]
    assert len(refused) == 1 and cs.qtree.meta(refused[0]).startswith("too large: 2")
    wanted = [
        f"select h, count(*) c, sum(x) s from params_t where v > {n} group by h" for n in (1, 3, 5)
    ]
    _, summary = _through(cs, spark, wanted[0])
    assert summary.get("aggregates_lifted", 0) == 0  # the x groups are no evidence
    _, summary = _through(cs, spark, wanted[1])
    assert summary.get("aggregates_lifted", 0) == 1, cs.explain(cs.sql(wanted[1]))
    _, summary = _through(cs, spark, wanted[2])
    assert _rule_count(summary, AGGREGATE_ROLLUP) == 1
    cs.close()


def test_parameters_under_joins_are_lifted_from_every_filter(tpch, tmp_path):
    """TPC-H Q4 (the order date under a semi join) and Q5 (the date at the orders scan, the
    region at the region scan, four joins apart) lifted, then rolled up."""
    from criss.workload.tpch.queries import statement

    cs = criss.session(tpch, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    for qid in (4, 5):
        distinct = list(dict.fromkeys(statement(qid, seed=s, sf=0.01).sql for s in range(1, 9)))
        for position, sql in enumerate(distinct[:4]):
            _, summary = _through(cs, tpch, sql)
            lifted = summary.get("aggregates_lifted", 0)
            assert lifted == (position == 1), (qid, position, cs.explain(cs.sql(sql)))
            if position >= 1:
                assert _rule_count(summary, AGGREGATE_ROLLUP) == 1, cs.explain(cs.sql(sql))
    cs.close()


def test_a_lift_is_priced_at_the_width_of_its_own_rows(tpch, tmp_path):
    """TPC-H Q5 returns five nations: its result's bytes per row are mostly its file's own
    overhead, and pricing the lifted result's write at them made it 10-20x too dear (SF 1:
    9 MB estimated, 0.6 MB written). The lift is priced at Spark's width of a lifted row and
    the Parquet ratio learned, within a small factor of what its rows take once written."""
    from criss.workload.tpch.queries import statement

    cs = criss.session(tpch, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    distinct = list(dict.fromkeys(statement(5, seed=s, sf=0.01).sql for s in range(1, 9)))
    _through(cs, tpch, distinct[0])
    _, summary = _through(cs, tpch, distinct[1])
    assert summary.get("aggregates_lifted", 0) == 1, cs.explain(cs.sql(distinct[1]))
    (decision,) = _lift_decisions(cs)
    numbers = decision["numbers"]
    cs.learning.settle()
    (lifted,) = cs.learning.lifted_results()
    written = cs.qtree.get(lifted)
    tree = cs.canonical_tree(cs.bridge.capture(tpch.sql(distinct[0])))
    (aggregate,) = [n for n in tree.walk() if n.op == "Aggregate"]
    sibling = cs.qtree.get(aggregate.fingerprint)
    written_per_row = written.size_bytes / written.rows
    estimated_per_row = numbers["lifted_bytes"] / numbers["lifted_rows"]
    assert written_per_row / 4 <= estimated_per_row <= written_per_row * 4, (
        numbers,
        written,
    )
    # what the old estimate took: the small sibling's file bytes per row
    assert sibling.size_bytes / sibling.rows > 4 * written_per_row, sibling
    cs.close()


def _lift_decisions(cs):
    record = cs.last_record
    return [] if record is None else record.lifts


def test_a_lift_no_measurement_says_will_pay_is_not_computed(spark, params_table, tmp_path):
    """By default the benefit model decides a lift: an aggregate whose conditions keep a
    ninth, two ninths of the rows (lifting costs the ratio of the rows its scan and
    aggregate take in, times the 1.5 assumed beyond them until a lift is measured), seen
    under a second and a third value with no other template known to come back under new
    values (0.5, then 1 expected), is never worth it, whatever the timings; explain gives
    the numbers."""
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0)
    queries = [
        f"select h, count(*) c, sum(x) s from params_t where v > {n} group by h" for n in (7, 6, 5)
    ]
    _through(cs, spark, queries[0])
    assert _lift_decisions(cs) == []  # no sibling: nothing weighed
    for sql, expected in zip(queries[1:], (0.5, 1.0), strict=True):
        planned = cs.sql(sql)
        assert_same_rows(planned.collect(), spark.sql(sql).collect())
        assert cs.last_query_summary().get("aggregates_lifted", 0) == 0
        (decision,) = _lift_decisions(cs)
        numbers = decision["numbers"]
        assert decision["reason"] == "lift_no_gain" and numbers["gain"] < 0, decision
        assert numbers["expected_values"] == pytest.approx(expected)
        assert numbers["cost_basis"] == "rows_estimate", numbers
        assert numbers["cost_ratio"] == pytest.approx(1.5 * numbers["rows_ratio"])
        assert "assumed" in numbers["cost_source"]
        from criss.workload.replay import criss_summary

        (kept,) = criss_summary(cs.last_record)["lift_decisions"]  # what a replay records
        assert kept["reason"] == "lift_no_gain" and kept["gain"] == round(numbers["gain"], 4)
        assert kept["cost_basis"] == "rows_estimate"
        assert kept["rows_ratio"] == round(numbers["rows_ratio"], 4)
        said = cs.explain(planned)
        assert f"not lifted: {expected:.2f} new parameter values expected" in said, said
    cs.close()


def test_templates_seen_coming_back_under_new_values_make_a_lift_pay(tpch, tmp_path):
    """TPC-H Q1's ship date keeps ~97 % of lineitem: lifting it costs at most the rows its
    condition drops (measured on the earlier value's execution), and once another template
    has come back under several new values the same lift is expected to be rolled up from
    often: it is lifted, and its next value rolled up. The decision's gain is what decided."""
    cs = criss.session(tpch, home=str(tmp_path / "home"), min_texec=0)
    for n in range(1, 13):  # another template, under twelve values: templates come back
        _through(
            cs,
            tpch,
            f"select o_orderpriority, count(*) c from orders where o_custkey > {n} group by 1",
        )
    q1 = (
        "select l_returnflag, l_linestatus, sum(l_quantity) sum_qty, "
        "sum(l_extendedprice * (1 - l_discount)) sum_disc_price, avg(l_discount) avg_disc, "
        "count(*) count_order from lineitem "
        "where l_shipdate <= date '1998-12-01' - interval '{delta}' day group by 1, 2"
    )
    _through(cs, tpch, q1.format(delta=90))
    _, summary = _through(cs, tpch, q1.format(delta=60))
    (decision,) = _lift_decisions(cs)
    numbers = decision["numbers"]
    assert "selectivity" in numbers["cost_source"] and 1.0 <= numbers["cost_ratio"] < 1.1, numbers
    # (its Texec spans two stages of Spark's fixed cost, a roll-up one: the gain is positive
    # however slow the machine)
    assert numbers["expected_values"] > 3, numbers
    assert numbers["gain"] > 0 and decision["reason"] == "lift_pays", numbers
    assert summary["aggregates_lifted"] == 1
    _, summary = _through(cs, tpch, q1.format(delta=117))
    assert _rule_count(summary, AGGREGATE_ROLLUP) == 1, cs.explain(cs.sql(q1.format(delta=117)))
    cs.close()


def test_a_measured_lift_teaches_the_cost_ratio_of_the_next(spark, params_table, tmp_path):
    """An eager lift's measured Texec over the Texec of the aggregate it replaced teaches
    the next decisions: over the ratio of rows it was weighed at, what lifts cost beyond
    their rows (no longer the 1.5 assumed); and for a lift whose filter also holds a
    condition lifting keeps (its rows' ratio unknown), the cost ratio itself (no longer the
    2x assumed)."""
    from criss.planner.learning import DEFAULT_LIFT_COST_RATIO, DEFAULT_LIFT_ROWS_OVERHEAD

    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    for n in (7, 6):
        _through(
            cs, spark, f"select h, count(*) c, sum(x) s from params_t where v > {n} group by h"
        )
    assert cs.last_query_summary()["aggregates_lifted"] == 1
    (decision,) = _lift_decisions(cs)
    assert decision["numbers"]["cost_basis"] == "rows_estimate", decision
    cs.learning.settle()
    assert cs.learning.learn_lift_costs() == 1
    overhead, source = cs.learning.lift_rows_overhead
    assert source == "rows" and overhead != DEFAULT_LIFT_ROWS_OVERHEAD
    assert cs.learning.lift_cost_ratio == (DEFAULT_LIFT_COST_RATIO, "estimate")
    for n in (7, 6):
        _through(
            cs,
            spark,
            f"select g, max(m) m from params_t where x > {n + 10} and s <> 'q' group by g",
        )
    assert cs.last_query_summary()["aggregates_lifted"] == 1
    (decision,) = _lift_decisions(cs)
    numbers = decision["numbers"]
    assert numbers["rows_ratio"] is None, numbers  # the <> stays in the lifted result
    assert numbers["cost_basis"] == "estimate" and numbers["cost_ratio"] == 2.0, numbers
    cs.learning.settle()
    assert cs.learning.learn_lift_costs() == 1
    ratio, source = cs.learning.lift_cost_ratio
    assert source == "measured" and ratio != DEFAULT_LIFT_COST_RATIO
    assert cs.learning.lift_rows_overhead == (overhead, "rows")  # not taught by it
    cs.close()


def test_a_lift_whose_extra_rows_go_through_a_join_is_priced_by_the_rows_they_make(
    spark, params_table, tmp_path
):
    """TPC-H Q14's shape: the range a lift drops is on one input of a join under the
    aggregate, so every row it adds goes through the join and the aggregate too. The
    decision weighs the lift at the ratio of the rows its scans, join and aggregate take in
    without the range to those they take in with it, as measured in the earlier query,
    times what lifts cost beyond their rows (1.5 assumed before any lift was measured),
    under the growth of the filtered input alone; explain shows it."""
    dim = str(tmp_path / "dim")
    spark.createDataFrame([(g, f"w{g}") for g in range(5)], "g int, w string").coalesce(
        1
    ).write.parquet(dim)
    spark.read.parquet(dim).createOrReplaceTempView("dim_t")
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0)

    def query(day: int) -> str:
        return (
            "select b.w, sum(a.x) s from params_t a join dim_t b on a.g = b.g "
            f"where a.d <= date '2020-01-{day:02d}' group by b.w"
        )

    _through(cs, spark, query(2))
    cs.learning.settle()
    df = cs.sql(query(3))
    assert_same_rows(df.collect(), spark.sql(query(3)).collect())
    (decision,) = _lift_decisions(cs)
    numbers = decision["numbers"]
    assert numbers["cost_basis"] == "rows_estimate", numbers
    # 4 of 60 rows in range: (60 + 5 scanned, 4 + 5 joined, 4 aggregated) -> (65, 65, 60)
    assert numbers["rows_ratio"] == pytest.approx(190 / 78), numbers
    assert numbers["cost_ratio"] == pytest.approx(1.5 * 190 / 78), numbers
    assert numbers["growth_bound"] == pytest.approx(15.0), numbers
    said = cs.explain(df)
    assert "rows its operators take in without the lifted conditions" in said, said
    cs.close()


def test_a_lift_is_weighed_without_what_the_cache_serves_under_it(spark, params_table, tmp_path):
    """TPC-H Q17's shape: a parameter-free aggregate under the one whose range drifts is
    cached by the first statement and read by the next. Neither what a later value saves
    nor what lifting adds counts its computation any more: the lift is weighed at the first
    statement's Texec less that of the subtree the cache now serves."""
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0)

    def query(day: int) -> str:
        return (
            "select sum(a.x) / 7.0 r from params_t a join "
            "(select g, avg(x) ax from params_t group by g) b on a.g = b.g "
            f"where a.d <= date '2020-01-{day:02d}' and a.x < 2 * b.ax"
        )

    _through(cs, spark, query(2))
    first = {op.path: op.fingerprint for op in cs.last_record.operators}
    cs.learning.settle()
    df = cs.sql(query(3))
    assert_same_rows(df.collect(), spark.sql(query(3)).collect())
    (decision,) = _lift_decisions(cs)
    top = tuple(decision["path"])
    served = [
        op.path
        for op in cs.last_record.operators
        if op.served is not None and len(op.path) > len(top) and op.path[: len(top)] == top
    ]
    highest = [p for p in served if not any(len(q) < len(p) and p[: len(q)] == q for q in served)]
    assert highest, cs.explain(df)  # the per-group average, read from the cache
    spared = sum(cs.qtree.get(first[path]).texec for path in highest)
    assert spared > 0
    # each measured in its own share of a job: the served part may read above the whole
    expected = max(cs.qtree.get(first[top]).texec - spared, 0.0)
    assert decision["numbers"]["texec"] == pytest.approx(expected), decision
    cs.close()


def test_a_failure_while_weighing_a_lift_leaves_the_query_to_criss_unlifted(
    spark, params_table, tmp_path, monkeypatch
):
    """Weighing a lift is Criss's own work: if it fails (any exception type), the query is
    planned as if nothing were lifted, with its own result still cached, not sent back to
    plain Spark."""
    import importlib

    lift = importlib.import_module("criss.planner.lift")

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a broken statistic")

    monkeypatch.setattr(lift, "_weigh", broken)
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    for n in (7, 6):
        _, summary = _through(
            cs, spark, f"select h, count(*) c, sum(x) s from params_t where v > {n} group by h"
        )
    assert summary.get("fallback") is None and summary.get("aggregates_lifted", 0) == 0
    assert summary["operators_cached"] == 1, summary
    cs.close()
