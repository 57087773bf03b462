"""Cost decisions for join optimizations: measured numbers in, a choice with its reasons out.

Range joins (``criss.joins.range``): Spark plans a join without equi keys as a nested
loop, evaluating the condition for every pair of rows. The bucket rewrite turns it into an
equi-join on ``(level, bucket)``: the interval side is exploded into the buckets its
interval covers, in a *length class* (level) whose bucket width keeps every interval under
``max_buckets`` buckets, and the other side gets one bucket per level. The model estimates
both plans from the measured interval-length histograms and picks the cheaper one.

The range index (seed paper 001) collects a small interval side to the driver, sorts it
per length class and probes the other side with binary search in Python workers: no
explosion, so it wins when lengths are skewed (a long interval costs one row, not a
level of buckets for every probe row), and it is the only rewrite for one-sided bounds
(``p >= s``), whose matches are a prefix of the sorted values. It pays a collect job,
a broadcast and Arrow traffic through Python per probe row and per emitted pair.
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
#: range index, fitted to experiments/results/joins/range_join_index.json (1M x 50k, a
#: loaded machine: load average ~12 on 2 cores; disjoint 26 s, skewed 50 s repeated):
#: interval rows collected and broadcast, probe rows through a Python worker (Arrow both
#: ways), pairs emitted (take + Arrow back to the JVM + the residual filter), the
#: binary searches per probe row and length class, and the fixed cost (a collect job,
#: the broadcast, Python workers starting)
INDEX_COLLECT_ROWS_PER_SECOND = 1e6
INDEX_PROBE_ROWS_PER_SECOND = 5e4
INDEX_PAIRS_PER_SECOND = 4e5
INDEX_SEARCHES_PER_SECOND = 2e7
INDEX_FIXED_SECONDS = 1.0
#: methods the ``range_join_method`` option (``spark.criss.range.join.method``) may force
METHODS = ("nested", "bucket", "index")
_FORCE_OPTION = "range_join_method / spark.criss.range.join.method"


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

    method: str | None  # "bucket", "index" or None (leave Spark's nested loop)
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

    def index_estimate(self, intervals: SideStats, probe: SideStats) -> dict[str, float]:
        """Emitted pairs and seconds of the range index (keys spread uniformly): a probe
        of length ``lp`` meets class ``c`` intervals starting in a window of its longest
        length plus ``lp``; about 3/4 of them (lengths in [L/2, L]) are emitted."""
        span = max(_span(intervals, probe), 1e-9)
        probe_length = _mean_length(probe)
        scanned = emitted = 0.0
        for c, (n, longest) in intervals.histogram.items():
            window = (longest if c > -1000 else 0.0) + probe_length
            hits = probe.valid * n * min(window / span, 1.0)
            scanned += hits
            emitted += probe.valid * n * min((0.75 * window) / span, 1.0)
        return self._index_seconds(intervals, probe, emitted, scanned)

    def _index_seconds(
        self, intervals: SideStats, probe: SideStats, emitted: float, scanned: float
    ) -> dict[str, float]:
        classes = max(len(intervals.histogram), 1)
        seconds = (
            INDEX_FIXED_SECONDS
            + intervals.rows / INDEX_COLLECT_ROWS_PER_SECOND
            + probe.rows / INDEX_PROBE_ROWS_PER_SECOND
            + probe.rows * classes / INDEX_SEARCHES_PER_SECOND
            + scanned / CANDIDATES_PER_SECOND
            + emitted / INDEX_PAIRS_PER_SECOND
        )
        return {"pairs": emitted, "seconds": seconds, "classes": classes}

    def choose(
        self,
        intervals: SideStats,
        probe: SideStats,
        single_level: bool,
        index_blocked: str | None = None,
        force: str | None = None,
    ) -> RangeJoinChoice:
        """Bucket equi-join, range index or Spark's nested loop, whichever the numbers
        favour. ``index_blocked`` says why the index cannot be used (outer join, interval
        side too large), ``force`` overrides the costs (tests, experiments)."""
        nested_seconds = float(intervals.rows) * float(probe.rows) / NESTED_PAIRS_PER_SECOND
        widths = self.levels(intervals, probe, single_level)
        est = self.estimate(intervals, probe, widths)
        idx = self.index_estimate(intervals, probe)
        details = {
            "interval_rows": intervals.rows,
            "probe_rows": probe.rows,
            "nested_pairs": float(intervals.rows) * float(probe.rows),
            "nested_seconds_est": round(nested_seconds, 3),
            "bucket_seconds_est": round(est["seconds"], 3),
            "widths": list(widths),
            "levels": len(widths),
            "explosion_factor": round(est["explosion_factor"], 3),
            "candidate_pairs_est": round(est["candidate_pairs"]),
            "index_seconds_est": round(idx["seconds"], 3),
            "index_pairs_est": round(idx["pairs"]),
            "index_classes": idx["classes"],
            "index_blocked": index_blocked,
        }
        cap = self.max_buckets_single_level if single_level else self.max_buckets
        costs = {"bucket": est["seconds"]}
        if index_blocked is None:
            costs["index"] = idx["seconds"]
        describe = {
            "bucket": f"bucket equi-join, {len(widths)} level(s), width {widths[0]:.4g}"
            f", explosion x{est['explosion_factor']:.2f}",
            "index": f"range index, {idx['classes']} length class(es)"
            f", ~{idx['pairs']:.3g} pairs emitted",
        }
        method, reason = self._pick(costs, nested_seconds, force, index_blocked)
        details["method"] = method or "nested"
        if method is not None:
            reason = f"{describe[method]}: {reason}"
        return RangeJoinChoice(method, reason, widths, cap, details)

    def choose_one_sided(
        self,
        indexed: SideStats,
        probe: SideStats,
        indexed_is_lower: bool,
        index_blocked: str | None = None,
        force: str | None = None,
    ) -> RangeJoinChoice:
        """Range index or nested loop for a single bound ``lower <= upper``: every probe
        row meets a prefix of the sorted values, so the cost is the output, estimated
        from the two sides' key ranges (uniform keys assumed)."""
        nested_seconds = float(indexed.rows) * float(probe.rows) / NESTED_PAIRS_PER_SECOND
        lower, upper = (indexed, probe) if indexed_is_lower else (probe, indexed)
        fraction = fraction_below(lower, upper)
        pairs = fraction * indexed.valid * probe.valid
        idx = self._index_seconds(indexed, probe, pairs, pairs)
        details = {
            "interval_rows": indexed.rows,
            "probe_rows": probe.rows,
            "nested_pairs": float(indexed.rows) * float(probe.rows),
            "nested_seconds_est": round(nested_seconds, 3),
            "pair_fraction_est": round(fraction, 6),
            "index_seconds_est": round(idx["seconds"], 3),
            "index_pairs_est": round(pairs),
            "index_blocked": index_blocked,
        }
        costs = {} if index_blocked is not None else {"index": idx["seconds"]}
        method, reason = self._pick(costs, nested_seconds, force, index_blocked or "one-sided")
        details["method"] = method or "nested"
        if method is not None:
            reason = f"range index (one-sided, ~{pairs:.3g} pairs emitted): {reason}"
        else:
            reason = f"one-sided bound (like p >= s), {reason}"
        return RangeJoinChoice(method, reason, (), 0, details)

    def _pick(
        self,
        costs: dict[str, float],
        nested_seconds: float,
        force: str | None,
        blocked: str | None,
    ) -> tuple[str | None, str]:
        """The cheapest method against the nested loop (or the forced one when possible)."""
        if force == "nested":
            return None, f"nested loop kept: forced by {_FORCE_OPTION}"
        if force in costs:
            return force, f"forced by {_FORCE_OPTION} (est. {costs[force]:.2f} s)"
        if force is not None:
            why = blocked if force == "index" else "buckets need two-sided bounds"
            return None, f"nested loop kept: forced {force} not possible ({why})"
        if not costs:
            return None, f"nested loop kept: no rewrite possible ({blocked})"
        method = min(costs, key=costs.__getitem__)
        seconds = costs[method]
        others = ", ".join(f"{m} {s:.2f} s" for m, s in sorted(costs.items()) if m != method)
        versus = f"est. {seconds:.2f} s vs nested loop {nested_seconds:.2f} s" + (
            f", {others}" if others else ""
        )
        gain = nested_seconds - seconds
        if nested_seconds >= self.min_ratio * seconds and gain >= self.min_seconds:
            return method, versus
        return None, (
            f"nested loop kept: {versus} (needs x{self.min_ratio} and {self.min_seconds} s saved:"
            " range_join_min_ratio, range_join_min_seconds)"
        )


def fraction_below(lower: SideStats, upper: SideStats, steps: int = 256) -> float:
    """P(lower key <= upper key) for keys uniform over each side's measured range."""
    if lower.min_key is None or upper.min_key is None:
        return 0.0
    a1, b1, a2, b2 = lower.min_key, lower.max_key, upper.min_key, upper.max_key
    total = 0.0
    for i in range(steps):
        x = a1 + (b1 - a1) * (i + 0.5) / steps
        total += 1.0 if x <= a2 else 0.0 if x > b2 else (b2 - x) / max(b2 - a2, 1e-300)
    return total / steps


def _mean_length(stats: SideStats) -> float:
    if not stats.valid:
        return 0.0
    total = sum(n * (0.75 * m) for c, (n, m) in stats.histogram.items() if c > -1000)
    return total / stats.valid


def _ends(intervals: SideStats, probe: SideStats) -> list[float]:
    ends = (intervals.min_key, intervals.max_key, probe.min_key, probe.max_key)
    return [k for k in ends if k is not None]


def _span(intervals: SideStats, probe: SideStats) -> float:
    keys = _ends(intervals, probe)
    return (max(keys) - min(keys)) if keys else 0.0


def length_class(length: float) -> int:
    """The histogram class of a length (the same rule the measurement applies in Spark)."""
    return math.floor(math.log2(length)) if length > 0 else -1075
