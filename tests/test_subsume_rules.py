"""Filtered signatures and subsumption derivations on hand-built plans and shapes (no Spark).

The end-to-end proofs on real Spark, rows compared with plain Spark's, are in
``test_subsumption.py``; these pin which filters may move to the top of a join and what a
derivation computes from which cached columns.
"""

from __future__ import annotations

import pytest
from test_canonical_rules import (
    INNER,
    LEFT_OUTER,
    attr,
    binary,
    canonical,
    filter_,
    join,
    lit,
    project,
    relation,
)

from criss.qtree.aggregates import AggregateOutput
from criss.qtree.lineage import filtered_signature
from criss.qtree.predicates import Atom
from criss.qtree.subsume import AGGREGATE_ROLLUP, FILTER_SUBSUMPTION, Shape, derive

LEFT_SEMI = {"object": "org.apache.spark.sql.catalyst.plans.LeftSemi$"}


def above(value: int, position: int = 0) -> list:
    return binary("GreaterThan", attr(position), lit(value))


def joined(left_filter: int | None, right_filter: int | None, kind: dict = INNER):
    left, right = relation("a", 2), relation("b", 2)
    if left_filter is not None:
        left = filter_(left, above(left_filter))
    if right_filter is not None:
        right = filter_(right, above(right_filter))
    return canonical(project(join(left, right, binary("EqualTo", attr(0), attr(2)), kind), attr(1)))


def test_filters_under_an_inner_join_move_to_its_top():
    plain, left, right = (
        filtered_signature(joined(*f)) for f in ((None, None), (5, None), (None, 7))
    )
    assert plain.base == left.base == right.base
    assert not plain.atoms and left.atoms != right.atoms
    (atom,) = [a for a in left.atoms if a.kind == "compare"]
    assert (atom.op, atom.values) == (">", ("5",))


def test_a_filter_on_the_side_an_outer_or_semi_join_does_not_keep_stays_in_the_rows():
    for kind in (LEFT_OUTER, LEFT_SEMI):
        plain, preserved, other = (
            filtered_signature(joined(*f, kind=kind)) for f in ((None, None), (5, None), (None, 7))
        )
        assert plain.base == preserved.base and preserved.atoms
        assert other.base != plain.base and not other.atoms


def cmp(column: str, op: str, value: int) -> Atom:
    return Atom.compare(column, op, "integer", str(value))


def group(column: str) -> AggregateOutput:
    return AggregateOutput("group", column)


def aggregate(function: str, argument: str, distinct: bool = False) -> AggregateOutput:
    return AggregateOutput("aggregate", f"{function}({argument})", function, argument, distinct)


CACHED_GROUPS = Shape(
    "aggregate",
    frozenset({cmp("g", ">=", 1)}),
    grouping=("g", "h"),
    outputs=(
        group("g"),
        group("h"),
        aggregate("Sum", "x"),
        aggregate("Count", "x"),
        aggregate("Min", "x"),
        aggregate("Count", "v", distinct=True),
    ),
)


G_FROM_2 = (cmp("g", ">=", 2),)


def wanted_groups(grouping, outputs, atoms=G_FROM_2) -> Shape:
    return Shape("aggregate", frozenset(atoms), grouping=grouping, outputs=tuple(outputs))


def test_the_same_groups_are_filtered_on_a_grouping_column_whatever_they_aggregate():
    wanted = wanted_groups(("h", "g"), [group("h"), aggregate("Count", "v", distinct=True)])
    derivation = derive(wanted, CACHED_GROUPS)
    assert derivation.rule == FILTER_SUBSUMPTION and derivation.grouping is None
    assert [(r.atom.op, r.column) for r in derivation.residual] == [(">=", 0)]
    assert [o.columns for o in derivation.outputs] == [(1,), (5,)]


def test_fewer_groups_roll_up_decomposable_aggregates_only():
    outputs = [group("h"), aggregate("Sum", "x"), aggregate("Count", "x"), aggregate("Min", "x")]
    derivation = derive(wanted_groups(("h",), outputs), CACHED_GROUPS)
    assert derivation.rule == AGGREGATE_ROLLUP and derivation.grouping == (1,)
    assert [(o.how, o.columns) for o in derivation.outputs] == [
        ("column", (1,)),
        ("sum", (2,)),
        ("count", (3,)),
        ("min", (4,)),
    ]
    # an average needs a cached sum and count of its argument; a distinct count cannot add up
    assert (
        derive(wanted_groups(("h",), [aggregate("Average", "x")]), CACHED_GROUPS).outputs[0].how
        == "avg"
    )
    assert derive(wanted_groups(("h",), [aggregate("Average", "y")]), CACHED_GROUPS) is None
    assert derive(wanted_groups(("h",), [aggregate("Count", "v", True)]), CACHED_GROUPS) is None


def test_a_residual_must_be_on_cached_grouping_columns_and_implied():
    outputs = [group("h"), aggregate("Sum", "x")]
    assert derive(wanted_groups(("h",), outputs, [cmp("x", ">", 3)]), CACHED_GROUPS) is None
    assert derive(wanted_groups(("h",), outputs, [cmp("g", ">=", 0)]), CACHED_GROUPS) is None
    assert derive(wanted_groups(("h", "k"), outputs), CACHED_GROUPS) is None


def test_rows_need_every_wanted_and_residual_column_in_the_cache():
    cached = Shape("rows", frozenset({cmp("x", ">", 3)}), columns=("x", "y"))
    served = derive(Shape("rows", frozenset({cmp("x", ">", 5)}), columns=("y",)), cached)
    assert served.rule == FILTER_SUBSUMPTION and served.residual[0].column == 0
    assert derive(Shape("rows", frozenset({cmp("x", ">", 5)}), columns=("z",)), cached) is None
    narrow = Shape("rows", frozenset({cmp("x", ">", 3)}), columns=("y",))
    assert derive(Shape("rows", frozenset({cmp("x", ">", 5)}), columns=("y",)), narrow) is None
    opaque = Shape("rows", frozenset({cmp("x", ">", 3), Atom.opaque("like")}), columns=("x", "y"))
    assert derive(opaque, cached) is None  # whose columns are not known
    # the same conjunct the cache applied needs no column: it holds for every cached row
    assert (
        derive(Shape("rows", frozenset({cmp("x", ">", 3)}), columns=("y",)), narrow).residual == ()
    )


def test_an_opaque_conjunct_is_one_atom_whatever_it_was_read_with():
    read, unread = Atom.opaque("like", reads=("y", "x")), Atom.opaque("like")
    assert read == unread and hash(read) == hash(unread) and read.reads == ("x", "y")
    assert Atom.from_json(read.to_json()).reads == ("x", "y")
    assert Atom.from_json(read.identity()) == read  # written before reads were kept
    assert read.identity() == unread.to_json()


def test_an_added_condition_of_any_kind_is_applied_where_the_query_states_it():
    """``x > 3`` cached with x and y; ``x > 3 AND (y = 1 OR x < 9)`` wanted: the OR is
    applied again from the query's Filter, bound to the cached columns of its input."""
    equal, below = binary("EqualTo", attr(1), lit(1)), binary("LessThan", attr(0), lit(9))
    condition = binary("Or", equal, below)
    both = binary("And", above(3), condition)
    cached_plan = canonical(project(filter_(relation("a", 2), above(3)), attr(0), attr(1)))
    wanted_plan = canonical(project(filter_(relation("a", 2), both), attr(1)))
    cached, wanted = filtered_signature(cached_plan), filtered_signature(wanted_plan)
    (opaque,) = [a for a in wanted.atoms if a.kind == "opaque"]
    assert set(opaque.reads) == set(cached.columns)
    cached_shape = Shape("rows", cached.atoms, columns=cached.columns)
    wanted_shape = Shape("rows", wanted.atoms, columns=wanted.columns)
    assert derive(wanted_shape, cached_shape) is None  # not without the query's Filters
    served = derive(wanted_shape, cached_shape, wanted_plan)
    assert served.rule == FILTER_SUBSUMPTION
    (residual,) = served.residual
    assert residual.atom == opaque and sorted(residual.reads_at) == [0, 1]
    (binding,) = served.filters
    assert binding.at == (0,) and sorted(binding.inputs) == [(0, 0), (1, 1)]
    # a condition on a column the cache dropped is not applied, so it is not served
    narrow = Shape("rows", cached.atoms, columns=cached.columns[:1])
    assert derive(Shape("rows", wanted.atoms, columns=()), narrow, wanted_plan) is None


def test_filters_are_applied_again_lower_ones_first():
    """As Spark evaluates them: a condition above is never evaluated on a row one below
    drops (under ANSI a division by a value the lower one excludes would raise)."""
    lower = binary("Or", binary("EqualTo", attr(1), lit(1)), binary("LessThan", attr(0), lit(9)))
    upper = binary("Or", binary("EqualTo", attr(1), lit(2)), binary("LessThan", attr(0), lit(7)))
    cached_plan = canonical(project(filter_(relation("a", 2), above(3)), attr(0), attr(1)))
    stacked = filter_(filter_(filter_(relation("a", 2), above(3)), lower), upper)
    wanted_plan = canonical(project(stacked, attr(1)))
    cached, wanted = filtered_signature(cached_plan), filtered_signature(wanted_plan)
    served = derive(
        Shape("rows", wanted.atoms, columns=wanted.columns),
        Shape("rows", cached.atoms, columns=cached.columns),
        wanted_plan,
    )
    assert [b.at for b in served.filters] == [(0, 0, 0), (0, 0), (0,)]


def test_shapes_round_trip_through_json():
    assert Shape.loads(CACHED_GROUPS.dumps()) == CACHED_GROUPS


def test_an_aggregate_is_lifted_over_the_columns_its_parameters_filter():
    from criss.qtree.subsume import lifted_columns

    outputs = (group("h"), aggregate("Sum", "x"), aggregate("Average", "x"))
    shape = wanted_groups(("h",), outputs, [cmp("g", ">=", 2), cmp("h", "=", 1)])
    assert lifted_columns(shape) == ("g", "h")  # h is grouped already; its filter goes too
    assert lifted_columns(wanted_groups(("g",), outputs)) is None  # nothing new to group by
    assert lifted_columns(wanted_groups(("h",), [aggregate("Count", "v", True)])) is None
    expression = AggregateOutput("expression", "sum(x) / 7")
    assert lifted_columns(wanted_groups(("h",), [expression])) is None
    opaque = wanted_groups(("h",), outputs, [Atom.opaque("like")])
    assert lifted_columns(opaque) is None


def test_an_aggregate_that_cannot_be_rolled_up_says_why():
    """Its parameters are found all the same (its template may recur under other values),
    and the output that keeps it from a lift is named."""
    from criss.qtree.subsume import parameter_columns, undecomposed_output

    scaled = wanted_groups((), [AggregateOutput("expression", "sum(x) * h")])  # no parts
    assert parameter_columns(scaled) == ("g",)
    assert "reads a column outside its aggregates" in undecomposed_output(scaled)
    parts = (aggregate("Count", "v", True), aggregate("Sum", "x"))
    ratio = wanted_groups(
        (), [AggregateOutput("expression", "count(distinct v) / sum(x)", parts=parts)]
    )
    assert undecomposed_output(ratio) == "a DISTINCT Count does not roll up from finer groups"
    distinct = wanted_groups(("h",), [aggregate("Count", "v", True)])
    assert undecomposed_output(distinct) == "a DISTINCT Count does not roll up from finer groups"
    median = wanted_groups(("h",), [aggregate("Percentile", "v")])
    assert undecomposed_output(median) == "Percentile does not roll up from finer groups"
    sums = wanted_groups(("h",), [group("h"), aggregate("Sum", "x"), aggregate("Average", "x")])
    assert undecomposed_output(sums) is None and parameter_columns(sums) == ("g",)
    assert parameter_columns(wanted_groups(("g",), [aggregate("Sum", "x")])) is None


def test_an_expression_over_aggregates_is_rolled_up_from_each_of_them():
    """Catalyst folds a Project over an Aggregate into its outputs (TPC-H Q14's ratio of
    sums): each aggregate of the expression is rolled up from the cached partials, an
    average from a sum and a count, and the expression is computed over them."""
    from criss.qtree.subsume import lifted_columns

    parts = (aggregate("Sum", "x"), aggregate("Average", "x"), aggregate("Sum", "x"))
    ratio = AggregateOutput("expression", "sum(x) / avg(x) + sum(x)", parts=parts)
    wanted = wanted_groups(("h",), [group("h"), ratio])
    assert lifted_columns(wanted) == ("g",)
    assert AggregateOutput.from_json(ratio.to_json()) == ratio
    assert AggregateOutput.from_json(group("h").to_json()) == group("h")  # as stored before
    derivation = derive(wanted, CACHED_GROUPS)
    assert derivation.rule == AGGREGATE_ROLLUP
    expression = derivation.outputs[1]
    assert expression.how == "expression"
    assert [(p.how, p.columns) for p in expression.parts] == [
        ("sum", (2,)),
        ("avg", (2, 3)),
        ("sum", (2,)),
    ]
    missing = AggregateOutput("expression", "max(x) / 2", parts=(aggregate("Max", "x"),))
    assert derive(wanted_groups(("h",), [group("h"), missing]), CACHED_GROUPS) is None


def test_an_aggregate_is_lifted_only_where_nothing_but_its_lifted_parameters_varies():
    """A lifted result keeps the query's other conditions: a sibling differing in a
    ``<>`` (opaque here) is no evidence that it will serve the template's next query."""
    from criss.qtree.subsume import lifted_columns, varies_only_in

    outputs = (group("h"), aggregate("Sum", "x"))

    def shape(low, salt):
        return wanted_groups(("h",), outputs, [cmp("g", ">=", low), Atom.opaque(f"k <> {salt}")])

    columns = lifted_columns(shape(2, 1))
    assert columns == ("g",)
    assert varies_only_in(shape(2, 1), shape(5, 1), columns)
    assert not varies_only_in(shape(2, 1), shape(5, 2), columns)  # the <> changes too
    assert not varies_only_in(shape(2, 1), shape(2, 2), columns)
    assert not varies_only_in(shape(2, 1), shape(2, 1), columns)  # nothing varies


def test_lift_sites_are_the_filters_whose_columns_reach_the_aggregate():
    from criss.qtree.lineage import output_lineage
    from criss.qtree.plan import PlanNode
    from criss.qtree.subsume import lift_sites

    def aggregate_over(kind):
        left = filter_(relation("a", 2), above(5))
        right = filter_(relation("b", 2), above(7))
        body = join(left, right, binary("EqualTo", attr(1), attr(3)), kind)
        node = PlanNode(
            "Aggregate", {"groupingExpressions": [], "aggregateExpressions": []}, (body,)
        )
        return canonical(node)

    inner = aggregate_over(INNER)
    join_node = inner.children[0]
    a_x = output_lineage(join_node.children[0].children[0])[0]
    b_x = output_lineage(join_node.children[1].children[0])[0]
    assert lift_sites(inner, (a_x, b_x)) == [((0, 0), [0]), ((0, 1), [0])]
    # the right side of a semi join does not reach the top: its parameter cannot be lifted
    semi = aggregate_over(LEFT_SEMI)
    semi_right = output_lineage(semi.children[0].children[1].children[0])[0]
    with pytest.raises(LookupError):
        lift_sites(semi, (semi_right,))


def test_a_lifted_filter_measures_what_lifting_adds_back_only_if_it_holds_nothing_else():
    """The rows a filter dropped are those lifting its conditions adds back only when it
    holds no condition lifting keeps: a second condition on another column drops rows
    that stay dropped."""
    from criss.qtree.lineage import output_lineage
    from criss.qtree.plan import PlanNode
    from criss.qtree.subsume import lift_sites, only_lifted_conditions

    def aggregate_over(condition):
        body = filter_(relation("a", 2), condition)
        node = PlanNode(
            "Aggregate", {"groupingExpressions": [], "aggregateExpressions": []}, (body,)
        )
        return canonical(node)

    lone = aggregate_over(above(5))
    x = output_lineage(lone.children[0].children[0])[0]
    (site,) = lift_sites(lone, (x,))
    assert only_lifted_conditions(lone, site, (x,))
    both = aggregate_over(binary("And", above(5), above(9, 1)))
    (site,) = lift_sites(both, (x,))
    assert not only_lifted_conditions(both, site, (x,))
    y = output_lineage(both.children[0].children[0])[1]
    assert only_lifted_conditions(both, site, (x, y))


def test_a_decoded_shape_is_kept_and_equal_to_a_fresh_decoding():
    """Every unserved query decodes the shapes recorded on the tables it selects from: a
    text decoded before is answered from memory, with a value equal to its decoding."""
    from criss.qtree.subsume import _decoded_shape

    text = CACHED_GROUPS.dumps()
    first = Shape.loads(text)
    assert Shape.loads(text) is first
    assert _decoded_shape.__wrapped__(text) == first == CACHED_GROUPS
