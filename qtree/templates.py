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
    """The medians of the measured ``rows`` (template_key, texec, size_bytes) per key;
    keys none of them measured are absent."""
    found: dict[str, list[tuple[float, int]]] = {}
    for row in rows:
        if row["texec"] is not None and row["size_bytes"] is not None:
            found.setdefault(row["template_key"], []).append((row["texec"], row["size_bytes"]))
    return {key: TemplateStats.of(measured) for key, measured in found.items()}


def template_recurrence(
    rows: Iterable[Mapping[str, Any]], asking: Mapping[str, str]
) -> dict[str, TemplateRecurrence]:
    """For each operator of ``asking`` (fingerprint → template key), how the other
    operators of its template among ``rows`` (template_key, fingerprint, ref) recurred.
    Its own references are left out: they are this query's, not its template's past."""
    by_key: dict[str, list[tuple[str, int]]] = {}
    for row in rows:
        by_key.setdefault(row["template_key"], []).append((row["fingerprint"], row["ref"]))
    found = {}
    for fingerprint, key in asking.items():
        others = [ref for other, ref in by_key.get(key, ()) if other != fingerprint]
        if others:
            found[fingerprint] = TemplateRecurrence(sum(others), sum(r - 1 for r in others))
    return found
