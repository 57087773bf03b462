"""Range joins (criss.joins.range): Criss's answer equals plain Spark's, and the rewrite
was really applied (explain, counters) or really left alone when it should be."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import pytest

import criss
from criss.policies.joins import RangeJoinModel, SideStats
from criss.qtree.joins import detect_range
from tests.rowcompare import assert_same_rows

#: Also run on the loopback standalone cluster (tests/conftest.py).
pytestmark = pytest.mark.cluster


def one_on_cluster(queries: dict[str, str]) -> list:
    """``queries`` as parameters, every one run in the local pass and the first alone on
    the cluster too: what the cluster adds is executors in other JVMs running the probes
    in their Python workers, which one case per method exercises; the data cases are
    about rows, the same on both."""
    return [
        pytest.param(query, id=name, marks=() if i == 0 else pytest.mark.local_only)
        for i, (name, query) in enumerate(queries.items())
    ]


FAST = {"codec_rate": "20m", "disk_bandwidth": "100m", "memory_bandwidth": "1g"}
#: these tests are about the join rewrite: no materialization jobs for caching (a
#: first-seen result would be cached eagerly however cheap: not here)
NO_CACHING = dict(FAST, min_texec=1e9, eager_results=False)
#: rewrite whenever the estimate is cheaper at all: the tables here are small
RELAXED = {"range_join_min_seconds": 0, "range_join_min_ratio": 1}
#: ... or always, even where the estimate says the rewrite saves nothing
ALWAYS = {"range_join_min_seconds": -1, "range_join_min_ratio": 0}

POINTS = """
select id as pid,
  case when id % 97 = 0 then null else (id * 7919) % 5000 end as p,
  cast((id * 7919) % 5000 as decimal(10, 2)) / 3 as pdec,
  date_add(date'2020-01-01', cast((id * 13) % 400 as int)) as pd,
  timestamp_seconds(1600000000 + (id * 7) % 100000) as pt,
  case when id % 89 = 0 then double('NaN') when id % 83 = 0 then double('Infinity')
       when id % 79 = 0 then double('-Infinity') when id % 73 = 0 then -0.0D
       when id % 97 = 0 then null else ((id * 7919) % 5000) / 7.0D end as pf
from range(3000)
"""
# long intervals every 50th row, reversed (e < s) every 7th, NULL ends every 61st;
# the interval ends fall on point values, so boundaries are tested; duplicates: id 800..819
INTERVALS = """
select id % 800 as iid,
  case when id % 61 = 0 then null else (id % 800 * 31) % 5000 end as s,
  (id % 800 * 31) % 5000 + case when id % 50 = 0 then 3000 when id % 7 = 0 then -5
                                else id % 40 end as e,
  cast((id % 800 * 31) % 5000 as decimal(10, 2)) / 3 as sdec,
  cast((id % 800 * 31) % 5000 + id % 40 as decimal(10, 2)) / 3 as edec,
  date_add(date'2020-01-01', cast((id * 17) % 400 as int)) as sd,
  date_add(date'2020-01-01', cast((id * 17) % 400 + id % 9 as int)) as ed,
  timestamp_seconds(1600000000 + (id * 11) % 100000) as st,
  timestamp_seconds(1600000000 + (id * 11) % 100000 + (id % 5) * 600) as et,
  case when id % 67 = 0 then double('-Infinity') when id % 71 = 0 then double('NaN')
       when id % 61 = 0 then null else ((id % 800 * 31) % 5000) / 7.0D end as sf,
  case when id % 59 = 0 then double('Infinity') when id % 53 = 0 then double('NaN')
       when id % 43 = 0 then 0.0D else ((id % 800 * 31) % 5000 + id % 40) / 7.0D end as ef
from range(820)
"""


@pytest.fixture(scope="module")
def views(spark):
    spark.sql(POINTS).createOrReplaceTempView("rj_points")
    spark.sql(INTERVALS).createOrReplaceTempView("rj_intervals")
    spark.sql(INTERVALS).where("iid * 2 > 5000").createOrReplaceTempView("rj_none")
    return spark


@pytest.fixture(scope="module")
def cs(views, tmp_path_factory):
    return criss.session(views, home=tmp_path_factory.mktemp("rj"), **RELAXED, **NO_CACHING)


@contextmanager
def _options(cs, **changes):
    """``cs`` with some options changed between its queries, restored afterwards (the
    range join reads ``cs.options`` per query)."""
    saved = cs.options
    cs.options = dataclasses.replace(saved, **changes)
    try:
        yield cs
    finally:
        cs.options = saved


def _check(cs, spark, query: str, applied: bool = True) -> str:
    got = cs.sql(query)
    assert_same_rows(got.collect(), spark.sql(query).collect())
    explain = cs.explain(got)
    verdict = "range_join APPLIED" if applied else "range_join not applied"
    assert verdict in explain, explain
    return explain


POINT_IN_INTERVAL = {
    "between": "select pid, iid, p, s, e from rj_points join rj_intervals on p between s and e",
    "half-open": "select pid, iid from rj_points join rj_intervals on p >= s and p < e",
    "left-outer": "select pid, iid from rj_points left join rj_intervals on p >= s and p < e",
    "right-outer": "select pid, iid from rj_intervals right join rj_points on s < p and e >= p",
    "decimal": "select pid, iid from rj_points join rj_intervals on pdec between sdec and edec",
    "date-left-outer": "select pid, iid from rj_points left join rj_intervals"
    " on pd >= sd and ed > pd",
    "timestamp": "select pid, iid from rj_points join rj_intervals on pt >= st and pt <= et",
    "residual": "select pid, iid from rj_points join rj_intervals"
    " on p between s and e and (pid + iid) % 3 <> 0",
}


@pytest.mark.parametrize("query", one_on_cluster(POINT_IN_INTERVAL))
def test_point_in_interval_equals_spark(cs, views, query):
    explain = _check(cs, views, query)
    assert "bucket equi-join" in explain


def test_overlap_equals_spark_including_reversed_intervals(cs, views):
    # a reversed interval (e < s) can still satisfy a.s <= b.e and b.s <= a.e: kept exact
    query = (
        "select a.iid, b.iid from rj_intervals a join rj_intervals b on a.s <= b.e and b.s <= a.e"
    )
    with _options(cs, range_join_min_ratio=0.1):
        _check(cs, views, query)


def test_several_length_levels_and_statistics_reused(cs, views):
    query = "select pid, iid from rj_points join rj_intervals on p between s and e"
    before = dict(cs.report()["counters"])
    explain = _check(cs, views, query)
    assert "2 level(s)" in explain  # the few 3000-long intervals go to a coarser level
    after = cs.report()["counters"]
    assert after.get("range_join_stats_measured", 0) == before.get("range_join_stats_measured", 0)
    assert after["range_join_stats_reused"] >= before.get("range_join_stats_reused", 0) + 2


def test_empty_side(cs, views):
    # the model keeps the nested loop for an empty side (nothing to save) ...
    _check(cs, views, "select pid, iid from rj_points join rj_none on p between s and e", False)
    # ... and the rewrite, when forced, still answers exactly
    with _options(cs, **ALWAYS):
        _check(cs, views, "select pid, iid from rj_points left join rj_none on p between s and e")
        _check(cs, views, "select pid, iid from rj_none right join rj_points on p between s and e")


#: outer joins whose preserved side is exploded into buckets or indexed: joined inner, plus
#: the preserved side's unmatched rows (NULL, reversed and never-met intervals among them)
INTERVAL_PRESERVING = {
    "left": "select pid, iid from rj_intervals left join rj_points on p between s and e",
    "right": "select pid, iid, s, e from rj_points right join rj_intervals on p >= s and p < e",
    "residual": "select pid, iid from rj_intervals left join rj_points"
    " on p between s and e and (pid + iid) % 3 <> 0",
    "duplicates": "select pid, iid, s, e from rj_dups left join"
    " (select * from rj_points where p < 1500) on p between s and e",
    "date": "select pid, iid, sd from rj_intervals left join rj_points on pd >= sd and ed > pd",
    "overlap": "select a.iid, b.iid from rj_intervals a left join"
    " (select * from rj_intervals where iid % 3 = 0) b on a.s <= b.e and b.s <= a.e",
    "overlap-right": "select a.iid, b.iid from (select * from rj_intervals where iid % 3 = 0) a"
    " right join rj_intervals b on a.s <= b.e and b.s <= a.e",
    "empty": "select pid, iid from rj_intervals left join rj_none_points on p between s and e",
    # rows equal but for -0.0 / 0.0, which only the residual tells apart
    "signed-zero": "select pid, iid, cast(z as string) from rj_zeros left join rj_points"
    " on p between s and e and cast(z as string) = '0.0'",
}


@pytest.fixture
def interval_preserving(cs, views):
    # exact duplicate rows, some met by no point (the points stop at 1500)
    views.sql(
        "select * from rj_intervals union all select * from rj_intervals where iid < 300"
    ).createOrReplaceTempView("rj_dups")
    views.sql(POINTS).where("pid < 0").createOrReplaceTempView("rj_none_points")
    views.sql(
        "select 7 as iid, 100 + id % 1 as s, 900 + id % 1 as e,"
        " (id % 2 - 1) * 0.0D as z from range(4)"  # -0.0 on even ids, 0.0 on odd
    ).createOrReplaceTempView("rj_zeros")
    with _options(cs, **ALWAYS):
        yield views


@pytest.mark.parametrize("method", ["bucket", "index"])
@pytest.mark.parametrize("query", one_on_cluster(INTERVAL_PRESERVING))
def test_outer_join_preserving_the_interval_side_equals_spark(
    cs, interval_preserving, method, query
):
    with _options(cs, range_join_method=method):
        explain = _check(cs, interval_preserving, query)
    assert "unmatched rows (NULL-safe anti-join on whole rows)" in explain, explain
    assert ("bucket equi-join" if method == "bucket" else "range index") in explain


def test_outer_join_preserving_a_map_column_is_left_alone(cs, interval_preserving):
    query = (
        "select pid, iid, size(m) from (select *, map(iid, s) as m from rj_intervals) i"
        " left join rj_points on p between s and e"
    )
    explain = _check(cs, interval_preserving, query, applied=False)
    assert "map column(s) ['m']" in explain


def test_one_sided_bound_and_equi_keys_are_left_alone(cs, views):
    explain = _check(
        cs,
        views,
        "select pid, iid from rj_points join rj_intervals on p >= e and pid < 40",
        applied=False,
    )
    assert "one-sided" in explain
    explain = _check(
        cs,
        views,
        "select pid, iid from rj_points join rj_intervals on pid = iid and p between s and e",
        applied=False,
    )
    assert "equi keys" in explain


def test_option_off_leaves_the_plan_alone(views, tmp_path):
    off = criss.session(views, home=tmp_path, range_join=False, **NO_CACHING)
    query = "select pid, iid from rj_points join rj_intervals on p between s and e"
    got = off.sql(query)
    assert_same_rows(got.collect(), views.sql(query).collect())
    assert "range_join" not in off.explain(got)
    assert "joins_range_join" not in off.report()["counters"]


def test_tiny_join_keeps_nested_loop_under_default_model(spark, tmp_path):
    spark.sql("select id as p from range(20)").createOrReplaceTempView("rj_tiny_p")
    spark.sql("select id as s, id + 2 as e from range(5)").createOrReplaceTempView("rj_tiny_i")
    cs = criss.session(spark, home=tmp_path, **NO_CACHING)
    _check(cs, spark, "select * from rj_tiny_p join rj_tiny_i on p between s and e", False)


# --- the range index ---------------------------------------------------------------------


@pytest.fixture
def forced_index(cs, views):
    with _options(cs, range_join_method="index"):
        yield views


# NULL, reversed, boundary-equal, duplicate and 3000-long intervals are in the data
RANGE_INDEX_JOINS = {
    "between": "select pid, iid, p, s, e from rj_points join rj_intervals on p between s and e",
    "strict-swapped": "select pid, iid from rj_intervals join rj_points on s < p and e >= p",
    "decimal": "select pid, iid from rj_points join rj_intervals on pdec between sdec and edec",
    "timestamp": "select * from rj_points join rj_intervals on pt >= st and pt <= et",
    "residual": "select pid, iid from rj_points join rj_intervals"
    " on p between s and e and (pid + iid) % 3 <> 0",
    "overlap": "select a.iid, b.iid from rj_intervals a join rj_intervals b"
    " on a.s <= b.e and b.s <= a.e",
    "empty": "select pid, iid from rj_points join rj_none on p between s and e",
}


@pytest.mark.parametrize("query", one_on_cluster(RANGE_INDEX_JOINS))
def test_range_index_equals_spark(cs, forced_index, query):
    explain = _check(cs, forced_index, query)
    assert "range index" in explain and "length class" in explain


ONE_SIDED = {
    "point-above": "select pid, iid from rj_points join rj_intervals on p >= e",
    "point-below-filtered": "select pid, iid from rj_points join rj_intervals"
    " on p < s and pid < 50",
    "date-residual": "select pid, iid from rj_points join rj_intervals"
    " on sd > pd and (pid + iid) % 2 = 0",
}


@pytest.mark.parametrize("query", one_on_cluster(ONE_SIDED))
def test_one_sided_range_index_equals_spark(cs, forced_index, query):
    explain = _check(cs, forced_index, query)
    assert "range index (one-sided" in explain


FLOAT_JOINS = {
    "between": "select pid, iid, pf, sf, ef from rj_points join rj_intervals"
    " on pf between sf and ef",
    "half-open": "select pid, iid from rj_points join rj_intervals on pf >= sf and pf < ef",
    "left-outer": "select pid, iid from rj_points left join rj_intervals on pf >= sf and ef > pf",
    "float32": "select pid, iid from rj_points join rj_intervals"
    " on cast(pf as float) between cast(sf as float) and cast(ef as float)",
    "overlap": "select a.iid, b.iid from rj_intervals a join rj_intervals b"
    " on a.sf <= b.ef and b.sf <= a.ef",
}


@pytest.mark.parametrize("method", ["bucket", "index"])
@pytest.mark.parametrize("query", one_on_cluster(FLOAT_JOINS))
def test_floating_point_bounds_with_nan_infinities_and_signed_zero(cs, views, method, query):
    # NaN (above +Infinity in Spark's order), +-Infinity, -0.0 and NULL on both sides; the
    # interval ends fall on point values, so boundaries are tested
    with _options(cs, range_join_method=method):
        explain = _check(cs, views, query)
    assert ("bucket equi-join" if method == "bucket" else "range index") in explain


def test_finite_floating_point_bounds_are_bucketed_by_the_cost_model(cs, views):
    query = (
        "select pid, iid from (select * from rj_points where abs(pf) < 1e6) p"
        " join (select * from rj_intervals where abs(sf) < 1e6 and abs(ef) < 1e6) i"
        " on pf between sf and ef"
    )
    explain = _check(cs, views, query)
    assert "bucket equi-join" in explain


INDEXED_OUTER_JOINS = {
    "point-preserved": "select pid, iid from rj_points left join rj_intervals on p >= s and p < e",
    "point-preserved-right": "select pid, iid from rj_intervals right join rj_points"
    " on s <= p and e >= p",
    "one-sided": "select pid, iid from rj_points left join rj_intervals on p >= e and pid < 40",
    "one-sided-indexed-preserved": "select pid, iid from rj_intervals left join rj_points"
    " on sd > pd",
}


@pytest.mark.parametrize("query", one_on_cluster(INDEXED_OUTER_JOINS))
def test_range_index_serves_outer_joins(cs, forced_index, query):
    explain = _check(cs, forced_index, query)
    assert "range index" in explain and "unmatched rows" in explain


def test_range_index_row_limit_blocks_it(cs, forced_index):
    with _options(cs, range_join_index_max_rows=10):
        query = "select pid, iid from rj_points join rj_intervals on p between s and e"
        explain = _check(cs, forced_index, query, applied=False)
        assert (
            "rows > 10 (range_join_index_max_rows / spark.criss.range.join.index.max.rows)"
            in explain
        )


def test_index_worker_pairs_are_a_superset_of_the_matches():
    import numpy as np

    from criss.joins import range_index

    rng = np.random.default_rng(1)
    lo = rng.integers(0, 1000, 500).astype(float)
    hi = lo + np.where(rng.random(500) < 0.02, 5000, rng.integers(-3, 20, 500))
    lo[::37] = np.nan  # NULL ends never match
    points = np.append(rng.integers(-100, 7000, 300).astype(float), np.nan)
    index = range_index.build(lo, hi)
    range_index.CHUNK_PAIRS, saved = 64, range_index.CHUNK_PAIRS  # many chunks
    try:
        got = {
            (int(a), int(b))
            for at, rows in range_index.probe(index, points, points)
            for a, b in zip(at, rows, strict=True)
        }
    finally:
        range_index.CHUNK_PAIRS = saved
    want = {
        (i, j) for i, p in enumerate(points) for j in range(500) if lo[j] <= p <= hi[j]
    }  # NaN compares false
    assert got == want
    below = range_index.build_one_sided(lo, index_is_lower=False)  # v >= x
    got = {
        (int(a), int(b))
        for at, rows in range_index.probe(below, points, points)
        for a, b in zip(at, rows, strict=True)
    }
    assert got == {(i, j) for i, p in enumerate(points) for j in range(500) if lo[j] >= p}


def test_model_index_choice_follows_the_measurements():
    model = RangeJoinModel()
    # 50k intervals of ~1e4 over 1e9, 1 % of them 1000x longer; 1M points: measured
    # (range_join_index.json), buckets beat the index here, so the model keeps buckets
    skewed = SideStats(50_000, 50_000, 0.0, 1e9, {13: (49_500, 1e4), 24: (500, 2e7)})
    points = SideStats(1_000_000, 1_000_000, 0.0, 1e9, {-1075: (1_000_000, 0.0)})
    choice = model.choose(skewed, points, single_level=False)
    assert choice.method == "bucket", choice.reason
    assert choice.details["index_seconds_est"] > choice.details["bucket_seconds_est"]
    forced = model.choose(skewed, points, single_level=False, force="index")
    assert forced.method == "index"
    blocked = model.choose(skewed, points, single_level=False, index_blocked="outer", force="index")
    assert blocked.method is None and "outer" in blocked.reason
    # one-sided: points above all but the top 0.1 % of values → tiny output: index
    values = SideStats(50_000, 50_000, 0.0, 1e9, {-1075: (50_000, 0.0)})
    high = SideStats(1_000_000, 1_000_000, 0.999e9, 1e9 + 1e6, {-1075: (1_000_000, 0.0)})
    assert model.choose_one_sided(values, high, indexed_is_lower=False).method == "index"
    # ... a half of all pairs: the nested loop is as good
    half = model.choose_one_sided(values, points, indexed_is_lower=True)
    assert half.method is None and half.details["pair_fraction_est"] > 0.4


# --- pure parts ---------------------------------------------------------------------------


def test_model_levels_bound_the_explosion():
    model = RangeJoinModel(max_buckets=16)
    # 10k intervals of length ~100, 100 of length ~1e6, over keys 0..1e7
    intervals = SideStats(10100, 10100, 0.0, 1e7, {6: (10000, 100.0), 19: (100, 1e6)})
    points = SideStats(1_000_000, 1_000_000, 0.0, 1e7, {-1075: (1_000_000, 0.0)})
    widths = model.levels(intervals, points, single=False)
    assert len(widths) == 2
    assert 1e6 <= 16 * widths[-1]  # the longest interval covers at most ~16 buckets
    assert 100 <= 16 * widths[0]
    choice = model.choose(intervals, points, single_level=False)
    assert choice.method == "bucket"
    assert choice.details["explosion_factor"] < 4
    single = model.levels(intervals, points, single=True)
    assert len(single) == 1 and 1e6 <= model.max_buckets_single_level * single[0]


def test_detection_needs_both_directions():
    from criss.qtree.plan import Expr

    def attr(i):
        return Expr(
            "org.apache.spark.sql.catalyst.expressions.AttributeReference",
            (("exprId", (("id", i), ("jvmId", "x"))), ("name", f"c{i}")),
            (),
        )

    def cmp(name, a, b):
        return Expr(f"org.apache.spark.sql.catalyst.expressions.{name}", (), (a, b))

    p, s, e = attr(1), attr(2), attr(3)
    both = Expr(
        "org.apache.spark.sql.catalyst.expressions.And",
        (),
        (cmp("GreaterThanOrEqual", p, s), cmp("LessThan", p, e)),
    )
    found = detect_range(both, {1}, {2, 3})
    assert found is not None and found.point_side == "left" and found.kind == "point"
    assert found.ends["right"][0].expr == s and found.ends["right"][1].expr == e
    assert detect_range(cmp("GreaterThanOrEqual", p, s), {1}, {2, 3}) is None


def test_dataframe_api_joins_are_rewritten_too(cs, views):
    points, intervals = views.table("rj_points"), views.table("rj_intervals")
    built = points.join(
        intervals, (points.p >= intervals.s) & (points.p <= intervals.e), "left"
    ).select("pid", "iid")
    got = cs.dataframe(built)
    assert_same_rows(got.collect(), built.collect())
    assert "range_join APPLIED" in cs.explain(got), cs.explain(got)


def test_a_repeated_query_probes_the_index_it_built(views, tmp_path):
    cs = criss.session(views, home=tmp_path, range_join_method="index", **RELAXED, **NO_CACHING)
    query = "select pid, iid from rj_points join rj_intervals on p between s and e"
    for _ in range(2):
        _check(cs, views, query)
    counters = cs.report()["counters"]
    assert counters["range_indexes_built"] == 1
    assert counters["range_indexes_reused"] == 1


def test_method_is_an_option_of_the_session_not_read_at_query_time(views, tmp_path):
    # the cost model buckets this join (test_point_in_interval_equals_spark) ...
    query = "select pid, iid, p, s, e from rj_points join rj_intervals on p between s and e"
    auto = criss.session(views, home=tmp_path / "auto", **RELAXED, **NO_CACHING)
    assert "bucket equi-join" in _check(auto, views, query)
    # ... the option forces the index, as a keyword ...
    keyword = criss.session(
        views, home=tmp_path / "keyword", range_join_method="index", **RELAXED, **NO_CACHING
    )
    assert keyword.options.range_join_method == "index"
    assert "range index" in _check(keyword, views, query)
    # ... or as a SparkConf key set before the session is created; a session created
    # before it was set keeps its own choice
    views.conf.set("spark.criss.range.join.method", "index")
    try:
        conf = criss.session(views, home=tmp_path / "conf", **RELAXED, **NO_CACHING)
        assert "bucket equi-join" in _check(auto, views, query)
    finally:
        views.conf.unset("spark.criss.range.join.method")
    assert conf.options.range_join_method == "index"
    assert "range index" in _check(conf, views, query)
