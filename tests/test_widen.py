"""Widening on real Spark: a selection whose conditions drift is copied under the
conditions its statements share, and later statements are filtered from the copy.

Rows are compared with plain Spark's for every statement; counters prove that the copy was
made once (by the user's action, no job of Criss's own) and served the statements after it
by filter subsumption. The table holds NULLs, NaN and boundary values.
"""

from __future__ import annotations

import hashlib
import importlib

import pytest
from rowcompare import assert_same_rows
from sparkjobs import jobs_in

import criss
from criss.planner.widen import selection_texec
from criss.qtree.plan import PlanNode
from criss.qtree.predicates import Atom
from criss.qtree.subsume import FILTER_SUBSUMPTION, Shape
from criss.qtree.tree import QTree
from criss.qtree.widen import shared_selection

NAN = float("nan")
FILTERED = f"rewrites_{FILTER_SUBSUMPTION.replace('-', '_')}"
widen = importlib.import_module("criss.planner.widen")  # the package exports widen()


def _through(cs, spark, sql):
    planned = cs.sql(sql)
    assert_same_rows(planned.collect(), spark.sql(sql).collect())
    return cs.last_query_summary()


# --- the rule, pure ---------------------------------------------------------------------------

MODE = Atom.one_of("mode", "string", ["AIR", "MAIL"])
NOT_NULL = Atom.not_null("qty")


def _rows(*atoms, columns=("key", "qty")):
    return Shape("rows", frozenset(atoms), columns)


def _qty(value):
    return Atom.compare("qty", ">=", "integer", value)


def test_the_conditions_every_earlier_statement_shares_are_kept():
    """Two earlier statements of the selection under other quantities: the ship mode they
    all state is kept, the quantity column comes out for the residual, and its NOT NULL
    (Catalyst's, inferred from the quantity conditions) is dropped with them."""
    earlier = [("b", _rows(MODE, NOT_NULL, _qty("2"))), ("a", _rows(MODE, NOT_NULL, _qty("3")))]
    widening = shared_selection(_rows(MODE, NOT_NULL, _qty("1")), earlier)
    assert widening is not None
    assert widening.shared == {MODE}  # the quantities' NOT NULL goes with them
    assert widening.columns == ("qty",)
    assert widening.sibling == "b"  # the most recent measured the selection


@pytest.mark.parametrize(
    ("name", "earlier"),
    [
        ("one earlier statement: a shared value may be chance", [("a", _rows(MODE, _qty("2")))]),
        (
            "only NOT NULLs shared: the copy would be the table",
            [("b", _rows(NOT_NULL, _qty("2"))), ("a", _rows(NOT_NULL, _qty("3")))],
        ),
        (
            "other columns: another selection of the table, no evidence",
            [
                ("b", _rows(MODE, _qty("2"), columns=("qty",))),
                ("a", _rows(MODE, _qty("3"), columns=("qty",))),
            ],
        ),
        (
            "the same conditions: an exact repeat, no widening to make",
            [("b", _rows(MODE, NOT_NULL, _qty("1"))), ("a", _rows(MODE, NOT_NULL, _qty("1")))],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_no_widening_without_conditions_shared_by_two_earlier_statements(name, earlier):
    assert shared_selection(_rows(MODE, NOT_NULL, _qty("1")), earlier) is None


def test_a_statement_that_varies_the_kept_condition_narrows_what_is_kept():
    """The third earlier statement chose another ship mode: only the conditions all three
    share stay (none beyond NOT NULL here: no widening)."""
    other = Atom.one_of("mode", "string", ["RAIL"])
    earlier = [("c", _rows(other, NOT_NULL, _qty("4"))), ("b", _rows(MODE, NOT_NULL, _qty("2")))]
    assert shared_selection(_rows(MODE, NOT_NULL, _qty("1")), earlier) is None
    hour = Atom.compare("hour", "<", "integer", "9")
    earlier = [(fp, _rows(*shape.atoms, hour)) for fp, shape in earlier]
    widening = shared_selection(_rows(MODE, NOT_NULL, _qty("1"), hour), earlier)
    assert widening.shared == {hour}
    assert widening.columns == ("mode", "qty")


# --- on real Spark --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def drift_table(spark, tmp_path_factory):
    """w(x int, f double, s string, h string): NULLs in each column, NaN among f."""
    rows = [
        (
            None if i % 13 == 0 else i % 20,
            NAN if i % 17 == 0 else (None if i % 19 == 0 else i / 7 - 3),
            None if i % 11 == 0 else "abcdefg"[i % 7],
            None if i % 23 == 0 else "pq"[i % 2],
        )
        for i in range(80)
    ]
    path = str(tmp_path_factory.mktemp("widen") / "w")
    spark.createDataFrame(rows, "x int, f double, s string, h string").coalesce(1).write.parquet(
        path
    )
    spark.read.parquet(path).createOrReplaceTempView("widen_t")
    return "widen_t"


def _selection(condition: str) -> str:
    return f"select x, f, s from widen_t where h = 'p' and ({condition})"


@pytest.mark.spark
def test_a_drifting_selection_is_widened_once_then_filtered_from_the_copy(
    spark, drift_table, tmp_path
):
    """Third statement of ``h = 'p'`` under another range of ``x``: the selection is
    copied under ``h = 'p'`` by the user's action (no job of Criss's own) and serves that
    statement; later ones, NaN, NULLs, boundaries and an empty result among them, are
    filtered from the copy and not widened again."""
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    for condition in ("x between 1 and 3", "x between 5 and 7"):
        assert _through(cs, spark, _selection(condition)).get("selections_widened", 0) == 0
    planned = {}
    third = _selection("x between 10 and 14")
    jobs = jobs_in(spark, "widen", lambda: planned.update(df=cs.sql(third)))
    assert jobs == 0
    assert_same_rows(planned["df"].collect(), spark.sql(third).collect())
    summary = cs.last_query_summary()
    assert summary.get("selections_widened", 0) == 1, cs.explain(planned["df"])
    assert summary.get(FILTERED, 0) == 1
    said = cs.explain(planned["df"])
    assert "widening of selection" in said and ": widened: " in said, said
    later = (
        "x >= 19",
        "x > 100",
        "isnan(f) or f < -2",
        "x is null",
        "f is null or x < 2",
        "x in (0, 7)",
    )
    for condition in later:
        planned = cs.sql(_selection(condition))
        assert_same_rows(planned.collect(), spark.sql(_selection(condition)).collect())
        summary = cs.last_query_summary()
        assert summary.get("selections_widened", 0) == 0, condition
        assert summary.get(FILTERED, 0) == 1, (condition, cs.explain(planned))
    # a statement that leaves the shared condition is not served from the copy
    summary = _through(cs, spark, "select x, f, s from widen_t where h = 'q' and x > 2")
    assert summary.get(FILTERED, 0) == 0
    cs.close()


@pytest.mark.spark
def test_a_copy_too_large_to_pay_is_dropped_and_not_tried_again(
    spark, drift_table, tmp_path, monkeypatch
):
    """The copy serves the statement whose action computed it, is then dropped for its
    rows, and no later statement widens the selection again."""
    monkeypatch.setattr(widen, "row_bound", lambda texec, rules, row_bytes: 3)
    # an estimate that misses: the copy only shows its rows once computed
    monkeypatch.setattr(
        widen, "estimated_copy_rows", lambda node, widening, shape, rows: (rows, 1.0)
    )
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0)
    forced = widen.decide_widening

    def paying(facts):  # the model's verdict aside: this test is about the row bound
        decision = forced(facts)
        return widen.Decision(widen.CACHE, "widen_pays", decision.numbers, decision.source)

    monkeypatch.setattr(widen, "decide_widening", paying)
    widened = []
    for low in (1, 5, 10, 15, 18):
        condition = f"x between {low} and {low + 1}"
        widened.append(_through(cs, spark, _selection(condition)).get("selections_widened", 0))
    cs.settle_harvests()
    assert widened == [0, 0, 1, 0, 0]
    refused = [k for k in cs.qtree.meta_items() if k.startswith(widen.WIDEN_REFUSED)]
    assert len(refused) == 1, cs.qtree.meta_items()
    said = cs.explain(cs.sql(_selection("x = 4")))
    assert "not widened: refused before" in said, said
    cs.close()


@pytest.mark.spark
def test_a_copy_estimated_too_large_is_never_built(spark, drift_table, tmp_path, monkeypatch):
    """The conditions the copy would drop keep a tenth of ``x``'s range by the file's
    column statistics: the copy is estimated at ten times the earlier statement's rows,
    more than may be read back, and is not built (no refusal is stored: the estimate is
    made again, from footers read once)."""
    monkeypatch.setattr(widen, "row_bound", lambda texec, rules, row_bytes: 10)
    forced = widen.decide_widening
    monkeypatch.setattr(
        widen,
        "decide_widening",
        lambda facts: widen.Decision(widen.CACHE, "widen_pays", forced(facts).numbers),
    )
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0)
    for low in (1, 5):
        _through(cs, spark, _selection(f"x between {low} and {low + 1}"))
    third = _selection("x between 10 and 11")
    planned = cs.sql(third)
    assert_same_rows(planned.collect(), spark.sql(third).collect())
    assert cs.last_query_summary().get("selections_widened", 0) == 0
    said = cs.explain(planned)
    assert "not widened: the copy would hold ~" in said, said
    (weighed,) = [lift for lift in cs.record(planned).lifts if lift["kind"] == "selection"]
    assert weighed["reason"] == "widen_too_large"
    numbers = weighed["numbers"]
    assert numbers["kept_share"] == pytest.approx(2 / 20)  # x between 5 and 6 of 0..19
    copy = spark.sql("select count(*) from widen_t where h = 'p'").first()[0]
    assert copy / 2 <= numbers["rows"] <= copy * 2, (numbers, copy)
    assert not [k for k in cs.qtree.meta_items() if k.startswith(widen.WIDEN_REFUSED)]
    cs.close()


@pytest.mark.spark
def test_tpch_q19_is_widened_and_its_later_statements_served(tpch, tmp_path):
    """TPC-H Q19 under five parameter draws (SF 0.01): its lineitem and part selections
    share their ship modes, ship instruction and containers; from the third statement on
    every statement's rows are filtered from the copies, equal to plain Spark's."""
    from criss.workload.tpch.queries import statement

    cs = criss.session(tpch, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    distinct = list(dict.fromkeys(statement(19, seed=s, sf=0.01).sql for s in range(1, 12)))
    for position, sql in enumerate(distinct[:5]):
        planned = cs.sql(sql)
        assert_same_rows(planned.collect(), tpch.sql(sql).collect())
        summary = cs.last_query_summary()
        said = f"statement {position}: {cs.explain(planned)}"
        assert summary.get("selections_widened", 0) == (2 if position == 2 else 0), said
        assert summary.get(FILTERED, 0) == (2 if position >= 2 else 0), said
    cs.close()


# --- the selection's Texec, from what its statements measured ------------------------------


def _node(op: str, *children, name: str = "") -> PlanNode:
    fingerprint = hashlib.sha256((op + name + "".join(c.fingerprint for c in children)).encode())
    return PlanNode(op, {}, children, fingerprint=fingerprint.hexdigest()[:32])


@pytest.fixture
def join_of_two_selections(tmp_path):
    """Join(streamed selection of a fact table, broadcast selection of a dimension)."""
    fact = _node("Project", _node("Filter", _node("Relation", name="fact")))
    dimension = _node("Project", _node("Filter", _node("Relation", name="dimension")))
    join = _node("Join", fact, dimension)
    qtree = QTree(tmp_path / "catalog.db")
    qtree.observe(_node("Aggregate", join))
    yield qtree, fact.fingerprint, dimension.fingerprint, join.fingerprint
    qtree.close()


def test_a_selection_measured_in_its_own_stage_keeps_its_texec(join_of_two_selections):
    qtree, _, dimension, _ = join_of_two_selections
    qtree.record_stats(dimension, texec=0.4, size_bytes=100, rows=10)
    assert selection_texec(qtree, dimension) == pytest.approx(0.4)


def test_a_selection_run_in_the_stage_above_gets_that_stage_less_the_other_inputs(
    join_of_two_selections,
):
    """Spark streams the fact selection into the join: its own Texec reads 0, the join's
    stage holds it and the join's work, less the broadcast dimension's own stage."""
    qtree, fact, dimension, join = join_of_two_selections
    qtree.record_stats(fact, texec=0.0, size_bytes=100, rows=10)
    qtree.record_stats(join, texec=2.3, size_bytes=100, rows=10)
    assert selection_texec(qtree, fact) is None  # the dimension's share is not known
    qtree.record_stats(dimension, texec=0.4, size_bytes=100, rows=10)
    assert selection_texec(qtree, fact) == pytest.approx(1.9)


@pytest.mark.spark
def test_a_copy_of_files_since_rewritten_serves_nothing(spark, tmp_path):
    """The table's files are rewritten after its selection was widened: the next statement
    gets plain Spark's rows over the new files, none from the copy of the old ones."""
    path = str(tmp_path / "stale")

    def write(offset: int) -> None:
        rows = [(i % 20 + offset, float(i), "pq"[i % 2]) for i in range(60)]
        spark.createDataFrame(rows, "x int, f double, h string").coalesce(1).write.mode(
            "overwrite"
        ).parquet(path)
        spark.read.parquet(path).createOrReplaceTempView("stale_t")

    def selection(low: int) -> str:
        return f"select x, f from stale_t where h = 'p' and x between {low} and {low + 2}"

    write(0)
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0, lift_aggregates="eager")
    for low in (1, 5):
        _through(cs, spark, selection(low))
    assert _through(cs, spark, selection(10)).get("selections_widened", 0) == 1
    assert _through(cs, spark, selection(14)).get(FILTERED, 0) == 1  # the copy serves
    write(3)
    summary = _through(cs, spark, selection(14))
    assert summary.get(FILTERED, 0) == 0 and summary.get("operators_reused", 0) == 0
    cs.close()
