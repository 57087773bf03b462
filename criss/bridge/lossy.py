"""What Catalyst's plan JSON loses or writes ambiguously, restored from the JVM plan.

A fingerprint is a hash of the plan's JSON: two plans whose JSON reads alike although they
compute different rows would be served each other's cached results. Catalyst writes some
fields as null (a Scala Set, a Char, a Seq of Seqs, row data: ``LOSSY_FIELDS``) and some
literal values as text that two different values share (``ambiguous_literal``): a timestamp
as local time in the session's time zone (UTC's and Tokyo's ``timestamp'2024-03-10
05:00:00'`` are different instants written alike), an array, map or struct as its
elements' unquoted text (``array('a,b')`` and ``array('a', 'b')`` both ``[a,b]``; NULL and
``'null'`` both ``null``). Each is rewritten here from the JVM objects; what cannot be is
left null (``exactValue`` for a literal), which makes its operator uncacheable
(``qtree.canonical.clean_args``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from criss.qtree.canonical import IN_SET, LITERAL

LIKE = "org.apache.spark.sql.catalyst.expressions.Like"
EXPAND = "org.apache.spark.sql.catalyst.plans.logical.Expand"
LOCAL_RELATION = "org.apache.spark.sql.catalyst.plans.logical.LocalRelation"
#: Fields Catalyst's JSON writes as null although they decide what an expression computes,
#: by class.
LOSSY_FIELDS = {IN_SET: "hset", LIKE: "escapeChar", EXPAND: "projections", LOCAL_RELATION: "data"}
#: Rows of a local relation whose data are read into its identity (larger: left unknown).
LOCAL_ROWS_LIMIT = 10_000
#: The field an ambiguous literal that could not be read exactly is marked with (null).
UNREAD_LITERAL = "exactValue"
#: Text in plan JSON that may belong to an ambiguous literal (a cheap test before parsing).
_AMBIGUOUS_MARKS = ('"dataType":"timestamp"', '"dataType":{"type":')


#: Settings Spark reads while it runs a plan, written nowhere in the plan, that change the
#: rows it returns (or whether it raises), with Spark's defaults: a plan run under another
#: value computes other rows, so its file relations are marked with the value
#: (``settings_of``, ``mark_settings``) and its fingerprints differ.
RESULT_SETTINGS = {
    "spark.sql.mapKeyDedupPolicy": "exception",
    "spark.sql.legacy.timeParserPolicy": "corrected",
    "spark.sql.legacy.castComplexTypesToString.enabled": "false",
    "spark.sql.legacy.sizeOfNull": "true",
    "spark.sql.files.ignoreCorruptFiles": "false",
    "spark.sql.files.ignoreMissingFiles": "false",
    "spark.sql.parquet.datetimeRebaseModeInRead": "corrected",
    "spark.sql.parquet.int96RebaseModeInRead": "corrected",
}
#: The field of a leaf's JSON marked with the settings it runs under.
SETTINGS_FIELD = "resultSettings"
#: One setting in the text of a Scala Map (``Map(k1 -> v1, k2 -> v2)``).
_SETTING = re.compile(r"(spark\.sql\.[\w.]+) -> ([^,)]*)")


def settings_of(confs_text: str) -> str | None:
    """Of a session's explicitly set SQL settings (the text of ``SQLConf.getAllConfs``),
    those of ``RESULT_SETTINGS`` not at Spark's default, as sorted text; None if none."""
    changed = sorted(
        f"{key}={value.strip()}"
        for key, value in _SETTING.findall(confs_text)
        if key in RESULT_SETTINGS and value.strip().lower() != RESULT_SETTINGS[key]
    )
    return ";".join(changed) or None


def mark_settings(nodes: list[dict[str, Any]], settings: str | None) -> None:
    """Mark every leaf of a plan's JSON ``nodes`` with ``settings`` (every fingerprint
    covers its leaves', so every operator then differs from one run under other values)."""
    if settings is None:
        return
    for node in nodes:
        if node.get("num-children", 0) == 0:
            node[SETTINGS_FIELD] = settings


def needs_restoring(text: str) -> bool:
    """Whether plan JSON ``text`` may hold a field to restore (a class of ``LOSSY_FIELDS``,
    or a literal of a type whose JSON text is ambiguous)."""
    return any(name in text for name in LOSSY_FIELDS) or any(m in text for m in _AMBIGUOUS_MARKS)


def ambiguous_literal(element: dict[str, Any]) -> bool:
    """A non-NULL literal whose JSON value two different values may share: a timestamp
    (written in the session's time zone) or an array, map, struct or user type (its
    elements unquoted)."""
    if element.get("class") != LITERAL or element.get("value") is None:
        return False
    data_type = element.get("dataType")
    return data_type == "timestamp" or isinstance(data_type, dict)


def restore_lossy_fields(
    node_at: Callable[[tuple[int, ...]], Any], nodes: list[dict[str, Any]], jvm: Any
) -> None:
    """Fill in ``nodes``, a canonicalized plan's JSON, from its JVM nodes (``node_at``
    path): IN sets as their values' sorted text (NULL as null), a LIKE's escape character,
    an Expand's projections as expression JSON, a local relation's rows as a digest of
    their SQL text, ambiguous literals as exact text. Expressions are paired with their
    JVM twins by order; where the counts differ (one in a subquery's plan, which is not
    this node's) what is lost stays null and the operator uncacheable."""
    for path, raw in zip(_preorder_paths(nodes), nodes, strict=True):
        if not any(_lost(e) for e in json_dicts(raw)):
            continue
        jnode = node_at(path)
        if _lost(raw):
            raw[LOSSY_FIELDS[raw["class"]]] = _plan_field(jnode, raw["class"], jvm)
        # after the node's own field: an Expand's projections may hold ambiguous literals
        found = [e for e in json_dicts(raw) if e is not raw]
        expressions = [e for e in found if _lost(e)]
        if not expressions:
            continue
        classes = {e["class"] for e in expressions}
        # every literal of the node is paired, ambiguous or not: the JVM's are not told apart
        mine = [e for e in found if e.get("class") in classes]
        twins = [e for e in _jvm_expressions(jnode) if str(e.getClass().getName()) in classes]
        if len(twins) != len(mine):
            for holder in expressions:
                if holder["class"] == LITERAL:
                    holder[UNREAD_LITERAL] = None
            continue  # the others are left null: never cached
        for holder, expression in zip(mine, twins, strict=True):
            if holder["class"] == IN_SET:
                holder["hset"] = _in_set_text(expression)
            elif holder["class"] == LIKE:
                holder["escapeChar"] = str(expression.escapeChar())
            elif ambiguous_literal(holder):
                exact = _exact_literal_text(expression, holder["dataType"])
                if exact is None:
                    holder[UNREAD_LITERAL] = None
                else:
                    holder["value"] = exact


def _lost(element: dict[str, Any]) -> bool:
    if ambiguous_literal(element):
        return True
    field = LOSSY_FIELDS.get(element.get("class", ""))
    return field is not None and element.get(field, 0) is None


def _exact_literal_text(literal: Any, data_type: Any) -> str | None:
    """A literal's value as text no other value shares: a timestamp's microseconds since
    the epoch; a complex value's SQL (strings quoted, NULLs typed) beside its Catalyst text
    (nested timestamps as microseconds). None when Spark cannot write it."""
    try:
        if data_type == "timestamp":
            return f"{literal.toString()} ({int(literal.value())} us since the epoch)"
        return f"{literal.sql()} {literal.toString()}"
    except Exception:  # noqa: BLE001 - any failure (a type without SQL text): never cached
        return None


def _plan_field(jnode: Any, cls: str, jvm: Any) -> Any:
    """An Expand's projections (JSON of each expression) or a local relation's rows (a
    digest of their SQL and Catalyst text; None beyond LOCAL_ROWS_LIMIT rows, or when
    Spark cannot write them as SQL)."""
    if cls == EXPAND:
        projections = jnode.projections()
        return [
            [json.loads(row.apply(j).toJSON()) for j in range(row.size())]
            for row in (projections.apply(i) for i in range(projections.size()))
        ]
    data = jnode.data()
    if data.size() > LOCAL_ROWS_LIMIT:
        return None
    try:
        # one literal of all rows: its SQL quotes strings and types NULLs, which the rows'
        # own text (``[a,b,c]`` for ('a,b', 'c') and ('a', 'b,c')) does not
        rows = jvm.org.apache.spark.sql.catalyst.util.GenericArrayData(data)
        rows_type = jvm.org.apache.spark.sql.types.ArrayType(jnode.schema(), True)
        text = str(jvm.org.apache.spark.sql.catalyst.expressions.Literal(rows, rows_type).sql())
    except Exception:  # noqa: BLE001 - a type without SQL text: never cached
        return None
    return hashlib.sha256(f"{text}\n{data.mkString(chr(10))}".encode()).hexdigest()


def _in_set_text(expression: Any) -> list[str | None]:
    """An IN set's values as sorted text, NULL as null after them (not the text 'null')."""
    values = expression.hset().toSeq()
    found = [values.apply(i) for i in range(values.size())]
    texts = sorted(str(v) for v in found if v is not None)
    return texts + [None] if any(v is None for v in found) else texts


def _preorder_paths(nodes: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    """The path of each plan node of Catalyst's pre-order JSON list."""
    paths: list[tuple[int, ...]] = []
    position = 0

    def visit(path: tuple[int, ...]) -> None:
        nonlocal position
        count = nodes[position].get("num-children", 0)
        paths.append(path)
        position += 1
        for i in range(count):
            visit(path + (i,))

    visit(())
    return paths


#: What JSON objects may hold nested objects.
_NESTED = (dict, list)


def json_dicts(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``value``, in document order (expressions are pre-order lists),
    but those under ``originalRoot`` (a MultiCommutativeOp's spelling, not a child)."""
    # a stack, not recursive generators: each level of ``yield from`` costs every object
    # under it a step, and TPC-DS plans nest expressions dozens deep
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(
                reversed(
                    [v for k, v in item.items() if k != "originalRoot" and isinstance(v, _NESTED)]
                )
            )
        elif isinstance(item, list):
            stack.extend(reversed([v for v in item if isinstance(v, _NESTED)]))


def _jvm_expressions(jnode: Any) -> Iterator[Any]:
    """The expressions of a JVM plan node in the order its JSON lists them (fields in
    order, each expression pre-order)."""
    expressions = jnode.expressions()
    stack = [expressions.apply(i) for i in reversed(range(expressions.size()))]
    while stack:
        expression = stack.pop()
        yield expression
        children = expression.children()
        stack.extend(children.apply(i) for i in reversed(range(children.size())))
