"""Range joins as bucket equi-joins with length classes (seed paper 001, eBay Carmel).

Spark plans ``p BETWEEN s AND e`` or ``a.s <= b.e AND b.s <= a.e`` without equi keys as a
nested loop over all pairs of rows. Here such a join becomes an equi-join on
``(level, bucket)``: every row's interval ``[lo, hi]`` (a point is ``lo = hi``) is mapped to
the key domain (numbers as double, NaN and infinities of floating-point ends mapped to
finite limits, dates by ``unix_date``, timestamps by ``unix_micros``),
the interval side is exploded into the buckets ``floor(lo / w) .. floor(hi / w)`` of its
length class (level ``l`` has width ``w_l``; no interval covers more than ~``max_buckets``
buckets), the other side gets its buckets at every level, and the join keeps the whole
original condition as its residual, so the answer is Spark's. A pair of overlapping
intervals meets in several buckets; only the bucket holding ``max(lo_a, lo_b)`` emits it.

Bucket widths come from one aggregation per input (row count, key span and a log2 length
histogram), stored in the QTree's metadata under the input's fingerprint, so a repeated
query does not measure again; the exploded interval side is a plain DataFrame subtree, which
Criss's own cache can store and reuse like any operator.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from typing import TYPE_CHECKING, Any

from criss.joins import JoinChoice, Verdicts
from criss.joins.range_indexed import index_blocked, index_join
from criss.policies.joins import RangeJoinModel, SideStats
from criss.qtree.joins import (
    Bound,
    Endpoint,
    RangeCondition,
    detect_range,
    equi_keys,
    has_comparison,
    mentions_comparison,
    one_sided_bound,
    signature,
)
from criss.qtree.plan import Expr

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from criss.bridge import JoinPlan, JoinSite
    from criss.joins import JoinContext

log = logging.getLogger("criss.joins.range")

_JOIN_TYPES = {"INNER": "inner", "CROSS": "inner", "LEFT OUTER": "left", "RIGHT OUTER": "right"}
_PRESERVED = {"LEFT OUTER": "left", "RIGHT OUTER": "right"}
_UNMATCHED = "joined inner, plus the {} side's unmatched rows (NULL-safe anti-join on whole rows)"
_NUMERIC = ("byte", "short", "integer", "long", "decimal", "float", "double")
#: Floating-point ends enter the key domain through a monotone map into finite doubles:
#: NaN (which Spark orders above +Infinity) and +Infinity to +FLOAT_KEY_LIMIT, -Infinity to
#: -FLOAT_KEY_LIMIT. Every pair the condition accepts still shares a bucket or meets in the
#: index (the map keeps order, ties only add candidates), bucket numbers and index bounds
#: stay finite (differences of keys cannot overflow), and the original condition decides.
FLOAT_KEY_LIMIT = 2.0**1000
_FLOATING = ("float", "double")


class RangeJoin(Verdicts):
    """The ``range_join`` optimization (see the module docstring)."""

    name = "range_join"
    needs_key_counts = False

    def __init__(self, model: RangeJoinModel | None = None) -> None:
        self.model = model

    def apply(
        self, plan: JoinPlan, site: JoinSite, context: JoinContext
    ) -> tuple[DataFrame | None, JoinChoice | None]:
        if not _may_compare(site, context) or not has_comparison(site.condition):
            return None, None  # most joins: no range predicate, and no JVM calls spent on them
        left_ids = {c[2] for c in site.left.columns}
        right_ids = {c[2] for c in site.right.columns}
        found = detect_range(site.condition, left_ids, right_ids)
        bound = None if found else one_sided_bound(site.condition, left_ids, right_ids)
        if found is None and bound is None:
            return None, None
        if equi_keys(site.condition, left_ids, right_ids):
            return None, self._skip(site, "has equi keys: Spark's hash/sort-merge join applies")
        if site.join_type not in _JOIN_TYPES:
            return None, self._skip(site, f"{site.join_type} join is not rewritten")
        if found is None:
            return self._plan_one_sided(plan, site, bound, context)  # type: ignore[arg-type]
        return self._plan(plan, site, found, context)

    # --- decision -------------------------------------------------------------------------

    def _plan(
        self, plan: JoinPlan, site: JoinSite, found: RangeCondition, context: JoinContext
    ) -> tuple[DataFrame | None, JoinChoice | None]:
        sides = {w: _Side(plan, site, w, found.ends[w]) for w in ("left", "right")}
        kinds = {s.domain() for s in sides.values()}
        if None in kinds or len(kinds) != 1:
            types = {w: s.types for w, s in sides.items()}
            return None, self._skip(site, f"bound types {types} not bucketable (mixed kinds)")
        preserved = _PRESERVED.get(site.join_type)
        unmatchable = _unmatchable(site, preserved)
        if unmatchable:
            return None, self._skip(site, unmatchable)
        # an outer join preserving the point side keeps one bucket row per point and joins
        # outer directly; any other outer join is joined inner, plus the preserved side's
        # unmatched rows (see _with_unmatched)
        direct = preserved is not None and found.point_side == preserved
        stats = {w: s.stats(context) for w, s in sides.items()}
        interval = found.interval_side
        if found.point_side is None and stats["left"].rows < stats["right"].rows:
            interval = "left"
        probe = "left" if interval == "right" else "right"
        model = self.model or _model(context)
        decision = model.choose(
            stats[interval],
            stats[probe],
            single_level=direct,
            index_blocked=index_blocked(site, sides[interval], stats[interval], context),
            force=_forced(context),
        )
        details = dict(decision.details, kind=found.kind, interval_side=interval)
        reason = decision.reason
        details["measured"] = {w: s.measured for w, s in sides.items()}
        if decision.method == "bucket":
            how = _JOIN_TYPES[site.join_type] if direct else "inner"
            frame = _bucket_join(
                plan, site, sides[probe], sides[interval], decision.widths, model, found, how
            )
        elif decision.method == "index":
            frame = index_join(plan, site, sides[probe], sides[interval], None, context, details)
        else:
            frame = None
        if not (direct and decision.method == "bucket"):
            frame, reason = _with_unmatched(site, sides, frame, preserved, reason)
        return self._result(site, frame, decision.method, reason, details, context)

    def _plan_one_sided(
        self, plan: JoinPlan, site: JoinSite, bound: Bound, context: JoinContext
    ) -> tuple[DataFrame | None, JoinChoice | None]:
        """``lower <= upper`` only: the smaller side is indexed, the other probes it."""
        lower = bound.lower_side
        upper = "right" if lower == "left" else "left"
        ends = {
            lower: (Endpoint(bound.lower, bound.lower_path),) * 2,
            upper: (Endpoint(bound.upper, bound.upper_path),) * 2,
        }
        sides = {w: _Side(plan, site, w, ends[w]) for w in ("left", "right")}
        kinds = {s.domain() for s in sides.values()}
        if None in kinds or len(kinds) != 1:
            types = {w: s.types for w, s in sides.items()}
            return None, self._skip(site, f"one-sided bound types {types} not indexable")
        preserved = _PRESERVED.get(site.join_type)
        unmatchable = _unmatchable(site, preserved)
        if unmatchable:
            return None, self._skip(site, unmatchable)
        stats = {w: s.stats(context) for w, s in sides.items()}
        indexed = "left" if stats["left"].rows < stats["right"].rows else "right"
        probe = "left" if indexed == "right" else "right"
        model = self.model or _model(context)
        decision = model.choose_one_sided(
            stats[indexed],
            stats[probe],
            indexed_is_lower=indexed == lower,
            index_blocked=index_blocked(site, sides[indexed], stats[indexed], context),
            force=_forced(context),
        )
        details = dict(decision.details, kind="one-sided", interval_side=indexed)
        reason = decision.reason
        details["measured"] = {w: s.measured for w, s in sides.items()}
        frame = None
        if decision.method == "index":
            frame = index_join(
                plan, site, sides[probe], sides[indexed], indexed == lower, context, details
            )
        frame, reason = _with_unmatched(site, sides, frame, preserved, reason)
        return self._result(site, frame, decision.method, reason, details, context)

    def _result(
        self,
        site: JoinSite,
        frame: DataFrame | None,
        method: str | None,
        reason: str,
        details: dict[str, Any],
        context: JoinContext,
    ) -> tuple[DataFrame | None, JoinChoice]:
        if frame is None:
            if method is not None:  # the index found the collected side over its budget
                reason = f"nested loop kept: {details.get('index_fallback', reason)}"
            context.counters["range_join_kept_nested_loop"] += 1
            return None, self._choice(site, False, reason, details)
        context.counters[f"range_join_{method}"] += 1
        return frame, self._choice(site, True, reason, details)

    def _skip(self, site: JoinSite, reason: str) -> JoinChoice:
        return self._choice(site, False, reason)


def _model(context: JoinContext) -> RangeJoinModel:
    """The default model with the session's ``range_join_min_seconds`` and
    ``range_join_min_ratio`` (tests set 0 and 1 to rewrite tiny joins)."""
    options = context.session.options
    return RangeJoinModel(
        min_seconds=options.range_join_min_seconds, min_ratio=options.range_join_min_ratio
    )


def _forced(context: JoinContext) -> str | None:
    """The method ``range_join_method`` forces, or None for ``auto`` (the cost choice).
    CrissOptions rejected any other value when the session was created."""
    method = context.session.options.range_join_method
    return None if method == "auto" else method


# --- one input --------------------------------------------------------------------------------


class _Side:
    """One join input with its interval ends as Columns over its own frame."""

    def __init__(
        self, plan: JoinPlan, site: JoinSite, which: str, ends: tuple[Endpoint, Endpoint]
    ) -> None:
        self.plan, self.site, self.which = plan, site, which
        lo, hi = ends
        self.ends = (lo, hi)
        self.frame = plan.side(site.path, which)
        self.lo = plan.condition_column(site.path, lo.path)
        self.hi = plan.condition_column(site.path, hi.path)
        fields = self.frame.select(self.lo, self.hi).schema.fields
        self.types = tuple(f.dataType.typeName() for f in fields)
        self.measured = False

    def domain(self) -> str | None:
        """ "number", "date" or "timestamp" when both ends are of it, else None."""
        kinds = {"number" if t in _NUMERIC else t for t in self.types}
        if len(kinds) == 1 and kinds <= {"number", "date", "timestamp"}:
            return kinds.pop()
        return None

    def keys(self) -> tuple[Column, Column]:
        """The interval's hull ``[min, max]`` in the key domain; NULL when an end is NULL."""
        from pyspark.sql import functions as F

        a, b = _key(self.lo, self.types[0]), _key(self.hi, self.types[1])
        valid = self.lo.isNotNull() & self.hi.isNotNull()
        return F.when(valid, F.least(a, b)), F.when(valid, F.greatest(a, b))

    def meta_key(self, context: JoinContext) -> str:
        facts = context.side_facts(self.plan, self.site.path, self.which)
        side = self.site.side(self.which)
        columns = {c[2]: i for i, c in enumerate(side.columns)}
        ends = "|".join(signature(e.expr, columns) for e in self.ends)
        digest = hashlib.sha256(ends.encode()).hexdigest()[:16]
        return f"range_join:stats:{facts.fingerprint}:{digest}"

    def stats(self, context: JoinContext) -> SideStats:
        """Measured once per input fingerprint and bound expressions, then read back."""
        qtree = context.session.qtree
        key = self.meta_key(context)
        stored = qtree.meta(key)
        if stored is not None:
            context.counters["range_join_stats_reused"] += 1
            return SideStats.from_json(stored)
        found = _measure(self.frame, *self.keys())
        qtree.set_meta(key, found.to_json())
        self.measured = True
        context.counters["range_join_stats_measured"] += 1
        return found


def _key(column: Column, type_name: str) -> Column:
    from pyspark.sql import functions as F

    if type_name == "date":
        return F.unix_date(column).cast("double")
    if type_name == "timestamp":
        return F.unix_micros(column).cast("double")
    if type_name in _FLOATING:
        value, limit = column.cast("double"), F.lit(FLOAT_KEY_LIMIT)
        return F.when(F.isnan(value), limit).otherwise(F.least(F.greatest(value, -limit), limit))
    return column.cast("double")


def _measure(frame: DataFrame, lo: Column, hi: Column) -> SideStats:
    """Row count, key span and log2 length histogram in one aggregation."""
    from pyspark.sql import functions as F

    spans = frame.select(lo.alias("lo"), hi.alias("hi")).withColumn(
        "len", F.col("hi") - F.col("lo")
    )
    length_class = (
        F.when(F.col("len").isNull(), None)
        .when(F.col("len") > 0, F.floor(F.log2(F.col("len"))))
        .otherwise(F.lit(-1075))
    )
    rows = (
        spans.groupBy(length_class.alias("c"))
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.min("lo").alias("lo"),
            F.max("hi").alias("hi"),
            F.max("len").alias("longest"),
        )
        .collect()
    )
    valid = [r for r in rows if r["c"] is not None]
    return SideStats(
        rows=sum(r["n"] for r in rows),
        valid=sum(r["n"] for r in valid),
        min_key=min((r["lo"] for r in valid), default=None),
        max_key=max((r["hi"] for r in valid), default=None),
        histogram={int(r["c"]): (int(r["n"]), float(r["longest"])) for r in valid},
    )


# --- the rewrite ------------------------------------------------------------------------------


def _tag_level(level: int) -> Any:
    """``b -> struct(level, b)`` (one-argument lambda: PySpark's ``transform`` passes the
    element index too when the function takes two parameters)."""
    from pyspark.sql import functions as F

    return lambda b: F.struct(F.lit(level).alias("l"), b.alias("b"))


def _bucket_join(
    plan: JoinPlan,
    site: JoinSite,
    probe: _Side,
    interval: _Side,
    widths: tuple[float, ...],
    model: RangeJoinModel,
    found: RangeCondition,
    how: str,
) -> DataFrame:
    """``probe`` (one row per level and bucket) ⋈ ``interval`` (exploded into the buckets
    of its level) on (level, bucket), with the original condition as residual; ``how`` is
    the DataFrame join type."""
    from pyspark.sql import functions as F

    lo_i, hi_i = interval.keys()
    length = hi_i - lo_i
    level = F.lit(len(widths) - 1)
    for i in reversed(range(len(widths) - 1)):
        level = F.when(length <= F.lit(model.max_buckets * widths[i]), F.lit(i)).otherwise(level)
    width = F.element_at(F.array(*[F.lit(w) for w in widths]), level + 1)
    exploded = (
        interval.frame.withColumn("__rj_loi", lo_i)
        .withColumn("__rj_li", level)
        .withColumn("__rj_wi", width)
        .withColumn(
            "__rj_bi",
            F.explode(
                F.sequence(F.floor(lo_i / F.col("__rj_wi")), F.floor(hi_i / F.col("__rj_wi")))
            ),
        )
    )
    lo_p, hi_p = probe.keys()
    per_level = [
        F.transform(
            F.sequence(F.floor(lo_p / F.lit(w)), F.floor(hi_p / F.lit(w))),
            _tag_level(i),
        )
        for i, w in enumerate(widths)
    ]
    if found.point_side is not None and len(widths) == 1:
        # one row per probe row (what an outer join preserving it needs); NULL → no bucket
        probed = probe.frame.withColumn("__rj_lp", F.lit(0)).withColumn(
            "__rj_bp", F.floor(lo_p / F.lit(widths[0]))
        )
    else:
        probed = (
            probe.frame.withColumn("__rj_lop", lo_p)
            .withColumn("__rj_s", F.explode(F.flatten(F.array(*per_level))))
            .withColumn("__rj_lp", F.col("__rj_s.l"))
            .withColumn("__rj_bp", F.col("__rj_s.b"))
            .drop("__rj_s")
        )
    on = (F.col("__rj_lp") == F.col("__rj_li")) & (F.col("__rj_bp") == F.col("__rj_bi"))
    if found.point_side is None:  # overlapping intervals meet in several buckets: emit once
        first = F.floor(F.greatest(F.col("__rj_lop"), F.col("__rj_loi")) / F.col("__rj_wi"))
        on = on & (F.col("__rj_bi") == first)
    on = on & plan.condition_column(site.path)
    left, right = (probed, exploded) if probe.which == "left" else (exploded, probed)
    return left.join(right, on, how)


def _unmatchable(site: JoinSite, preserved: str | None) -> str | None:
    """Why the preserved side's unmatched rows cannot be found by comparing whole rows."""
    if preserved is None:
        return None
    columns = site.left.columns if preserved == "left" else site.right.columns
    maps = [name for name, data_type, _ in columns if '"map"' in json.dumps(data_type)]
    if maps:
        return f"outer join preserves map column(s) {maps}, which rows cannot be compared by"
    nested = [
        name
        for name, data_type, _ in columns
        if not isinstance(data_type, str) and re.search(r'"(float|double)"', json.dumps(data_type))
    ]
    if nested:
        return (
            f"outer join preserves nested floating-point column(s) {nested}: equality "
            "would not tell -0.0 from 0.0"
        )
    return None


def _exact(column: Column, data_type: Any) -> Column:
    """A value to compare rows by: floating point as its text, since Spark's equality
    treats -0.0 and 0.0 as equal and a condition may not (``cast(x as string)``)."""
    return column.cast("string") if data_type in _FLOATING else column


def _with_unmatched(
    site: JoinSite,
    sides: dict[str, _Side],
    inner: DataFrame | None,
    preserved: str | None,
    reason: str,
) -> tuple[DataFrame | None, str]:
    """An outer join from its ``inner`` pairs: these plus each row of the ``preserved``
    side that met no row, with NULLs for the other side's columns (and ``reason`` saying
    so); ``inner`` and ``reason`` as they are for an inner join or no rewrite.

    Rows carry no identity, so a preserved row is unmatched when no equal row (NULL-safe
    equality on every column, floating point by its text) occurs among the matched ones.
    That is exact: equal rows meet the same rows of the other side, whatever the condition.
    The preserved side is the exploded or indexed one here, so an inner join is the only
    way to pair it.
    """
    if inner is None or preserved is None:
        return inner, reason
    from functools import reduce

    from pyspark.sql import functions as F

    plan = sides[preserved].plan
    other = "right" if preserved == "left" else "left"
    columns = {"left": site.left.columns, "right": site.right.columns}
    attrs = {
        w: [plan.attribute_column(site.path, w, i) for i in range(len(columns[w]))]
        for w in ("left", "right")
    }
    kept = attrs[preserved]
    exact = [_exact(a, t) for a, (_, t, _) in zip(kept, columns[preserved], strict=True)]
    matched = inner.select(*[e.alias(f"__rj_m{i}") for i, e in enumerate(exact)]).distinct()
    same = reduce(
        lambda acc, c: acc & c, [e.eqNullSafe(F.col(f"__rj_m{i}")) for i, e in enumerate(exact)]
    )
    lonely = sides[preserved].frame.join(matched, same, "left_anti")
    types = sides[other].frame.schema.fields
    nulls = [
        F.lit(None).cast(f.dataType).alias(name)
        for f, (name, _, _) in zip(types, columns[other], strict=True)
    ]
    pads = {preserved: kept, other: nulls}
    both = inner.select(*attrs["left"], *attrs["right"])
    unioned = both.unionAll(lonely.select(*pads["left"], *pads["right"]))
    return unioned, f"{reason}; {_UNMATCHED.format(preserved)}"


def _may_compare(site: JoinSite, context: JoinContext) -> bool:
    """Whether the join's condition may hold an ordering comparison, as the query's
    canonical tree has it: without one it has no range predicate, and its condition need
    not be fetched from the JVM (TPC-DS q14a's 330 joins: 0.2 s fetched one by one). Where
    the tree does not tell (no join at the site's path), it may."""
    try:
        known = None if context.tree is None else context.tree.at(site.path)
    except IndexError:  # the canonical tree does not reach the site's path: ask the JVM
        return True
    if known is None or known.op != "Join":
        return True
    condition = known.args.get("condition")
    if condition is not None and not isinstance(condition, Expr):
        return True  # not an expression tree: the JVM's condition tells
    return mentions_comparison(condition)
