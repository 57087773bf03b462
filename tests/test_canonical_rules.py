"""Each canonical rule and the row signatures, on hand-built Catalyst JSON (no Spark).

The plans are written the way ``canonicalized().toJSON()`` spells them: flat pre-order
lists of expression nodes, attribute ids already positions in the operator's input. The
end-to-end proofs (same fingerprints across JVMs and spellings) are in
``test_fingerprints.py`` and ``test_golden_fingerprints.py``; these pin what each rule
does alone, so a change to one shows up here by name.
"""

from __future__ import annotations

from typing import Any

import pytest

from criss.qtree import canonicalize, fingerprint_tree
from criss.qtree.canonical import (
    ALIAS,
    ATTRIBUTE,
    ORDER_BOUND,
    PYTHON_UDF,
    RULES,
    clean_args,
)
from criss.qtree.lineage import row_signature
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import (
    Relative,
    project_subset,
    relaxed_columns,
    relaxed_key,
    result_node,
    storable,
    top_rows,
    top_rows_input,
)

X = "org.apache.spark.sql.catalyst.expressions."
INNER = {"object": "org.apache.spark.sql.catalyst.plans.Inner$"}
LEFT_OUTER = {"object": "org.apache.spark.sql.catalyst.plans.LeftOuter$"}


# --- Catalyst JSON builders ------------------------------------------------------------------


def attr(position: int, jvm: str = "jvm-a") -> list[dict[str, Any]]:
    return [
        {
            "class": ATTRIBUTE,
            "num-children": 0,
            "name": "none",
            "dataType": "long",
            "nullable": True,
            "metadata": {},
            "exprId": {"product-class": X + "ExprId", "id": position, "jvmId": jvm},
            "qualifier": ["spark_catalog", "default", "t"],
        }
    ]


def lit(value: int) -> list[dict[str, Any]]:
    return [{"class": X + "Literal", "num-children": 0, "value": str(value), "dataType": "long"}]


def binary(name: str, left: list, right: list) -> list[dict[str, Any]]:
    return [{"class": X + name, "num-children": 2, "left": 0, "right": 1}, *left, *right]


def alias(child: list, position: int, name: str = "x") -> list[dict[str, Any]]:
    head = {
        "class": ALIAS,
        "num-children": 1,
        "child": 0,
        "name": name,
        "exprId": {"product-class": X + "ExprId", "id": position, "jvmId": "jvm-a"},
        "qualifier": [],
    }
    return [head, *child]


def relation(name: str, width: int, files: tuple = (("f.parquet", 100, 1.0),)) -> PlanNode:
    return PlanNode(
        "LogicalRelation",
        {"output": [attr(i) for i in range(width)], "isStreaming": False},
        relation={"format": "parquet", "name": name, "files": [list(f) for f in files]},
    )


def project(child: PlanNode, *columns: list) -> PlanNode:
    return PlanNode("Project", {"projectList": list(columns), "child": 0}, (child,))


def filter_(child: PlanNode, condition: list) -> PlanNode:
    return PlanNode("Filter", {"condition": condition, "child": 0}, (child,))


def join(left: PlanNode, right: PlanNode, condition: list, kind: dict = INNER) -> PlanNode:
    args = {"left": 0, "right": 1, "joinType": kind, "condition": condition, "hint": None}
    return PlanNode("Join", args, (left, right))


def with_paths(node: PlanNode, path: tuple[int, ...] = ()) -> PlanNode:
    children = tuple(with_paths(c, path + (i,)) for i, c in enumerate(node.children))
    return node.with_(path=path, children=children)


def canonical(node: PlanNode) -> PlanNode:
    return fingerprint_tree(canonicalize(with_paths(node), RULES))


def fingerprint(node: PlanNode) -> str:
    return canonical(node).fingerprint


# --- rules over raw JSON --------------------------------------------------------------------


def test_clean_args_drops_jvm_ids_and_qualifiers_at_any_depth():
    node = project(relation("t", 2), attr(0, jvm="jvm-a"))
    stripped = clean_args(node)
    text = repr(stripped.args)
    assert "jvm-a" not in text and "qualifier" not in text
    assert "jvmId" in repr(node.args), "the rule must not change its input"
    # two JVMs' spellings of one operator get one fingerprint
    other = project(relation("t", 2), attr(0, jvm="jvm-b"))
    assert fingerprint(node) == fingerprint(other)


def test_a_python_udf_is_uncacheable_unless_allow_listed():
    udf = [{"class": PYTHON_UDF, "num-children": 1, "name": "score", "children": [0]}, *attr(0)]
    node = project(relation("t", 1), alias(udf, 0))
    assert clean_args(node).uncacheable == "Python UDF 'score' is not allow-listed"
    assert clean_args(node, ["score"]).uncacheable is None


def test_one_walk_strips_noise_and_marks_lossy_fields_before_python_udfs():
    udf = [{"class": PYTHON_UDF, "num-children": 1, "name": "score", "children": [0]}, *attr(0)]
    scala = [{"class": X + "ScalaUDF", "num-children": 1, "function": None}, *attr(1)]
    plain = project(relation("t", 2), alias(udf, 0))
    lossy = project(relation("t", 2), alias(udf, 0), alias(scala, 1, "y"))
    for node in (plain, lossy):
        assert "jvmId" not in repr(clean_args(node).args)
        assert "jvmId" in repr(node.args), "the rule must not change its input"
    omitted = "Catalyst's plan JSON omits ScalaUDF.function"
    assert clean_args(lossy).uncacheable == omitted
    assert clean_args(lossy, ["score"]).uncacheable == omitted
    assert clean_args(plain).uncacheable == "Python UDF 'score' is not allow-listed"
    assert clean_args(plain, ["score"]).uncacheable is None
    # a join's null hint is benign; an operator already refused keeps its reason
    assert clean_args(join(relation("a", 1), relation("b", 1), lit(1))).uncacheable is None
    refused = plain.with_(uncacheable="refused")
    assert clean_args(refused).uncacheable == "refused"


# --- rules over expressions -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["EqualTo", "Add", "Multiply", "And", "Or", "EqualNullSafe"])
def test_commutative_operands_are_ordered(name):
    def plan(left, right):
        return filter_(relation("t", 2), binary(name, left, right))

    assert fingerprint(plan(attr(0), attr(1))) == fingerprint(plan(attr(1), attr(0)))


def test_non_commutative_operands_keep_their_order():
    def plan(left, right):
        return filter_(relation("t", 2), binary("Subtract", left, right))

    assert fingerprint(plan(attr(0), attr(1))) != fingerprint(plan(attr(1), attr(0)))


def test_a_comparison_and_its_mirror_are_one_comparison():
    a_gt_1 = filter_(relation("t", 1), binary("GreaterThan", attr(0), lit(1)))
    one_lt_a = filter_(relation("t", 1), binary("LessThan", lit(1), attr(0)))
    a_lt_1 = filter_(relation("t", 1), binary("LessThan", attr(0), lit(1)))
    assert fingerprint(a_gt_1) == fingerprint(one_lt_a)
    assert fingerprint(a_gt_1) != fingerprint(a_lt_1)


def test_an_alias_of_a_column_is_the_column_and_alias_ids_do_not_count():
    renamed = project(relation("t", 2), alias(attr(0), 7, "renamed"), attr(1))
    plain = project(relation("t", 2), attr(0), attr(1))
    assert fingerprint(renamed) == fingerprint(plain)
    # a computed alias keeps its name but not its Catalyst-numbered id
    computed = [binary("Add", attr(0), lit(1))]
    first = project(relation("t", 1), alias(computed[0], 3, "p"))
    second = project(relation("t", 1), alias(computed[0], 9, "p"))
    assert fingerprint(first) == fingerprint(second)


# --- rules over operators ---------------------------------------------------------------------


def test_a_file_relation_is_identified_by_its_file_listing():
    before = relation("t", 1, files=(("part-0.parquet", 100, 1.0),))
    rewritten = relation("t", 1, files=(("part-0.parquet", 100, 2.0),))
    grown = relation("t", 1, files=(("part-0.parquet", 120, 1.0),))
    assert fingerprint(before) == fingerprint(
        relation("t", 1, files=(("part-0.parquet", 100, 1.0),))
    )
    assert len({fingerprint(before), fingerprint(rewritten), fingerprint(grown)}) == 3


def test_a_relation_without_files_and_everything_above_it_is_uncacheable():
    table = relation("t", 1).with_(relation=None)
    tree = canonical(project(filter_(table, binary("GreaterThan", attr(0), lit(1))), attr(0)))
    assert tree.children[0].children[0].uncacheable.startswith("not a file-based relation")
    assert tree.uncacheable.startswith("input Filter: input LogicalRelation")


def test_non_deterministic_plans_and_samples_are_uncacheable():
    nondeterministic = with_paths(project(relation("t", 1), attr(0))).with_(deterministic=False)
    assert canonicalize(nondeterministic, RULES).uncacheable == "non-deterministic expression"
    sample = PlanNode(
        "Sample", {"lowerBound": 0.0, "upperBound": 0.1, "child": 0}, (relation("t", 1),)
    )
    assert canonical(sample).uncacheable == "Sample is random (sampling)"
    assert canonical(project(sample, attr(0))).uncacheable.startswith("input Sample")


def test_an_unknown_leaf_is_uncacheable():
    assert canonical(PlanNode("ExternalRDD", {})).uncacheable.startswith("leaf ExternalRDD")


def test_operators_above_a_final_sort_are_order_bound_and_the_sort_input_is_not():
    inner = filter_(relation("t", 1), binary("GreaterThan", attr(0), lit(1)))
    sort = PlanNode("Sort", {"order": [], "global": True, "child": 0}, (inner,))
    tree = canonical(project(sort, attr(0)))
    assert tree.uncacheable == ORDER_BOUND
    assert tree.children[0].op == "Sort"
    assert tree.children[0].children[0].uncacheable is None


def _limit(op: str, child: PlanNode, rows: int = 5) -> PlanNode:
    return PlanNode(op, {"limitExpr": lit(rows), "child": 0}, (child,))


def _sort(child: PlanNode, *, is_global: bool = True) -> PlanNode:
    return PlanNode("Sort", {"order": [], "global": is_global, "child": 0}, (child,))


def test_the_limit_of_an_order_by_limit_is_the_querys_top_rows():
    ranked = filter_(relation("t", 2), binary("GreaterThan", attr(0), lit(1)))
    tree = canonical(_limit("GlobalLimit", _limit("LocalLimit", _sort(ranked))))
    assert top_rows(tree) and storable(tree) and result_node(tree) is tree
    assert tree.children[0].uncacheable == ORDER_BOUND  # the LocalLimit: a partition's rows
    assert top_rows_input(tree) == (0, 0, 0)
    # above the top rows, a Project still hands them on in the query's order
    outer = canonical(project(_limit("GlobalLimit", _limit("LocalLimit", _sort(ranked))), attr(0)))
    assert outer.uncacheable == ORDER_BOUND and result_node(outer).path == (0,)
    # any other shape keeps the limit order-bound: the Sort's input is the result
    for other in (
        _limit("GlobalLimit", _limit("LocalLimit", project(_sort(ranked), attr(0)))),
        _limit(
            "GlobalLimit", PlanNode("Offset", {"child": 0}, (_limit("LocalLimit", _sort(ranked)),))
        ),
        _limit("GlobalLimit", _limit("LocalLimit", _sort(ranked, is_global=False))),
    ):
        tree = canonical(other)
        assert not top_rows(tree) and tree.uncacheable == ORDER_BOUND, other
        assert result_node(tree).op in ("Filter", "Project")


# --- row signatures: which rows, apart from which columns -------------------------------------


def _filtered(name: str, width: int, bound: int) -> PlanNode:
    return filter_(relation(name, width), binary("GreaterThan", attr(0), lit(bound)))


def _orders_customers(*, narrow: bool, swapped: bool = False, kind: dict = INNER) -> PlanNode:
    """orders(o0..o2) ⋈ customers(c0..c1) on o1 = c0, read for all or for two columns."""
    orders = project(_filtered("orders", 3, 10), attr(0), attr(1), attr(2))
    customers = _filtered("customers", 2, 0)
    if narrow:
        orders = project(_filtered("orders", 3, 10), attr(1), attr(2))
    left, right = (customers, orders) if swapped else (orders, customers)
    width = 2 if swapped else (2 if narrow else 3)
    o_custkey = (width + 0) if swapped else (0 if narrow else 1)
    c_custkey = 0 if swapped else width
    return join(left, right, binary("EqualTo", attr(o_custkey), attr(c_custkey)), kind)


def test_projects_below_a_join_do_not_change_its_rows():
    wide = canonical(_orders_customers(narrow=False))
    narrow = canonical(_orders_customers(narrow=True))
    assert wide.fingerprint != narrow.fingerprint
    assert row_signature(wide).rows == row_signature(narrow).rows
    assert relaxed_key(wide) == relaxed_key(narrow)
    # every column the narrow join outputs is in the wide one, found by lineage
    columns = project_subset(narrow, Relative(wide.fingerprint, relaxed_columns(wide)))
    assert columns == (1, 2, 3, 4)


def test_an_inner_join_with_its_inputs_swapped_has_the_same_rows():
    straight = canonical(_orders_customers(narrow=True))
    swapped = canonical(_orders_customers(narrow=True, swapped=True))
    assert row_signature(straight).rows == row_signature(swapped).rows
    # the columns come in another order, and the subset rule maps them by lineage
    columns = project_subset(swapped, Relative(straight.fingerprint, relaxed_columns(straight)))
    assert columns == (2, 3, 0, 1)


def test_an_outer_join_is_not_an_inner_join_and_keeps_its_sides():
    inner = canonical(_orders_customers(narrow=True))
    left = canonical(_orders_customers(narrow=True, kind=LEFT_OUTER))
    swapped = canonical(_orders_customers(narrow=True, swapped=True, kind=LEFT_OUTER))
    assert len({row_signature(n).rows for n in (inner, left, swapped)}) == 3
    # the customers' columns of a left join may be NULL-extended: not the inner join's
    assert project_subset(left, Relative(inner.fingerprint, relaxed_columns(inner))) is None


def test_another_filter_is_other_rows():
    plan = canonical(project(_filtered("orders", 3, 10), attr(0)))
    other = canonical(project(_filtered("orders", 3, 11), attr(0)))
    assert row_signature(plan).rows != row_signature(other).rows


def test_a_computed_column_is_known_by_its_computation_over_lineage():
    doubled = binary("Multiply", attr(1), lit(2))
    cached = canonical(project(_filtered("orders", 3, 10), attr(0), alias(doubled, 3, "d")))
    # the same computation, written with its operands swapped and over a narrower Project
    narrow_input = project(_filtered("orders", 3, 10), attr(1))
    wanted = canonical(project(narrow_input, alias(binary("Multiply", lit(2), attr(0)), 5, "e")))
    assert project_subset(wanted, Relative(cached.fingerprint, relaxed_columns(cached))) == (1,)


def test_a_self_join_and_a_subquery_have_no_signature():
    table = _filtered("nation", 2, 0)
    self_join = canonical(join(table, table, binary("EqualTo", attr(1), attr(3))))
    assert row_signature(self_join) is None
    assert relaxed_key(self_join) is None
    scalar = [{"class": X + "ScalarSubquery", "num-children": 0, "plan": None}]
    with_subquery = canonical(filter_(relation("t", 1), binary("GreaterThan", attr(0), scalar)))
    assert row_signature(with_subquery) is None


def test_a_matched_operator_gets_its_rewrite_key_refreshed(tmp_path):
    """A home written by an older Criss keyed operators differently: matching one again
    re-keys it, so it can serve as a relative from then on."""
    from criss.qtree import QTree

    narrow = canonical(_orders_customers(narrow=True))
    wide = canonical(_orders_customers(narrow=False))
    qtree = QTree(tmp_path / "catalog.db")
    try:
        qtree.observe(wide)
        qtree.db.execute("update nodes set relaxed_key = 'old', columns = '[]'")
        assert qtree.relatives(relaxed_key(narrow)) == []
        qtree.observe(wide)
        found = {r.fingerprint: r for r in qtree.relatives(relaxed_key(narrow))}
        assert found[wide.fingerprint].columns == relaxed_columns(wide)
    finally:
        qtree.close()


def test_a_flattened_commutative_chain_is_known_by_its_operands_in_any_order():
    """Catalyst canonicalizes a + b + c as one MultiCommutativeOp; over a narrower input
    its operands sit at other positions, and their lineage decides their order."""

    def chain(*operands):
        head = {"class": X + "MultiCommutativeOp", "num-children": len(operands), "opCls": "Add"}
        return [head, *(part for operand in operands for part in operand)]

    cached = canonical(project(_filtered("orders", 3, 10), alias(chain(attr(2), attr(1)), 3)))
    narrow_input = project(_filtered("orders", 3, 10), attr(2), attr(1))  # swapped
    wanted = canonical(project(narrow_input, alias(chain(attr(0), attr(1)), 5)))
    assert project_subset(wanted, Relative(cached.fingerprint, relaxed_columns(cached))) == (0,)
