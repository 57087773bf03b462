"""The pure helpers a capture walks Catalyst's plan JSON with: the order they find file
relations in (the order the JVM's subquery plans are walked in, which the two are paired
by), and the copy an identity is written into, which must never reach a remembered tree."""

from __future__ import annotations

import copy

from criss.bridge.capture import _copied_to_relations
from criss.bridge.lossy import json_dicts
from criss.bridge.subqueries import LOGICAL_RELATION, SubqueryRelations, relation_dicts


def _relation(name: str) -> dict:
    return {"class": LOGICAL_RELATION, "num-children": 0, "relation": None, "name": name}


def _subquery(*plan: dict) -> list[dict]:
    return [{"class": "ScalarSubquery", "num-children": 0, "plan": list(plan)}]


ARGS = {
    "condition": [
        {"class": "And", "num-children": 2},
        {"class": "GreaterThan", "num-children": 2, "left": [{"x": 1}]},
        *_subquery(
            {"class": "Aggregate", "num-children": 1, "expressions": _subquery(_relation("b"))},
            _relation("a"),
        ),
        {"class": "MultiCommutativeOp", "originalRoot": _subquery(_relation("hidden"))},
    ],
    "projectList": [[{"class": "Literal", "value": "1", "num-children": 0}]],
    "other": _subquery(_relation("c")),
}


def test_objects_are_found_in_document_order_and_not_under_original_root():
    names = [d["name"] for d in relation_dicts(ARGS)]
    assert names == ["b", "a", "c"]  # a node's own subqueries right after it
    every = list(json_dicts(ARGS))
    assert every[0] is ARGS
    assert all(d.get("name") != "hidden" for d in every)
    assert sum(1 for _ in json_dicts([ARGS, {"z": 1}])) == len(every) + 1


def test_identities_written_into_the_copy_leave_the_original_untouched():
    before = copy.deepcopy(ARGS)
    copied = _copied_to_relations(ARGS)
    for holder in relation_dicts(copied):
        holder["relation"] = {"key": holder["name"], "version": "1"}
    assert ARGS == before  # a remembered tree's arguments never change
    assert [h["relation"]["key"] for h in relation_dicts(copied)] == ["b", "a", "c"]
    # what holds no relation is shared, not copied
    assert copied["projectList"] is ARGS["projectList"]
    assert copied["condition"][1] is ARGS["condition"][1]
    assert _copied_to_relations(ARGS["projectList"]) is ARGS["projectList"]


_E = "org.apache.spark.sql.catalyst.expressions."


def _plan(table: str, identity: dict | None = None) -> list[dict]:
    relation = {"class": LOGICAL_RELATION, "num-children": 0, "relation": identity, "t": table}
    return [
        {"class": "org.apache.spark.sql.catalyst.plans.logical.Aggregate", "num-children": 1},
        relation,
    ]


def _scalar(plan: list[dict]) -> dict:
    return {"class": _E + "ScalarSubquery", "num-children": 0, "plan": plan, "outerAttrs": []}


def _case_when(then: list[dict], other: list[dict]) -> dict:
    """CASE WHEN then > 1 THEN then ELSE other END, as Catalyst writes it: the branches and
    the else value in full, then the children pre-order."""
    then_copy, other_copy = copy.deepcopy(then), copy.deepcopy(other)
    return {
        "projectList": [
            [
                {
                    "class": _E + "CaseWhen",
                    "num-children": 3,
                    "branches": [
                        {
                            "product-class": "scala.Tuple2",
                            "_1": [_scalar(then_copy)],
                            "_2": [_scalar(then_copy)],
                        }
                    ],
                    "elseValue": [_scalar(other_copy)],
                },
                _scalar(copy.deepcopy(then)),
                _scalar(copy.deepcopy(then)),
                _scalar(copy.deepcopy(other)),
            ]
        ]
    }


def test_subquery_relations_are_the_childrens_and_second_copies_pair_with_first_ones():
    args = _case_when(_plan("a"), _plan("b"))
    found = SubqueryRelations(args)
    assert [h["t"] for h in found.holders] == ["a", "a", "b"]  # as Spark lists subqueries
    assert sum(1 for _ in relation_dicts(args)) == 6
    pairs = found.copies()
    assert [(c["t"], f["t"]) for c, f in pairs] == [("a", "a"), ("a", "a"), ("b", "b")]
    assert all(c is not f and f in found.holders for c, f in pairs)
    for holder, key in zip(found.holders, ("ka", "ka", "kb"), strict=True):
        holder["relation"] = {"key": key}
    assert not found.ambiguous()


def test_a_second_copy_equal_to_no_first_one_or_to_twins_with_other_files_is_unknown():
    args = _case_when(_plan("a"), _plan("b"))
    args["projectList"][0][0]["elseValue"] = [_scalar(_plan("c"))]  # a copy of nothing
    assert SubqueryRelations(args).copies() is None

    twins = _case_when(_plan("t"), _plan("t"))  # alike but for their files
    found = SubqueryRelations(twins)
    assert found.copies() is not None
    for holder, key in zip(found.holders, ("k1", "k1", "k2"), strict=True):
        holder["relation"] = {"key": key}
    assert found.ambiguous()
