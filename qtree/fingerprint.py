"""Merkle fingerprints of canonical operator subtrees.

A fingerprint hashes the operator's canonical arguments and its children's
fingerprints, so equal fingerprints mean equal computations on equal input data.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from criss.qtree.plan import Expr, PlanNode

FINGERPRINT_VERSION = "2"


def _expression_as_list(value: Any) -> Any:
    """How ``json`` writes an ``Expr``: ``[class, fields, children]`` (tuples as arrays)."""
    if isinstance(value, Expr):
        return [value.cls, value.fields, value.children]
    raise TypeError(f"{type(value).__name__} in operator arguments is not JSON")


def operator_digest(node: PlanNode) -> str:
    """Hash of the operator itself (its canonical arguments), without its children."""
    # json's C encoder writes tuples as arrays and calls ``default`` only for an Expr:
    # the same text as converting the arguments to lists first, several times faster
    text = json.dumps(
        [node.op, node.args],
        sort_keys=True,
        separators=(",", ":"),
        default=_expression_as_list,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint_tree(root: PlanNode) -> PlanNode:
    """Return the tree with ``fingerprint`` set on every node (children first)."""
    children = tuple(fingerprint_tree(c) for c in root.children)
    h = hashlib.sha256(FINGERPRINT_VERSION.encode())
    h.update(operator_digest(root).encode())
    for child in children:
        h.update(child.fingerprint.encode())
    return root.with_(children=children, fingerprint=h.hexdigest()[:32])
