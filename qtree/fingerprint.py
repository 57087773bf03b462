"""Merkle fingerprints of canonical operator subtrees.

A fingerprint hashes the operator's canonical arguments and its children's
fingerprints, so equal fingerprints mean equal computations on equal input data.

A template key hashes the same with every literal's value left out: the operators of one
query template run under other parameter values (TPC-H Q6 under another discount) share
it. It says nothing of their results; it finds measurements of the same work to estimate
an operator seen for the first time by.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from criss.qtree.canonical import IN_SET, LITERAL
from criss.qtree.plan import Expr, PlanNode

FINGERPRINT_VERSION = "2"
#: ``PlanNode.extra`` key of an operator's template key.
TEMPLATE = "template"
#: Fields holding the values a query chose: a literal's, and a large IN list's set.
_VALUE_FIELDS = frozenset({"value", "hset"})


def _expression_as_list(value: Any) -> Any:
    """How ``json`` writes an ``Expr``: ``[class, fields, children]`` (tuples as arrays)."""
    if isinstance(value, Expr):
        return [value.cls, value.fields, value.children]
    raise TypeError(f"{type(value).__name__} in operator arguments is not JSON")


def _expression_without_values(value: Any) -> Any:
    """As :func:`_expression_as_list`, with the values a query chose left out."""
    if isinstance(value, Expr):
        fields = value.fields
        if value.cls in (LITERAL, IN_SET):
            fields = tuple(f for f in fields if f[0] not in _VALUE_FIELDS)
        return [value.cls, fields, value.children]
    raise TypeError(f"{type(value).__name__} in operator arguments is not JSON")


def operator_digest(node: PlanNode, *, values: bool = True) -> str:
    """Hash of the operator itself (its canonical arguments), without its children;
    without the values of its literals if not ``values``."""
    return _digest(node, _expression_as_list if values else _expression_without_values)


def operator_digests(node: PlanNode) -> tuple[str, str]:
    """``operator_digest`` of ``node`` with and without its literals' values: one
    serialization where it has no literal (the texts are then equal), two where it has."""
    has_values = False

    def as_list(value: Any) -> Any:
        nonlocal has_values
        if isinstance(value, Expr) and value.cls in (LITERAL, IN_SET):
            has_values = True
        return _expression_as_list(value)

    exact = _digest(node, as_list)
    return exact, (operator_digest(node, values=False) if has_values else exact)


def _digest(node: PlanNode, default: Callable[[Any], Any]) -> str:
    # json's C encoder writes tuples as arrays and calls ``default`` only for an Expr:
    # the same text as converting the arguments to lists first, several times faster
    text = json.dumps([node.op, node.args], sort_keys=True, separators=(",", ":"), default=default)
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint_tree(root: PlanNode) -> PlanNode:
    """Return the tree with ``fingerprint`` set on every node (children first), and its
    template key in ``extra`` (:data:`TEMPLATE`)."""
    children = tuple(fingerprint_tree(c) for c in root.children)
    own, own_template = operator_digests(root)
    exact = hashlib.sha256(FINGERPRINT_VERSION.encode())
    exact.update(own.encode())
    template = hashlib.sha256(FINGERPRINT_VERSION.encode())
    template.update(own_template.encode())
    for child in children:
        exact.update(child.fingerprint.encode())
        template.update(child.extra[TEMPLATE].encode())
    return root.with_(
        children=children,
        fingerprint=exact.hexdigest()[:32],
        extra={**root.extra, TEMPLATE: template.hexdigest()[:32]},
    )
