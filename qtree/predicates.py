"""Conjunctions of simple conditions on columns, and when one implies another.

A Filter's condition is split into conjuncts, each an :class:`Atom` over column *lineage*
(see ``qtree.lineage``): a comparison of a column with a literal (``<``, ``<=``, ``>``,
``>=``, ``=``), an ``IN`` list of literals, ``IS NOT NULL``, or anything else as an opaque
conjunct known only by its canonical text. :func:`implies` decides whether every row that
satisfies one conjunction satisfies another, which is what lets a cached ``σ[p](X)`` serve
``σ[q](X)`` by applying ``q`` to its rows (filter subsumption).

Only what is certain counts: literals are compared within one data type (a column's
literals take its type after Catalyst's coercions), strings in Spark's binary order (UTF-8
bytes, the same as code points), doubles with NaN above every other value and ``-0.0``
equal to ``0.0``, as Spark orders them. Every atom but an opaque one is false on NULL,
so it also implies ``IS NOT NULL`` of its column.

>>> x_above = lambda v: Atom.compare("x", ">", "integer", str(v))
>>> implies({x_above(5)}, {x_above(3)}), implies({x_above(3)}, {x_above(5)})
(True, False)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

#: Comparison operators and their mirror (``5 < x`` is ``x > 5``).
MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}
RANGE_OPS = frozenset(MIRRORED)
INTEGRAL = frozenset({"byte", "short", "integer", "long"})
FLOATING = frozenset({"float", "double"})
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DECIMAL = re.compile(r"^decimal\(\d+,\d+\)$")


@dataclass(frozen=True)
class Atom:
    """One conjunct. ``kind`` is ``compare`` (``column op value``), ``in`` (``column`` in
    ``values``), ``notnull``, or ``opaque`` (``column`` holds the conjunct's canonical text:
    it implies and is implied only by itself). ``data_type`` is the literals' Spark type
    (its JSON name); values are Catalyst's literal text. ``reads``: the columns (lineage) an
    opaque conjunct reads, which is what applying it again to cached rows needs; not part
    of what the atom is (two spellings over the same columns are one conjunct)."""

    kind: str
    column: str
    op: str = ""
    data_type: str = ""
    values: tuple[str, ...] = ()
    reads: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def compare(cls, column: str, op: str, data_type: str, value: str) -> Atom:
        return cls("compare", column, op, data_type, (value,))

    @classmethod
    def one_of(cls, column: str, data_type: str, values: Iterable[str]) -> Atom:
        return cls("in", column, "in", data_type, tuple(sorted(set(values))))

    @classmethod
    def not_null(cls, column: str) -> Atom:
        return cls("notnull", column)

    @classmethod
    def opaque(cls, text: str, reads: Iterable[str] = ()) -> Atom:
        return cls("opaque", text, reads=tuple(sorted(set(reads))))

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns (lineage) applying this atom reads; () for an opaque atom, whose
        columns only :attr:`reads` knows (and not for atoms read back from before it)."""
        return () if self.kind == "opaque" else (self.column,)

    def identity(self) -> list[Any]:
        """What the atom is, as JSON (without :attr:`reads`): keys digest this."""
        return [self.kind, self.column, self.op, self.data_type, list(self.values)]

    def to_json(self) -> list[Any]:
        return [*self.identity(), list(self.reads)] if self.reads else self.identity()

    @classmethod
    def from_json(cls, data: list[Any]) -> Atom:
        kind, column, op, data_type, values = data[:5]
        reads = tuple(data[5]) if len(data) > 5 else ()
        return cls(kind, column, op, data_type, tuple(values), reads)


def comparable(data_type: str) -> bool:
    """Whether literals of ``data_type`` can be ordered here as Spark orders them."""
    return (
        data_type in INTEGRAL
        or data_type in FLOATING
        or data_type in ("date", "string")
        or bool(_DECIMAL.match(data_type))
    )


def order_key(data_type: str, text: str) -> Any:
    """A Python value ordered as Spark orders the literal ``text`` of ``data_type``;
    ValueError when the text is not one."""
    if data_type in INTEGRAL:
        return int(text)
    if data_type in FLOATING:
        value = float(text)
        return (1, 0.0) if math.isnan(value) else (0, value + 0.0)  # -0.0 == 0.0
    if _DECIMAL.match(data_type):
        try:
            return Decimal(text)
        except InvalidOperation as exc:
            raise ValueError(f"not a decimal: {text!r}") from exc
    if data_type == "date":
        if not _DATE.match(text):
            raise ValueError(f"not an ISO date: {text!r}")
        return text  # zero-padded ISO dates order as text
    if data_type == "string":
        return text  # code point order is UTF-8 byte order
    raise ValueError(f"literals of {data_type} are not ordered here")


def implies(wanted: Iterable[Atom], cached: Iterable[Atom]) -> bool:
    """True when every row satisfying all of ``wanted`` satisfies all of ``cached``."""
    wanted = frozenset(wanted)
    return all(_implied(atom, wanted) for atom in cached)


def _implied(atom: Atom, wanted: frozenset[Atom]) -> bool:
    if atom in wanted:
        return True
    if atom.kind == "opaque":
        return False
    on_column = [w for w in wanted if w.kind != "opaque" and w.column == atom.column]
    if atom.kind == "notnull":
        return bool(on_column)  # every non-opaque atom is false on NULL
    if not comparable(atom.data_type):
        return False
    try:
        allowed = _Allowed.of([w for w in on_column if w.data_type == atom.data_type])
        return allowed is not None and allowed.within(atom)
    except ValueError:
        return False


@dataclass(frozen=True)
class _Bound:
    key: Any
    closed: bool


@dataclass(frozen=True)
class _Allowed:
    """The values of one column a conjunction lets through: an interval, or a finite set."""

    data_type: str
    lower: _Bound | None
    upper: _Bound | None
    points: frozenset | None  # order keys, when the conjunction pins the column to a set

    @classmethod
    def of(cls, atoms: list[Atom]) -> _Allowed | None:
        """What ``atoms`` (all on one column, of one type) let through; None if nothing
        constrains the column."""
        if not atoms:
            return None
        data_type = atoms[0].data_type
        lower = upper = None
        points: frozenset | None = None
        for atom in atoms:
            keys = frozenset(order_key(data_type, v) for v in atom.values)
            if atom.kind == "in" or atom.op == "=":
                points = keys if points is None else points & keys
            elif atom.op in (">", ">="):
                lower = _tighter(lower, _Bound(next(iter(keys)), atom.op == ">="), higher=True)
            elif atom.op in ("<", "<="):
                upper = _tighter(upper, _Bound(next(iter(keys)), atom.op == "<="), higher=False)
        allowed = cls(data_type, lower, upper, None)
        if points is not None:
            points = frozenset(p for p in points if allowed._in_interval(p))
            return cls(data_type, lower, upper, points)
        return allowed

    def _in_interval(self, key: Any) -> bool:
        if self.lower is not None and (
            key < self.lower.key or (key == self.lower.key and not self.lower.closed)
        ):
            return False
        return self.upper is None or not (
            key > self.upper.key or (key == self.upper.key and not self.upper.closed)
        )

    def within(self, atom: Atom) -> bool:
        """Whether every value let through satisfies ``atom`` (a compare or in atom)."""
        keys = [order_key(self.data_type, v) for v in atom.values]
        if self.points is not None:
            return all(_satisfies(p, atom.kind, atom.op, keys) for p in self.points)
        if atom.kind == "in" or atom.op == "=":
            return False  # an interval of more than one value
        bound = _Bound(keys[0], atom.op in (">=", "<="))
        if atom.op in (">", ">="):
            return self.lower is not None and _at_least_as_tight(self.lower, bound, higher=True)
        return self.upper is not None and _at_least_as_tight(self.upper, bound, higher=False)


def _satisfies(key: Any, kind: str, op: str, keys: list[Any]) -> bool:
    if kind == "in" or op == "=":
        return key in keys
    value = keys[0]
    return {
        ">": key > value,
        ">=": key >= value,
        "<": key < value,
        "<=": key <= value,
    }[op]


def _tighter(current: _Bound | None, new: _Bound, *, higher: bool) -> _Bound:
    if current is None:
        return new
    return new if _at_least_as_tight(new, current, higher=higher) else current


def _at_least_as_tight(bound: _Bound, than: _Bound, *, higher: bool) -> bool:
    """Whether the half-line ``bound`` lets through nothing that ``than`` keeps out
    (``higher``: lower bounds, ``x > k``; else upper bounds)."""
    if bound.key != than.key:
        return bound.key > than.key if higher else bound.key < than.key
    return than.closed or not bound.closed
