"""Where cached data goes: the paper's write, replacement and promotion rules (§1.5).

Plain numbers in, decisions out. A *unit* is what is placed or evicted as a whole: one
partition (partition granularity) or every partition of an operator result (operator
granularity). Tiers are ordered fastest first (memory, then disk).

- **Write**: a unit goes to the first tier with room for it. When none has room,
  replacement runs, fastest tier first.
- **Replacement**: in a tier, evict units lowest benefit per byte first (benefit *in that
  tier*) until the new unit fits, provided what is evicted is together worth less than
  the new unit in that tier. A victim of a faster tier
  is demoted to the next tier (itself placed by the same rule there); a victim of the
  slowest tier is deleted. If a tier cannot free enough room, the next tier is tried;
  if none can, the unit is not cached.
- **Promotion**: a reused unit in a slower tier moves to the fastest tier when it fits
  there, or when evicting lower-benefit units (benefit with the fastest tier's
  bandwidth) frees enough room.

Pinned units (read by a live DataFrame) are never moved or evicted. Quotas are never
exceeded, except transiently by the one unit being promoted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unit:
    """A partition (or a whole operator result) as the placement rules see it."""

    key: str
    indices: tuple[int, ...]
    bytes: int
    #: Benefit of keeping this unit in each tier (the benefit model with that tier's bandwidth).
    benefit: Mapping[str, float]
    #: The tier holding it now; None for data not yet stored.
    tier: str | None = None
    pinned: bool = False

    @property
    def ident(self) -> tuple[str, tuple[int, ...]]:
        return (self.key, self.indices)


@dataclass(frozen=True)
class TierRoom:
    name: str
    capacity: int | None
    used: int

    def free(self) -> float:
        return float("inf") if self.capacity is None else self.capacity - self.used


@dataclass(frozen=True)
class Move:
    """Move ``unit`` to tier ``to``; ``to`` None means delete it."""

    unit: Unit
    to: str | None


@dataclass(frozen=True)
class Placement:
    """Decision for one unit: the tier it goes to (None: not stored) after ``steps``."""

    tier: str | None
    steps: tuple[Move, ...] = ()

    @property
    def evicted(self) -> list[Unit]:
        return [m.unit for m in self.steps if m.to is None]

    @property
    def demoted(self) -> list[Unit]:
        return [m.unit for m in self.steps if m.to is not None]


@dataclass
class _Space:
    """A scratch copy of the cache space that decisions are simulated on."""

    order: list[str]
    free: dict[str, float]
    residents: dict[str, list[Unit]]
    steps: list[Move] = field(default_factory=list)

    @classmethod
    def of(cls, tiers: Sequence[TierRoom], residents: Sequence[Unit]) -> _Space:
        by_tier: dict[str, list[Unit]] = {t.name: [] for t in tiers}
        for unit in residents:
            if unit.tier in by_tier:
                by_tier[unit.tier].append(unit)
        return cls([t.name for t in tiers], {t.name: t.free() for t in tiers}, by_tier)

    def below(self, tier: str) -> str | None:
        i = self.order.index(tier)
        return self.order[i + 1] if i + 1 < len(self.order) else None

    def victims(self, tier: str, need: float, threshold: float, exclude=()) -> list[Unit] | None:
        """Units of ``tier`` to evict for ``need`` bytes, worth less together than ``threshold``.

        Candidates go lowest benefit per byte first, so many small units of a valuable result
        are not traded for one large unit of a cheap one. None: no such set exists.
        """
        if need <= 0:
            return []
        if threshold <= 0:
            return None  # a unit not worth keeping displaces nothing
        chosen: list[Unit] = []
        freed, lost = 0, 0.0
        candidates = [u for u in self.residents[tier] if not u.pinned and u.ident not in exclude]
        for unit in sorted(candidates, key=lambda u: u.benefit.get(tier, 0.0) / max(u.bytes, 1)):
            lost += max(unit.benefit.get(tier, 0.0), 0.0)
            if lost >= threshold and unit.benefit.get(tier, 0.0) > 0:
                return None
            chosen.append(unit)
            freed += unit.bytes
            if freed >= need:
                return chosen
        return None

    def remove(self, unit: Unit, tier: str) -> None:
        self.residents[tier] = [u for u in self.residents[tier] if u.ident != unit.ident]
        self.free[tier] += unit.bytes

    def add(self, unit: Unit, tier: str) -> None:
        self.residents[tier].append(unit)
        self.free[tier] -= unit.bytes

    def make_room(self, tier: str, need: float, threshold: float, exclude=()) -> bool:
        victims = self.victims(tier, need, threshold, exclude)
        if victims is None:
            return False
        for victim in victims:
            self.remove(victim, tier)
            self.steps.append(Move(victim, self.demote(victim, tier)))
        return True

    def demote(self, victim: Unit, tier: str) -> str | None:
        lower = self.below(tier)
        if lower is None:
            return None
        if self.free[lower] < victim.bytes and not self.make_room(
            lower,
            victim.bytes - self.free[lower],
            victim.benefit.get(lower, 0.0),
            exclude={victim.ident},
        ):
            return None
        self.add(victim, lower)
        return lower


def plan_write(unit: Unit, tiers: Sequence[TierRoom], residents: Sequence[Unit]) -> Placement:
    """Where a new unit goes, and what must be demoted or evicted first."""
    space = _Space.of(tiers, residents)
    for tier in space.order:
        if space.free[tier] >= unit.bytes:
            return Placement(tier)
    for tier in space.order:
        trial = _Space.of(tiers, residents)
        if trial.make_room(tier, unit.bytes - trial.free[tier], unit.benefit.get(tier, 0.0)):
            return Placement(tier, tuple(trial.steps))
    return Placement(None)


def plan_promotion(unit: Unit, tiers: Sequence[TierRoom], residents: Sequence[Unit]) -> Placement:
    """Whether a reused unit in a slower tier moves to the fastest tier (None: it stays)."""
    space = _Space.of(tiers, residents)
    fastest = space.order[0]
    if unit.tier is None or unit.tier == fastest or unit.pinned:
        return Placement(None)
    space.remove(unit, unit.tier)
    need = unit.bytes - space.free[fastest]
    if need > 0 and not space.make_room(
        fastest, need, unit.benefit.get(fastest, 0.0), exclude={unit.ident}
    ):
        return Placement(None)
    return Placement(fastest, tuple(space.steps))
