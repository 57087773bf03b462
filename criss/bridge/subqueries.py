"""The file relations a plan node's subquery expressions read, as its JSON holds them.

Catalyst's JSON writes an expression's children as a pre-order list, and fields that refer
to a child by position. A field that holds children another way (CaseWhen's ``branches``,
pairs of expressions, and its ``elseValue``, an option) is written out in full a second
time: TPC-DS q9's five CASE WHENs over scalar subqueries hold each subquery's plan twice.
Spark's own list of a node's subquery plans (``QueryPlan.subqueries``, which the bridge
pairs the relations with) has each once. So the relations are found in the children's
copies only, and the second copies take the identities of the first ones they equal.

Pure functions over the JSON (plain dicts and lists).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from criss.bridge.lossy import json_dicts

LOGICAL_RELATION = "org.apache.spark.sql.execution.datasources.LogicalRelation"
#: The package of Catalyst's expressions (a plan's JSON objects of other classes are plans).
EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."


def relation_dicts(value: Any) -> Iterator[dict[str, Any]]:
    """Every file relation's JSON object in ``value``, second copies included, in order."""
    return (d for d in json_dicts(value) if d.get("class") == LOGICAL_RELATION)


class SubqueryRelations:
    """The file relations of one plan node's subquery expressions (``args``: its JSON
    arguments): ``holders`` in the order Spark lists its subquery plans (each plan
    pre-order, a node's own subqueries right after it), and every second copy of them."""

    def __init__(self, args: Any) -> None:
        self.holders: list[dict[str, Any]] = []
        #: The subquery plans (JSON lists) the holders were found in, nested ones too.
        self._plans: list[list[Any]] = []
        #: Fields of expressions that repeat children (second copies), in order.
        self._copies: list[Any] = []
        self._visit(args)

    def _visit(self, value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                if isinstance(item, (dict, list)):
                    self._visit(item)
            return
        if not isinstance(value, dict):
            return
        kind = str(value.get("class", ""))
        if kind == LOGICAL_RELATION:
            self.holders.append(value)
            return
        expression = kind.startswith(EXPRESSIONS)
        for key, item in value.items():
            if key == "originalRoot" or not isinstance(item, (dict, list)):
                continue
            if expression and _holds_expressions(item):
                self._copies.append(item)
            else:
                if expression and _is_plan(item):
                    self._plans.append(item)
                self._visit(item)

    def copies(self) -> list[tuple[dict[str, Any], dict[str, Any]]] | None:
        """Each relation of a second copy paired with its first copy's, or None when a
        second copy's subquery plan equals no first one (its inputs are then unknown).
        Compare before identities are written into the holders."""
        pairs = []
        for copy in self._copies:
            for plan in _outermost_plans(copy):
                first = next((p for p in self._plans if p == plan), None)
                if first is None:
                    return None
                pairs.extend(zip(relation_dicts(plan), relation_dicts(first), strict=True))
        return pairs

    def ambiguous(self) -> bool:
        """Whether two equal first copies read different files (identities written): a
        second copy of either could not tell which it repeats."""
        shapes = [_without_identities(plan) for plan in self._plans]
        for i, plan in enumerate(self._plans):
            for j in range(i + 1, len(self._plans)):
                if plan != self._plans[j] and shapes[i] == shapes[j]:
                    return True
        return False


def _holds_expressions(value: Any) -> bool:
    """Whether ``value`` (a field of an expression) holds expressions, in lists or pairs:
    its first JSON list of classed objects is an expression's."""
    flat = _first_classed_list(value)
    return flat is not None and str(flat[0].get("class", "")).startswith(EXPRESSIONS)


def _is_plan(value: Any) -> bool:
    """Whether ``value`` is a plan (a pre-order list of objects of plan classes)."""
    return (
        isinstance(value, list)
        and bool(value)
        and isinstance(value[0], dict)
        and "class" in value[0]
        and not str(value[0]["class"]).startswith(EXPRESSIONS)
    )


def _first_classed_list(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, list):
        if value and isinstance(value[0], dict) and "class" in value[0]:
            return value
        items: list[Any] = value
    elif isinstance(value, dict) and "class" not in value:
        items = list(value.values())
    else:
        return None
    for item in items:
        found = _first_classed_list(item)
        if found is not None:
            return found
    return None


def _outermost_plans(value: Any) -> Iterator[list[Any]]:
    """The subquery plans in ``value`` (expressions), not those nested in them."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            expression = str(item.get("class", "")).startswith(EXPRESSIONS)
            for key, field in reversed(list(item.items())):
                if key == "originalRoot" or not isinstance(field, (dict, list)):
                    continue
                if expression and _is_plan(field):
                    yield field
                else:
                    stack.append(field)
        elif isinstance(item, list):
            stack.extend(reversed([v for v in item if isinstance(v, (dict, list))]))


def _without_identities(plan: list[Any]) -> Any:
    """``plan`` with its relations' identities taken out (for comparing structure)."""
    if isinstance(plan, dict):
        if plan.get("class") == LOGICAL_RELATION:
            return {k: v for k, v in plan.items() if k != "relation"}
        return {k: _without_identities(v) for k, v in plan.items()}
    if isinstance(plan, list):
        return [_without_identities(v) for v in plan]
    return plan
