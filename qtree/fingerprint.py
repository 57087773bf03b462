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


def _jsonable(value: Any) -> Any:
    if isinstance(value, Expr):
        return [value.cls, _jsonable(list(value.fields)), [_jsonable(c) for c in value.children]]
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def operator_digest(node: PlanNode) -> str:
    """Hash of the operator itself (its canonical arguments), without its children."""
    text = json.dumps([node.op, _jsonable(node.args)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint_tree(root: PlanNode) -> PlanNode:
    """Return the tree with ``fingerprint`` set on every node (children first)."""
    children = tuple(fingerprint_tree(c) for c in root.children)
    h = hashlib.sha256(FINGERPRINT_VERSION.encode())
    h.update(operator_digest(root).encode())
    for child in children:
        h.update(child.fingerprint.encode())
    return root.with_(children=children, fingerprint=h.hexdigest()[:32])
