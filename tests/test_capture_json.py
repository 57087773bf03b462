"""The pure helpers a capture walks Catalyst's plan JSON with: the order they find file
relations in (the order the JVM's subquery plans are walked in, which the two are paired
by), and the copy an identity is written into, which must never reach a remembered tree."""

from __future__ import annotations

import copy

from criss.bridge.capture import LOGICAL_RELATION, _copied_to_relations, _relation_dicts
from criss.bridge.lossy import json_dicts


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
    names = [d["name"] for d in _relation_dicts(ARGS)]
    assert names == ["b", "a", "c"]  # a node's own subqueries right after it
    every = list(json_dicts(ARGS))
    assert every[0] is ARGS
    assert all(d.get("name") != "hidden" for d in every)
    assert sum(1 for _ in json_dicts([ARGS, {"z": 1}])) == len(every) + 1


def test_identities_written_into_the_copy_leave_the_original_untouched():
    before = copy.deepcopy(ARGS)
    copied = _copied_to_relations(ARGS)
    for holder in _relation_dicts(copied):
        holder["relation"] = {"key": holder["name"], "version": "1"}
    assert ARGS == before  # a remembered tree's arguments never change
    assert [h["relation"]["key"] for h in _relation_dicts(copied)] == ["b", "a", "c"]
    # what holds no relation is shared, not copied
    assert copied["projectList"] is ARGS["projectList"]
    assert copied["condition"][1] is ARGS["condition"][1]
    assert _copied_to_relations(ARGS["projectList"]) is ARGS["projectList"]
