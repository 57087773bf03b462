"""What Criss did with one query, as data: per operator, the decision and the numbers it used.

``cs.explain()`` renders a :class:`QueryRecord`; the query log stores its JSON
(:meth:`QueryRecord.to_json`), which ``criss stats``, ``criss ls`` and the dashboard read.
Nobody parses the rendered words.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from criss.policies.reasons import REUSE, Decision

#: Version of the JSON layout stored in the query log.
RECORD_VERSION = 1


@dataclass(frozen=True)
class Served:
    """How one reuse was served, partition by partition."""

    reused: int
    recomputed: int
    total: int
    bytes_read: int
    #: The entry is computed by this query's own action into Spark's cache (a lifted
    #: aggregate), not read: it has no partitions yet.
    by_action: bool = False

    def describe(self) -> str:
        if self.by_action:
            return "computed by its action (Spark's cache), then written"
        text = f"{self.reused}/{self.total} partitions reused"
        return text + (f", {self.recomputed} recomputed" if self.recomputed else "")


@dataclass(frozen=True)
class OperatorStats:
    """The QTree's statistics of an operator when the query was planned."""

    ref: int
    texec: float | None = None
    size_bytes: int | None = None
    rows: int | None = None
    source: str | None = None

    @property
    def measured(self) -> bool:
        return self.texec is not None and self.size_bytes is not None


@dataclass(frozen=True)
class OperatorRecord:
    """One operator of one query: matched? and what was decided (reuse, cache, skip)."""

    path: tuple[int, ...]
    op: str
    fingerprint: str
    decision: Decision
    matched: bool = False
    #: False for an operator the QTree never holds (non-deterministic, above a final ORDER
    #: BY, over an unknown source): neither matched nor new.
    looked_up: bool = True
    #: For a reuse: the entry read, how it serves the operator (exact, project-subset,
    #: exchange-repartition, join-rewrite) and how many of its partitions were reused.
    entry: str | None = None
    rule: str | None = None
    #: For a reuse across parameters: what was computed from the cached rows (see
    #: criss.qtree.subsume.describe_derivation).
    derivation: dict[str, Any] | None = None
    served: Served | None = None
    stats: OperatorStats | None = None
    #: The benefit model's value with disk bandwidth, where statistics exist.
    benefit: float | None = None
    #: A cached entry that could serve this operator but was not read: measured cheaper
    #: to compute than ``min_texec`` ({"entry", "texec", "min_texec"}).
    unread: dict[str, Any] | None = None

    @property
    def reused(self) -> str | None:
        return self.entry if self.decision.action == REUSE else None

    @property
    def cached(self) -> str | None:
        return self.fingerprint if self.decision.action == "cache" else None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": list(self.path),
            "op": self.op,
            "fingerprint": self.fingerprint,
            "decision": self.decision.to_json(),
            "matched": self.matched,
            "looked_up": self.looked_up,
            "entry": self.entry,
            "rule": self.rule,
            "derivation": self.derivation,
            "served": None if self.served is None else vars(self.served),
            "stats": None if self.stats is None else vars(self.stats),
            "benefit": self.benefit,
            "unread": self.unread,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OperatorRecord:
        return cls(
            path=tuple(data["path"]),
            op=data["op"],
            fingerprint=data["fingerprint"],
            decision=Decision.from_json(data["decision"]),
            matched=data.get("matched", False),
            looked_up=data.get("looked_up", True),
            entry=data.get("entry"),
            rule=data.get("rule"),
            derivation=data.get("derivation"),
            served=Served(**data["served"]) if data.get("served") else None,
            stats=OperatorStats(**data["stats"]) if data.get("stats") else None,
            benefit=data.get("benefit"),
            unread=data.get("unread"),
        )


@dataclass
class QueryRecord:
    """One query's trip through Criss; filled in by the planner's phases."""

    sql: str | None
    operators: list[OperatorRecord] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    planning_seconds: float = 0.0
    materialize_seconds: float = 0.0
    fallback: str | None = None
    dry_run: bool = False
    #: The captured JVM plan, kept while the DataFrame lives so explain can label operators.
    captured: Any = None
    #: What each join optimization decided for each join (criss.joins.JoinChoice).
    joins: list[Any] = field(default_factory=list)
    #: Each aggregate weighed for lifting, selection for widening (``kind`` ``selection``)
    #: and result served by a roll-up weighed for caching as itself (``kind`` ``result``):
    #: path, fingerprint and its decision's JSON (criss.policies.lifting).
    lifts: list[dict[str, Any]] = field(default_factory=list)
    #: Why what was chosen for caching was written by a job of Criss's own instead of by the
    #: tasks of the user's action (None: nothing chosen, or written through).
    job_reason: str | None = None
    #: The query's id in the query log, whose counters grow as its action's writes commit.
    log_id: int | None = None
    #: Seconds per phase: capture, joins, match, serve, decide, write-through, prepare and
    #: write (a job's stages below the final one, then the final one written), read,
    #: rewrite; where a query's planning time went, for explain and the replays' overhead
    #: breakdown. ``read`` (building the reads of cached entries) nests in ``serve`` when
    #: it serves a reuse, so it counts in both there.
    phase_seconds: dict[str, float] = field(default_factory=dict)

    def note_weighed(self, node: Any, decision: Decision, kind: str | None = None) -> None:
        """Keep a lift, widening (``kind`` ``selection``) or rolled-up result (``kind``
        ``result``) decision on ``node`` (a PlanNode) in :attr:`lifts`."""
        noted: dict[str, Any] = {"path": list(node.path), "fingerprint": node.fingerprint}
        if kind is not None:
            noted["kind"] = kind
        self.lifts.append(noted | decision.to_json())

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the seconds the block takes to ``phase``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            self.phase_seconds[phase] = self.phase_seconds.get(phase, 0.0) + elapsed

    def to_json(self) -> dict[str, Any]:
        """The record as stored in the query log (the JVM plan left out)."""
        return {
            "version": RECORD_VERSION,
            "dry_run": self.dry_run,
            "fallback": self.fallback,
            "job_reason": self.job_reason,
            "operators": [o.to_json() for o in self.operators],
            "joins": [_join_json(choice) for choice in self.joins],
            "lifts": self.lifts,
        }

    def summary(self) -> dict[str, Any]:
        """The query's counters with its planning and materialization seconds."""
        return {
            **dict(self.counters),
            "planning_seconds": round(self.planning_seconds, 4),
            "materialize_seconds": round(self.materialize_seconds, 4),
            "phase_seconds": {k: round(v, 4) for k, v in self.phase_seconds.items()},
            "fallback": self.fallback,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), default=str)


def operators_from_json(text: str | None) -> list[OperatorRecord]:
    """The operator records of a logged query (none for a log row written before them)."""
    if not text:
        return []
    try:
        data = json.loads(text)
        return [OperatorRecord.from_json(o) for o in data.get("operators", ())]
    except (ValueError, KeyError, TypeError):
        return []


def _join_json(choice: Any) -> dict[str, Any]:
    return {
        "optimization": choice.optimization,
        "path": list(choice.path),
        "join": choice.join,
        "chosen": choice.chosen,
        "reason": choice.reason,
        "details": choice.details,
    }
