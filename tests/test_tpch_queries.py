"""The 22 TPC-H queries, their qgen parameters and the v60/v30 variants, on real Spark at SF 0.01.

Reference answers are computed with pandas straight from the Parquet files, not copied from a
Spark run, so a wrong template fails here.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from rowcompare import assert_same_rows

from criss.bridge import plan_overlap
from criss.errors import WorkloadError
from criss.workload.streams import salted_tables
from criss.workload.tpch import queries

SF = 0.01
SEEDS = (1, 2, 3)
#: Every table as a derived table that keeps all its rows but is a scan of its own.
DERIVED = salted_tables(7)
#: Bounds on the share of a variant's analyzed plan that also occurs in the original's.
V60_BOUNDS = (0.45, 0.85)
V30_BOUNDS = (0.30, 0.56)
MIN_GAP = 0.1


#: One shuffle partition and no adaptive re-planning: about 15 % faster on SF 0.01 queries.
TINY_DATA_SETTINGS = {"spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false"}


@pytest.fixture(scope="module")
def tiny_spark(tpch):
    """The shared session tuned for tiny data while this module runs, then restored."""
    before = {key: tpch.conf.get(key) for key in TINY_DATA_SETTINGS}
    for key, value in TINY_DATA_SETTINGS.items():
        tpch.conf.set(key, value)
    yield tpch
    for key, value in before.items():
        tpch.conf.set(key, value)


@pytest.fixture(scope="module")
def rows(tiny_spark) -> Callable[[str], list[tuple]]:
    """Run a statement and return its rows; each distinct SQL text runs once per module."""
    done: dict[str, list[tuple]] = {}

    def run(sql: str) -> list[tuple]:
        if sql not in done:
            done[sql] = [tuple(row) for row in tiny_spark.sql(sql).collect()]
        return done[sql]

    return run


def _table(tpch_dir: Path, name: str) -> pd.DataFrame:
    return pq.read_table(tpch_dir / f"{name}.parquet").to_pandas()


def _date(text: str) -> pd.Timestamp:
    return pd.Timestamp(text)


# --- parameters and rendering (no Spark) ------------------------------------------------------


def test_validation_params_follow_the_spec():
    assert queries.validation_params(1) == {"delta": 90}
    assert queries.validation_params(3) == {"segment": "BUILDING", "date": "1995-03-15"}
    assert queries.validation_params(11) == {"nation_name": "GERMANY", "fraction": "0.0001"}
    assert queries.validation_params(11, sf=0.01)["fraction"] == "0.01"
    assert queries.validation_params(16)["size8"] == 9
    assert queries.validation_params(22)["i1"] == "13"


def test_random_params_stay_in_the_spec_ranges():
    rng = random.Random(0)
    for _ in range(200):
        assert 60 <= queries.random_params(1, rng)["delta"] <= 120
        q3 = queries.random_params(3, rng)
        assert q3["segment"] in queries.SEGMENTS and q3["date"].startswith("1995-03-")
        q8 = queries.random_params(8, rng)
        assert queries.NATION_REGION[q8["nation_name"]] == q8["region_name"]
        sizes = [v for k, v in queries.random_params(16, rng).items() if k.startswith("size")]
        assert len(set(sizes)) == 8 and all(1 <= s <= 50 for s in sizes)
        assert 312 <= queries.random_params(18, rng)["quantity"] <= 315
        codes = {int(c) for c in queries.random_params(22, rng).values()}
        assert len(codes) == 7 and all(10 <= c <= 34 for c in codes)


def test_same_seed_same_sql_and_seeds_differ():
    first = [s.sql for s in queries.all_statements(seed=5, sf=SF)]
    assert first == [s.sql for s in queries.all_statements(seed=5, sf=SF)]
    assert len(first) == 66
    for qid in queries.QUERY_IDS:
        texts = {queries.statement(qid, seed=seed).sql for seed in range(1, 7)}
        assert len(texts) > 1, f"Q{qid} renders the same SQL for every seed"


def test_variants_differ_from_the_original_and_each_other():
    for seed in (None, *SEEDS):
        for qid in queries.QUERY_IDS:
            texts = {queries.statement(qid, v, seed=seed, sf=SF).sql for v in queries.VARIANTS}
            assert len(texts) == 3, f"Q{qid} seed {seed}: a variant equals another statement"


def test_every_table_reference_is_a_placeholder():
    """Mapping every table to a marker leaves no bare table name in any FROM or JOIN."""
    marked = {table: f"<<{table}>>" for table in queries.TABLES}
    bare = re.compile(r"(?:\bfrom|\bjoin|,)\s+(" + "|".join(queries.TABLES) + r")\b")
    for qid in queries.QUERY_IDS:
        for variant in queries.VARIANTS:
            sql = queries.statement(qid, variant, seed=3, tables=marked).sql
            assert not bare.search(sql), f"Q{qid} {variant} names a table outside a placeholder"
            assert "{" not in sql and "}" not in sql


def test_bad_requests_raise_workload_errors():
    with pytest.raises(WorkloadError, match="query id"):
        queries.statement(23)
    with pytest.raises(WorkloadError, match="variant"):
        queries.statement(1, "v90")
    with pytest.raises(WorkloadError, match="delta"):
        queries.render(1, {})
    with pytest.raises(WorkloadError, match="tables"):
        queries.render(1, {"delta": 90}, {"lineitems": "x"})
    with pytest.raises(WorkloadError, match="scale factor"):
        queries.validation_params(11, sf=0)


# --- running on Spark -------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("qid", queries.QUERY_IDS)
def test_validation_query_runs_and_returns_rows(rows, qid):
    assert rows(queries.statement(qid, sf=SF).sql), f"Q{qid} returned no rows at SF {SF}"


@pytest.mark.spark
@pytest.mark.parametrize("qid", queries.QUERY_IDS)
def test_variants_run_and_scan_filters_change_no_result(rows, qid):
    """A variant returns what its parameters give in the plain template.

    Checked where an at-scan filter is a semi-join (a subquery); the others repeat a WHERE
    conjunct on the same table verbatim, and running them twice would only cost time.
    """
    for variant in ("v60", "v30"):
        statement = queries.statement(qid, variant, sf=SF)
        got = rows(statement.sql)
        rule = queries.VARIANT_RULES[qid][variant]
        if any("select" in predicate for predicate in rule.at_scan.values()):
            assert_same_rows(got, rows(queries.render(qid, statement.params)))


@pytest.mark.spark
@pytest.mark.parametrize("qid", queries.QUERY_IDS)
def test_random_parameter_statements_run(rows, tiny_spark, qid):
    """Seed 1 runs; later seeds are parsed and analyzed only, which keeps the module fast."""
    first, *later = SEEDS
    rows(queries.statement(qid, seed=first, sf=SF).sql)
    for seed in later:
        tiny_spark.sql(queries.statement(qid, seed=seed, sf=SF).sql)  # analysis is eager


@pytest.mark.spark
@pytest.mark.parametrize("qid", queries.QUERY_IDS)
def test_variant_overlap_v60_above_v30(tpch, qid):
    original = tpch.sql(queries.statement(qid, sf=SF).sql)
    v60, v30 = (
        plan_overlap(original, tpch.sql(queries.statement(qid, v, sf=SF).sql), "analyzed")
        for v in ("v60", "v30")
    )
    assert V60_BOUNDS[0] <= v60 <= V60_BOUNDS[1], f"Q{qid} v60 overlap {v60:.2f}"
    assert V30_BOUNDS[0] <= v30 <= V30_BOUNDS[1], f"Q{qid} v30 overlap {v30:.2f}"
    assert v60 - v30 >= MIN_GAP, f"Q{qid}: v60 {v60:.2f} is not clearly above v30 {v30:.2f}"


@pytest.mark.spark
@pytest.mark.parametrize("qid", queries.QUERY_IDS)
def test_derived_tables_give_the_same_rows(rows, qid):
    substituted = queries.statement(qid, sf=SF, tables=DERIVED).sql
    assert "<> -7" in substituted
    assert_same_rows(rows(substituted), rows(queries.statement(qid, sf=SF).sql))


@pytest.mark.spark
@pytest.mark.parametrize("qid", [7, 21])
def test_scan_filters_compose_with_derived_tables(rows, qid):
    """A v30's at-scan filters wrap the caller's derived tables (nested, aliased, semi-joined)."""
    substituted = queries.statement(qid, "v30", sf=SF, tables=DERIVED).sql
    assert "(select * from (select * from" in substituted
    assert_same_rows(rows(substituted), rows(queries.statement(qid, "v30", sf=SF).sql))


# --- known answers, computed with pandas from the same Parquet files -------------------------


@pytest.mark.spark
def test_q1_matches_pandas(rows, tpch_dir):
    li = _table(tpch_dir, "lineitem")
    li = li[li.l_shipdate <= (_date("1998-12-01") - pd.Timedelta(days=90)).date()]
    li = li.assign(
        disc_price=li.l_extendedprice * (1 - li.l_discount),
        charge=li.l_extendedprice * (1 - li.l_discount) * (1 + li.l_tax),
    )
    expected = (
        li.groupby(["l_returnflag", "l_linestatus"])
        .agg(
            q=("l_quantity", "sum"),
            base=("l_extendedprice", "sum"),
            disc=("disc_price", "sum"),
            charge=("charge", "sum"),
            n=("l_quantity", "size"),
        )
        .reset_index()
    )
    got = rows(queries.statement(1, sf=SF).sql)
    assert len(got) == 4
    picked = [(r[0], r[1], r[2], r[3], r[4], r[5], r[9]) for r in got]
    assert picked == [tuple(r) for r in expected.itertuples(index=False)]


@pytest.mark.spark
def test_q4_matches_pandas(rows, tpch_dir):
    orders, li = _table(tpch_dir, "orders"), _table(tpch_dir, "lineitem")
    start, end = _date("1993-07-01").date(), _date("1993-10-01").date()
    late = set(li.l_orderkey[li.l_commitdate < li.l_receiptdate])
    window = orders[(orders.o_orderdate >= start) & (orders.o_orderdate < end)]
    counts = window[window.o_orderkey.isin(late)].groupby("o_orderpriority").size()
    assert rows(queries.statement(4, sf=SF).sql) == list(counts.items())


@pytest.mark.spark
def test_q6_matches_pandas(rows, tpch_dir):
    li = _table(tpch_dir, "lineitem")
    keep = (
        (li.l_shipdate >= _date("1994-01-01").date())
        & (li.l_shipdate < _date("1995-01-01").date())
        & (li.l_discount >= Decimal("0.05"))
        & (li.l_discount <= Decimal("0.07"))
        & (li.l_quantity < 24)
    )
    expected = (li.l_extendedprice[keep] * li.l_discount[keep]).sum()
    assert rows(queries.statement(6, sf=SF).sql) == [(expected,)]


@pytest.mark.spark
def test_q13_matches_pandas(rows, tpch_dir):
    customer, orders = _table(tpch_dir, "customer"), _table(tpch_dir, "orders")
    kept = orders[~orders.o_comment.str.contains("special.*requests", regex=True)]
    per_customer = kept.groupby("o_custkey").size().reindex(customer.c_custkey, fill_value=0)
    custdist = per_customer.value_counts()
    expected = sorted(custdist.items(), key=lambda kv: (-kv[1], -kv[0]))
    assert rows(queries.statement(13, sf=SF).sql) == expected


@pytest.mark.spark
def test_q14_matches_pandas(rows, tpch_dir):
    li, part = _table(tpch_dir, "lineitem"), _table(tpch_dir, "part")
    li = li[
        (li.l_shipdate >= _date("1995-09-01").date()) & (li.l_shipdate < _date("1995-10-01").date())
    ]
    joined = li.merge(part, left_on="l_partkey", right_on="p_partkey")
    volume = (joined.l_extendedprice * (1 - joined.l_discount)).astype(float)
    promo = volume[joined.p_type.str.startswith("PROMO")].sum()
    [(promo_revenue,)] = rows(queries.statement(14, sf=SF).sql)
    # Spark rounds the decimal quotient to 6 places.
    assert float(promo_revenue) == pytest.approx(100.0 * promo / volume.sum(), abs=1e-6)
