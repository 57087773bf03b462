"""What an operator's template did before: the same operator under other literal values
(its template key, :mod:`criss.qtree.fingerprint`), as the QTree recorded it.

First-seen operators are judged on these: their Texec and size are estimated at the
medians of the template's measured runs, and a first-seen result expects the repeats its
template's queries had.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TemplateStats:
    """What the operators of one template measured under other parameter values took."""

    texec: float
    size_bytes: float
    measured: int

    @classmethod
    def of(cls, measured: list[tuple[float, int]]) -> TemplateStats:
        return cls(
            statistics.median(t for t, _ in measured),
            statistics.median(s for _, s in measured),
            len(measured),
        )


@dataclass(frozen=True)
class TemplateRecurrence:
    """How the queries of one template under other parameter values recurred: how many
    counted an operator of it (their references), and how many of those had seen the
    same operator, with the same values, before (repeats)."""

    queries: int
    repeats: int


def template_statistics(rows: Iterable[Mapping[str, Any]]) -> dict[str, TemplateStats]:
    """The medians of ``rows`` (template_key, texec, size_bytes), per key. The rows must be
    measured ones (texec and size_bytes set: ``QTree.template_statistics`` selects only
    those), so a key none of whose operators was measured is absent."""
    found: dict[str, list[tuple[float, int]]] = {}
    for row in rows:
        found.setdefault(row["template_key"], []).append((row["texec"], row["size_bytes"]))
    return {key: TemplateStats.of(measured) for key, measured in found.items()}
