"""Cost decisions for join optimizations: measured numbers in, a choice with its reasons out.

Range joins (``criss.joins.range``): Spark plans a join without equi keys as a nested
loop, evaluating the condition for every pair of rows. The bucket rewrite turns it into an
equi-join on ``(level, bucket)``: the interval side is exploded into the buckets its
interval covers, in a *length class* (level) whose bucket width keeps every interval under
``max_buckets`` buckets, and the other side gets one bucket per level. The model estimates
both plans from the measured interval-length histograms and picks the cheaper one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: Spark's nested loop evaluates about this many (pair × condition) per second per plan
#: (590 s for 1.5M × 100k on this machine kind, see docs/notes measurements).
NESTED_PAIRS_PER_SECOND = 2.5e8
#: an exploded row through a shuffle/hash equi-join, and a candidate pair checked there
BUCKET_ROWS_PER_SECOND = 4e6
CANDIDATES_PER_SECOND = 5e7


@dataclass(frozen=True)
class SideStats:
    """One join input's interval ends in the key domain (doubles), measured once.

    ``histogram`` maps a length class (``floor(log2(length))``, or -1075 for length 0) to
    ``(rows, longest length)``; rows with a NULL end are not in it.
    """

    rows: int
    valid: int
    min_key: float | None
    max_key: float | None
    histogram: dict[int, tuple[int, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "valid": self.valid,
            "min_key": self.min_key,
            "max_key": self.max_key,
            "histogram": [[c, n, m] for c, (n, m) in sorted(self.histogram.items())],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SideStats:
        histogram = {int(c): (int(n), float(m)) for c, n, m in data["histogram"]}
        return cls(data["rows"], data["valid"], data["min_key"], data["max_key"], histogram)

    @property
    def max_length(self) -> float:
        return max((m for _, m in self.histogram.values()), default=0.0)

    def median_length(self) -> float:
        """Upper end of the length class holding the median row."""
        seen, half = 0, self.valid / 2
        for c in sorted(self.histogram):
            n, m = self.histogram[c]
            seen += n
            if seen >= half:
                return m
        return 0.0


@dataclass
class RangeJoinChoice:
    """The decision for one range join, with the numbers it was made from."""

    method: str | None  # "bucket" or None (leave Spark's nested loop)
    reason: str
    widths: tuple[float, ...] = ()
    max_buckets: int = 0
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RangeJoinModel:
    """Parameters of the range-join choice."""

    #: most buckets one interval may be exploded into (a longer one goes up a level)
    max_buckets: int = 16
    #: outer joins use one level (one probe row per preserved row); its cap is looser
    max_buckets_single_level: int = 1024
    #: the rewrite must be this much cheaper than the nested loop ...
    min_ratio: float = 2.0
    #: ... and save at least this many seconds (its own fixed costs: a measurement job,
    #: a shuffle); tests set it to 0 to rewrite small joins.
    min_seconds: float = 0.5

    def levels(self, intervals: SideStats, probe: SideStats, single: bool) -> tuple[float, ...]:
        """Bucket widths of the length classes, finest first."""
        span = _span(intervals, probe)
        magnitude = max((abs(k) for k in _ends(intervals, probe)), default=0.0)
        # buckets no finer than the typical length, the mean gap, or what keeps
        # ``key / width`` well inside a long (ANSI casts fail on overflow)
        base = max(
            intervals.median_length(), span / max(intervals.valid, 1), magnitude / 2**50, 1e-9
        )
        if single:
            cap = self.max_buckets_single_level
            return (max(base, intervals.max_length / cap, probe.max_length / cap),)
        k = self.max_buckets
        widths = [base]
        for c in sorted(intervals.histogram):
            longest = intervals.histogram[c][1]
            if longest > k * widths[-1]:
                widths.append(max(widths[-1] * k, longest / k))
        return tuple(widths)

    def level_of(self, length: float, widths: tuple[float, ...]) -> int:
        """The level an interval of ``length`` goes to (same rule as the Spark expression)."""
        for i, w in enumerate(widths[:-1]):
            if length <= self.max_buckets * w:
                return i
        return len(widths) - 1

    def estimate(
        self, intervals: SideStats, probe: SideStats, widths: tuple[float, ...]
    ) -> dict[str, float]:
        """Exploded rows, candidate pairs and seconds of the bucket plan (keys spread
        uniformly over the span: skewed keys make candidates grow)."""
        span = max(_span(intervals, probe), 1e-9)
        exploded_i = [0.0] * len(widths)
        for c, (n, longest) in intervals.histogram.items():
            length = min(longest, 1.5 * 2.0**c) if c > -1000 else 0.0
            level = self.level_of(longest, widths)
            exploded_i[level] += n * (length / widths[level] + 1)
        probe_lengths = [
            (n, min(m, 1.5 * 2.0**c) if c > -1000 else 0.0) for c, (n, m) in probe.histogram.items()
        ]
        exploded_p = [sum(n * (ln / w + 1) for n, ln in probe_lengths) for w in widths]
        candidates = sum(
            exploded_p[i] * exploded_i[i] / (span / w + 1) for i, w in enumerate(widths)
        )
        rows = sum(exploded_i) + sum(exploded_p)
        seconds = rows / BUCKET_ROWS_PER_SECOND + candidates / CANDIDATES_PER_SECOND
        return {
            "exploded_interval_rows": rows - sum(exploded_p),
            "exploded_probe_rows": sum(exploded_p),
            "explosion_factor": (sum(exploded_i) / intervals.valid) if intervals.valid else 0.0,
            "candidate_pairs": candidates,
            "seconds": seconds,
        }

    def choose(self, intervals: SideStats, probe: SideStats, single_level: bool) -> RangeJoinChoice:
        """Bucket equi-join or Spark's nested loop, whichever the numbers favour."""
        nested_pairs = float(intervals.rows) * float(probe.rows)
        nested_seconds = nested_pairs / NESTED_PAIRS_PER_SECOND
        widths = self.levels(intervals, probe, single_level)
        est = self.estimate(intervals, probe, widths)
        details = {
            "interval_rows": intervals.rows,
            "probe_rows": probe.rows,
            "nested_pairs": nested_pairs,
            "nested_seconds_est": round(nested_seconds, 3),
            "bucket_seconds_est": round(est["seconds"], 3),
            "widths": list(widths),
            "levels": len(widths),
            "explosion_factor": round(est["explosion_factor"], 3),
            "candidate_pairs_est": round(est["candidate_pairs"]),
        }
        cap = self.max_buckets_single_level if single_level else self.max_buckets
        gain = nested_seconds - est["seconds"]
        if nested_seconds >= self.min_ratio * est["seconds"] and gain >= self.min_seconds:
            reason = (
                f"bucket equi-join, {len(widths)} level(s), width {widths[0]:.4g}"
                f", explosion x{est['explosion_factor']:.2f}: est. {est['seconds']:.2f} s"
                f" vs nested loop {nested_seconds:.2f} s"
            )
            return RangeJoinChoice("bucket", reason, widths, cap, details)
        reason = (
            f"nested loop kept: est. {nested_seconds:.2f} s vs bucket join"
            f" {est['seconds']:.2f} s (needs x{self.min_ratio} and {self.min_seconds} s saved)"
        )
        return RangeJoinChoice(None, reason, widths, cap, details)


def _ends(intervals: SideStats, probe: SideStats) -> list[float]:
    ends = (intervals.min_key, intervals.max_key, probe.min_key, probe.max_key)
    return [k for k in ends if k is not None]


def _span(intervals: SideStats, probe: SideStats) -> float:
    keys = _ends(intervals, probe)
    return (max(keys) - min(keys)) if keys else 0.0


def length_class(length: float) -> int:
    """The histogram class of a length (the same rule the measurement applies in Spark)."""
    return math.floor(math.log2(length)) if length > 0 else -1075
