"""Decisions over a fingerprinted query tree: what to reuse, what may be stored.

Pure functions: storage lookups and statistics arrive as callables and mappings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from qtree.canonical import NEVER_STORED
from qtree.plan import PlanNode


def storable(node: PlanNode) -> bool:
    """May this operator's result be stored and served in its place?"""
    return node.uncacheable is None and node.op not in NEVER_STORED


def result_node(root: PlanNode) -> PlanNode:
    """The query's result below any final ordering/limit wrapper (whose order a read loses)."""
    node = root
    while not storable(node) and len(node.children) == 1 and node.uncacheable is None:
        node = node.children[0]
    return node


@dataclass(frozen=True)
class Reuse:
    path: tuple[int, ...]
    fingerprint: str


def plan_reuse(root: PlanNode, is_cached: Callable[[str], bool]) -> list[Reuse]:
    """Top-down: the highest storable operators whose results are cached (none nested)."""
    found: list[Reuse] = []

    def visit(node: PlanNode) -> None:
        if storable(node) and is_cached(node.fingerprint):
            found.append(Reuse(node.path, node.fingerprint))
            return
        for child in node.children:
            visit(child)

    visit(root)
    return found


def outside(root: PlanNode, paths: set[tuple[int, ...]]) -> Iterator[PlanNode]:
    """Operators not inside any of the subtrees rooted at ``paths`` (those roots included)."""
    yield root
    if root.path in paths:
        return
    for child in root.children:
        yield from outside(child, paths)
