"""Copies of one table (criss.qtree.rewrite.copied_relation): an operator whose rows are one
table's, filtered, projected, or with columns looked up in tables Spark broadcasts, is
not worth caching while it keeps most of the table's rows: reading it back scans about as
many rows as the table, and saves only the lookups (TPC-H Q11's and Q2's partsupp ⋈
supplier: 800,000 rows, 7.6 MB at SF 1, written and read back without any query running
faster)."""

from __future__ import annotations

from rowcompare import assert_same_rows

import criss
from criss.policies import get_policy
from criss.policies.decisions import CACHE, SKIP, CachingRules, QueryFacts, decide_caching
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import copied_relation, copied_relations, copy_kind
from criss.qtree.tree import NodeStats

MB = 1 << 20
BROADCAST = 10 * MB


def _relation(path, size):
    return PlanNode(
        "LogicalRelation", {}, path=path, fingerprint=f"rel{path}", relation={"bytes": size}
    )


def _node(op, path, *children):
    return PlanNode(op, {}, tuple(children), path, fingerprint=op.lower() + "".join(map(str, path)))


def _lookup(small_bytes: int) -> PlanNode:
    """Aggregate(Project(Join(Filter(partsupp), Project(supplier)))): the result is the
    Aggregate; the Project under it holds partsupp's rows with a column of supplier's."""
    partsupp = _node("Filter", (0, 0, 0), _relation((0, 0, 0, 0), 120 * MB))
    supplier = _node("Project", (0, 0, 1), _relation((0, 0, 1, 0), small_bytes))
    join = _node("Join", (0, 0), partsupp, supplier)
    return _node("Aggregate", (), _node("Project", (0,), join))


def test_the_relation_a_copy_copies():
    tree = _lookup(MB)
    project, join = tree.children[0], tree.children[0].children[0]
    partsupp = join.children[0].children[0]
    assert copied_relation(project, BROADCAST) is partsupp
    assert copied_relation(join, BROADCAST) is partsupp
    # a table copy: its one relation, whatever the threshold
    assert copied_relation(join.children[0], -1) is partsupp
    assert copied_relation(join.children[1], -1) is join.children[1].children[0]
    # the other input too large to broadcast (a shuffle join caching would save), or
    # broadcasting off: not a copy
    assert copied_relation(_lookup(20 * MB).children[0], BROADCAST) is None
    assert copied_relation(project, -1) is None
    # an aggregate does more than look columns up; a relation is not a copy of itself
    assert copied_relation(tree, BROADCAST) is None
    assert copied_relation(partsupp, BROADCAST) is None
    unknown = PlanNode("LogicalRelation", {}, path=(0, 0, 1, 0), fingerprint="local")
    opaque = _node("Join", (0, 0), join.children[0], _node("Project", (0, 0, 1), unknown))
    assert copied_relation(opaque, BROADCAST) is None  # its size unknown: not small


def _stats(fp, ref, texec=None, size=None, rows=None):
    return NodeStats(fp, "op", ref, 0.0, 100.0, texec, size, rows, None)


def _rules() -> CachingRules:
    return CachingRules(
        policy=get_policy("criss"), disk_bandwidth=100e6, start_time=0.0, scan_rate=64e6
    )


def _decide(tree: PlanNode, stats, table_rows) -> dict:
    return decide_caching(tree, QueryFacts(stats, set(), table_rows=table_rows), _rules())


def test_a_measured_widened_copy_keeping_most_rows_is_not_cached_and_one_keeping_few_is():
    tree = _lookup(MB)
    stats = {n.fingerprint: _stats(n.fingerprint, 3) for n in tree.walk()}
    # the result and the join measured cheap: the Project is its branch's only candidate
    stats["aggregate"] = _stats("aggregate", 3, texec=0.01, size=MB, rows=10)
    stats["join00"] = _stats("join00", 3, texec=0.01, size=MB, rows=800)
    stats["project0"] = _stats("project0", 3, texec=2.0, size=MB, rows=800)
    copies = {(0,): 1000, (0, 0): 1000}
    most = _decide(tree, stats, copies)[(0,)]
    assert most.action == SKIP and most.reason == "widened_copy_most_rows"
    assert most.numbers == {"rows": 800, "table_rows": 1000}

    stats["project0"] = _stats("project0", 3, texec=2.0, size=MB, rows=40)
    few = _decide(tree, stats, copies)[(0,)]
    assert few.action == CACHE and few.reason == "largest_benefit"
    # not a copy (the match phase found none): the benefit model alone decides
    stats["project0"] = _stats("project0", 3, texec=2.0, size=MB, rows=800)
    assert _decide(tree, stats, {})[(0,)].reason == "largest_benefit"


def test_an_unmeasured_widened_copy_waits_for_its_rows_instead_of_being_cached_to_measure():
    tree = _lookup(MB)
    stats = {n.fingerprint: _stats(n.fingerprint, 3) for n in tree.walk()}
    got = _decide(tree, stats, {(0,): 1000, (0, 0): 1000})
    assert got[(0,)].reason == "widened_copy_unmeasured" and got[(0,)].action == SKIP
    assert _decide(tree, stats, {})[(0,)].reason in ("collect_statistics", "outranked_unmeasured")


PARTS_OF_A_NATION = (
    "select ps_partkey, sum(ps_supplycost * ps_availqty) as value "
    "from partsupp, supplier, nation "
    "where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = '{}' "
    "group by ps_partkey"
)


def _measured_projects_of_all_partsupp(cs) -> list[str]:
    """Reasons decided for the measured Projects holding all of partsupp's 8,000 rows: of
    its scan (a table copy), and over partsupp ⋈ supplier (the operator TPC-H Q11 cached
    for nothing)."""
    return [
        o.decision.reason
        for o in cs.last_record.operators
        if o.op == "Project" and o.stats is not None and o.stats.rows == 8000
    ]


def test_partsupp_with_its_suppliers_nation_is_measured_but_never_cached(tpch, tmp_path):
    # lifting off: a lift of the aggregate, where its measured Texec makes one pay (a slow
    # machine), serves the fourth statement whole, and the Projects are never decided on
    options = {"min_texec": 0.0, "lift_aggregates": "off"}
    with criss.session(tpch, home=str(tmp_path / "h"), **options) as cs:
        for nation in ("GERMANY", "KENYA", "PERU", "CHINA"):
            rows = cs.sql(PARTS_OF_A_NATION.format(nation)).collect()
            assert_same_rows(rows, tpch.sql(PARTS_OF_A_NATION.format(nation)).collect())
            cs.settle_harvests()
        reasons = _measured_projects_of_all_partsupp(cs)
        assert "widened_copy_most_rows" in reasons
        assert set(reasons) <= {"widened_copy_most_rows", "table_copy_most_rows"}
        cached = [o for o in cs.last_record.operators if o.cached and o.op != "Aggregate"]
        assert not [o for o in cached if o.stats is not None and o.stats.rows == 8000]


def test_with_broadcasting_off_the_same_operator_is_left_to_the_benefit_model(tpch, tmp_path):
    """A shuffle join is work a cached copy saves: with broadcasting off the Project over
    partsupp ⋈ supplier is no copy, and the benefit model caches it (and serves it)."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = tpch.conf.get(key)
    tpch.conf.set(key, "-1")
    reasons = []
    try:
        with criss.session(tpch, home=str(tmp_path / "h"), min_texec=0.0) as cs:
            for nation in ("GERMANY", "KENYA", "PERU"):
                rows = cs.sql(PARTS_OF_A_NATION.format(nation)).collect()
                assert_same_rows(rows, tpch.sql(PARTS_OF_A_NATION.format(nation)).collect())
                cs.settle_harvests()
                reasons += _measured_projects_of_all_partsupp(cs)
    finally:
        tpch.conf.set(key, before)
    assert "widened_copy_most_rows" not in reasons
    assert "cached_entry" in reasons  # cached by the second query, served to the third


def _union_of_copies() -> PlanNode:
    """Aggregate(Union(Project(Filter(sales)), Project(returns))): q5's shape, where the
    Union holds the rows of two tables, filtered and projected."""
    sales = _node("Project", (0, 0), _node("Filter", (0, 0, 0), _relation((0, 0, 0, 0), 90 * MB)))
    returns = _node("Project", (0, 1), _relation((0, 1, 0), 10 * MB))
    return _node("Aggregate", (), _node("Union", (0,), sales, returns))


def test_a_union_of_table_copies_copies_each_of_their_tables():
    tree = _union_of_copies()
    union = tree.children[0]
    sales, returns = union.children[0].children[0].children[0], union.children[1].children[0]
    assert copied_relations(union, BROADCAST) == (sales, returns)
    assert copied_relations(_node("Project", (), union), BROADCAST) == (sales, returns)
    assert copy_kind(union) == "union_copy" and copy_kind(union.children[0]) == "table_copy"
    # one input aggregates: the union computes more than copies
    summed = _node("Union", (0,), union.children[0], _node("Aggregate", (0, 1), returns))
    assert copied_relations(summed, BROADCAST) is None
    assert copied_relations(tree, BROADCAST) is None


def test_a_measured_union_of_copies_keeping_most_rows_is_not_cached_and_one_keeping_few_is():
    tree = _union_of_copies()
    stats = {n.fingerprint: _stats(n.fingerprint, 3) for n in tree.walk()}
    stats["aggregate"] = _stats("aggregate", 3, texec=0.01, size=MB, rows=10)
    for project in ("project00", "project01"):
        stats[project] = _stats(project, 3, texec=0.01, size=MB, rows=500)
    stats["union0"] = _stats("union0", 3, texec=2.0, size=MB, rows=900)
    copies = {(0,): 1000, (0, 0): 900, (0, 1): 100}
    most = _decide(tree, stats, copies)[(0,)]
    assert most.action == SKIP and most.reason == "union_copy_most_rows"
    assert most.numbers == {"rows": 900, "table_rows": 1000}
    stats["union0"] = _stats("union0", 3, texec=2.0, size=MB, rows=40)
    few = _decide(tree, stats, copies)[(0,)]
    assert few.action == CACHE and few.reason == "largest_benefit"
    unmeasured = {n.fingerprint: _stats(n.fingerprint, 3) for n in tree.walk()}
    waits = _decide(tree, unmeasured, {(0,): None, (0, 0): None, (0, 1): None})[(0,)]
    assert waits.action == SKIP and waits.reason == "union_copy_unmeasured"


ORDERS_AND_LINES_OF_A_PRIORITY = (
    "select u.k % 7 as g, count(*) as n, sum(u.v) as total "
    "from (select l_orderkey as k, l_extendedprice as v from lineitem "
    "      union all "
    "      select o_orderkey as k, o_totalprice as v from orders) u "
    "join orders o on u.k = o.o_orderkey "
    "where o.o_orderpriority = '{}' "
    "group by u.k % 7"
)


def test_a_union_of_lineitem_and_orders_is_never_cached_and_its_inputs_are_judged(tpch, tmp_path):
    """The union of two tables' columns under a join (TPC-DS q5's shape) recurs in every
    statement: Spark measures no rows of it, so it is judged a copy waiting for them and
    never written, and its inputs, each a table copy, are measured and judged instead."""
    options = {"min_texec": 0.0, "lift_aggregates": "off"}
    reasons = []
    with criss.session(tpch, home=str(tmp_path / "h"), **options) as cs:
        for priority in ("1-URGENT", "2-HIGH", "3-MEDIUM", "5-LOW"):
            text = ORDERS_AND_LINES_OF_A_PRIORITY.format(priority)
            assert_same_rows(cs.sql(text).collect(), tpch.sql(text).collect())
            cs.settle_harvests()
            operators = cs.last_record.operators
            unions = [o for o in operators if o.op == "Union"]
            assert unions and not [o for o in unions if o.cached]
            reasons += [o.decision.reason for o in unions]
            # its inputs, each a table copy, are measured and judged instead
            under = [o for o in operators if o.path[:-1] == unions[0].path]
            assert {o.decision.reason for o in under} <= {
                "table_copy_unmeasured",
                "table_copy_most_rows",
            }
    assert set(reasons) == {"union_copy_unmeasured"}
