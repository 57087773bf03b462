"""Which operators of one query to cache: per branch, the one with the largest benefit.

The paper (§1.3) caches, for each branch of the plan, the operator with the largest
reuse benefit. Operators whose statistics are still missing get their statistics
collected by being cached when they recur (``ref >= 2``); those rank above any measured
benefit and, among themselves, by reference count then by height (a higher operator
saves more of the query).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    """One operator of the query as the selection sees it (plain numbers only)."""

    key: str
    children: tuple[Candidate, ...]
    #: None: not eligible at all. Otherwise a sortable score, higher is better.
    score: tuple[float, ...] | None
    #: Whether the operator joins inputs (what a variant changing a query higher up leaves
    #: below it).
    joins: bool = False


#: A copy of one table that keeps at least this share of the table's rows is not cached:
#: reading it back costs about what scanning those columns again does, while writing it costs
#: a Parquet encode. On Random-QS-v at SF1, 23 first occurrences wrote 94 MB of such copies
#: (whole-table projections of orders and partsupp among them) for 1.5 s each and read back
#: 10 MB in all.
MOST_ROWS = 0.5


def keeps_most_rows(rows: int | None, table_rows: int | None) -> bool:
    """Does a filtered/projected copy of one table keep most of its rows (both known)?"""
    return rows is not None and bool(table_rows) and rows >= MOST_ROWS * table_rows


def measured_score(benefit: float) -> tuple[float, ...] | None:
    """Score of an operator with statistics: eligible only with positive benefit."""
    return (0.0, benefit) if benefit > 0 else None


def collect_score(ref: int, height: int) -> tuple[float, ...]:
    """Score of an eligible operator without statistics: it is cached to measure it."""
    return (1.0, float(ref), float(height))


def guess_score(gain: float) -> tuple[float, ...]:
    """Score of an operator cached on an estimate before it ever ran (it is not yet seen
    twice): below every measured operator with a positive benefit."""
    return (-1.0, gain)


def best_per_branch(root: Candidate) -> list[str]:
    """Keys of the best-scoring operator on every root-to-leaf branch (each once)."""
    chosen: dict[str, None] = {}

    def visit(node: Candidate, best: Candidate | None) -> None:
        if node.score is not None and (best is None or node.score > best.score):  # type: ignore[operator]
            best = node
        if not node.children:
            if best is not None:
                chosen.setdefault(best.key)
            return
        for child in node.children:
            visit(child, best)

    visit(root, None)
    return list(chosen)


def _benefit(score: tuple[float, ...] | None) -> float | None:
    """The measured benefit a score holds (None: not eligible, or not measured)."""
    return score[1] if score is not None and score[0] == 0.0 else None


def shared_bases(
    root: Candidate,
    chosen: Collection[str],
    share: float,
    worth: Callable[[str], bool] = lambda key: True,
) -> list[str]:
    """Under each ``chosen`` operator with a measured benefit, its shared base: of the
    operators below one of its joins whose measured benefit is at least ``share`` of its
    own, and that are ``worth`` caching as a base, the one with the least (the most general
    part that still keeps that share), which a variant changing the query higher up
    (another filter on a joined table, another join) still shares."""
    found: dict[str, None] = {}

    def base_under(top: Candidate, floor: float) -> str | None:
        best: tuple[float, str] | None = None
        stack = [(child, top.joins) for child in top.children]
        while stack:
            node, past_join = stack.pop()
            if node.key in chosen:
                continue  # a base of its own
            benefit = _benefit(node.score)
            if past_join and benefit is not None and benefit >= floor and worth(node.key):
                if best is None or benefit < best[0]:
                    best = (benefit, node.key)
            stack.extend((child, past_join or node.joins) for child in node.children)
        return None if best is None else best[1]

    def visit(node: Candidate) -> None:
        benefit = _benefit(node.score)
        if node.key in chosen and benefit is not None:
            base = base_under(node, share * benefit)
            if base is not None:
                found.setdefault(base)
        for child in node.children:
            visit(child)

    visit(root)
    return list(found)


def branches(root: Candidate) -> Sequence[list[str]]:
    """Every root-to-leaf branch as a list of keys (for explanations and tests)."""
    if not root.children:
        return [[root.key]]
    return [[root.key, *rest] for child in root.children for rest in branches(child)]
