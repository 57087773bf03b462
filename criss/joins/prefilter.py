"""Semi-join key prefilter before a shuffle join (seed 000, "Semi Sort Merge Join").

Before an equi-join whose small input keeps few keys, the big input is reduced to the rows
whose key occurs among the small input's distinct keys (a left-semi join against the
broadcast key set), so the join's shuffle moves only those rows. Chosen per join from
measured statistics: row counts and distinct-key counts of both inputs (QTree statistics
when present, else one cheap aggregate per input, stored in the QTree's meta table keyed by
the fingerprint of the rows the input projects (``qtree.star.key_source``) so a repeated
query, or another projection of the same rows, never measures again), the big input's row
width, and ``policies.filters.semi_prefilter``'s cost model.

The distinct-key set is a plain DataFrame subtree (``Aggregate`` over the small input), so
Criss's operator cache can store and reuse it like any other operator.

The helpers here (input description, key measurement, key-set filter) are shared with the
Bloom and runtime-filter optimizations.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from criss.policies import filters as policy
from criss.qtree.plan import Expr
from criss.qtree.rewrite import scan_only
from criss.qtree.star import (
    EquiKey,
    equi_keys,
    has_equality,
    key_source,
    operand,
    operand_label,
    whole_table,
)
from criss.tables import table_rows

from . import JoinChoice, Verdicts, key_counts_meta

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pyspark.sql import Column, DataFrame

    from criss.bridge import JoinPlan, JoinSide, JoinSite
    from criss.qtree.plan import PlanNode

    from . import JoinContext

log = logging.getLogger("criss.joins")

#: Byte width Spark assumes per value of each type (DataType.defaultSize), by JSON name.
_WIDTHS = {"long": 8, "integer": 4, "short": 2, "byte": 1, "double": 8, "float": 4}
_WIDTHS |= {"date": 4, "timestamp": 8, "timestamp_ntz": 8, "boolean": 1, "string": 20}
_JOIN_TYPES = ("INNER", "LEFT OUTER", "RIGHT OUTER")
KEY_PREFIX = "__criss_key"


def type_width(type_json: Any) -> float:
    if isinstance(type_json, str):
        if type_json.startswith("decimal"):
            return 8 if _precision(type_json) <= 18 else 16
        return _WIDTHS.get(type_json, 16)
    return 32  # struct, array, map: Spark's defaults are larger still


def _precision(name: str) -> int:
    try:
        return int(name.split("(")[1].split(",")[0])
    except (IndexError, ValueError):
        return 38


def operand_width(expr: Any) -> float:
    """Width of a key operand: its type's if it is an attribute, else 8 bytes."""
    data_type = dict(expr.fields).get("dataType") if expr is not None else None
    return type_width(data_type) if data_type is not None else 8.0


def row_width(columns: tuple[tuple[str, Any, int], ...]) -> float:
    return types_width(t for _, t, _ in columns)


def types_width(types: Iterable[Any]) -> float:
    """Bytes of a row of columns of ``types`` (Spark SQL types as JSON)."""
    return sum(type_width(t) for t in types) or 1.0


def output_types(node: PlanNode) -> list[str] | None:
    """The Catalyst types of ``node``'s output columns, from its canonical arguments, when
    it is Filters over a Project or a relation whose outputs are plain attributes; else
    None."""
    while node.op == "Filter" and len(node.children) == 1:
        node = node.children[0]
    if node.op == "Project":
        outputs = node.args.get("projectList")
    elif node.op == "LogicalRelation":
        outputs = node.args.get("output")
    else:
        return None
    if not isinstance(outputs, (list, tuple)) or not outputs:
        return None
    types = []
    for expr in outputs:
        if not isinstance(expr, Expr) or not expr.cls.endswith(".AttributeReference"):
            return None
        data_type = dict(expr.fields).get("dataType")
        if not isinstance(data_type, str):
            return None
        types.append(data_type)
    return types


def tree_size_bound(
    context: JoinContext, path: tuple[int, ...], which: str, facts: InputFacts
) -> tuple[int, float] | None:
    """The most rows and bytes input ``which`` of the join at ``path`` can hold: its rows
    bound and the widths of its output columns as the query's canonical tree names them,
    with no JVM call; None where either is unknown."""
    if context.tree is None or facts.rows_bound is None:
        return None
    types = output_types(context.tree.at(path + ((0,) if which == "left" else (1,))))
    if types is None:
        return None
    return facts.rows_bound, facts.rows_bound * types_width(types)


@dataclass(frozen=True)
class InputFacts:
    """What the filter optimizations know about one join input before running it."""

    fingerprint: str
    #: Fingerprint its key measurements are stored under, shared by every projection of
    #: the same rows (see ``qtree.star.key_source``).
    measure_key: str
    deterministic: bool
    #: True when the input is a scan with filters/projects only (cheap to measure).
    simple: bool
    #: Rows the QTree measured for this input (None: never measured).
    rows: int | None
    #: Whether it recurs enough to spend a measurement job on (see JoinContext.may_measure).
    may_measure: bool = True
    #: Every row of one table (no filter but IsNotNull): see ``qtree.star.whole_table``.
    whole_table: bool = False
    #: The file relation a scan input reads (its identity, as captured), else None.
    relation: dict[str, Any] | None = None

    @property
    def rows_bound(self) -> int | None:
        """Most rows it can hold, known without a job: the rows measured before, or for a
        scan its table's (Parquet footers, read only when asked); None where neither is."""
        if self.rows is not None:
            return self.rows
        return table_rows(self.relation) if self.simple else None


def input_facts(
    context: JoinContext, plan: JoinPlan, path: tuple[int, ...], which: str
) -> InputFacts:
    facts = context.side_facts(plan, path, which)
    return InputFacts(
        fingerprint=facts.fingerprint,
        measure_key=key_source(facts.node).fingerprint,
        deterministic=facts.deterministic,
        simple=scan_input(facts.node),
        rows=facts.rows,
        may_measure=context.may_measure(facts),
        whole_table=whole_table(facts.node),
        relation=next(facts.node.leaves()).relation,
    )


def scan_input(node: PlanNode) -> bool:
    """A join input that only filters and projects a file scan: no exchange below it."""
    return scan_only(node) and next(node.leaves()).op == "LogicalRelation"


def measure_keys(
    context: JoinContext,
    frame: Callable[[], DataFrame],
    fingerprint: str,
    operands: dict[str, Callable[[], Column]],
    may_measure: bool = True,
) -> dict[str, Any] | None:
    """Rows and approximate distinct counts of key expressions of one input.

    Stored in the QTree's meta table under ``fingerprint``, the input's key source (which
    changes with the input's rows and files, not with the columns it keeps), so each input
    is measured once across queries and sessions.
    None when they are unknown and ``may_measure`` is False (an input seen too rarely).
    ``frame`` and each operand are built only for a measurement job: each costs Spark an
    analysis, which a query whose inputs are known or too rare should not pay.
    """
    from pyspark.sql import functions as F

    key = key_counts_meta(fingerprint)
    session = context.session
    known = session.qtree.meta(key) or {"rows": None, "ndv": {}}
    missing = {label: col for label, col in operands.items() if label not in known["ndv"]}
    if not missing and known["rows"] is not None:
        context.counters["join_key_measurements_reused"] += 1
        return known
    if not may_measure:
        context.counters["join_key_measurements_deferred"] += 1
        return None
    labels = list(missing)
    measurement = frame().agg(
        F.count(F.lit(1)), *[F.approx_count_distinct(missing[label]()) for label in labels]
    )

    def measure() -> dict[str, Any]:
        row = measurement.first()
        ndv = {label: int(row[i + 1]) for i, label in enumerate(labels)}
        return {"rows": int(row[0]), "ndv": ndv}

    if session.options.join_measurements == "after-action":
        # the user's action first; the next query that joins this input uses the counts
        session.measure_after_action(key, measure)
        context.counters["join_key_measurements_after_action"] += 1
        return None
    found = measure()
    known["rows"] = found["rows"]
    known["ndv"].update(found["ndv"])
    session.qtree.set_meta(key, known)
    context.counters["join_key_measurements"] += 1
    return known


def key_label(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else "(" + ",".join(labels) + ")"


def key_column(columns: list[Column]) -> Column:
    """One column whose distinct count is the key tuple's (a hash for several keys)."""
    from pyspark.sql import functions as F

    return columns[0] if len(columns) == 1 else F.xxhash64(*columns)


def distinct_keys(small: DataFrame, operands: list[Column]) -> DataFrame:
    """The small input's distinct key tuples: a cacheable operator subtree."""
    return small.select(*[c.alias(f"{KEY_PREFIX}{i}") for i, c in enumerate(operands)]).distinct()


def semi_filter(big: DataFrame, operands: list[Column], keys: DataFrame) -> DataFrame:
    """``big`` rows whose key tuple occurs in ``keys`` (broadcast left-semi join; NULL keys
    never match, as in the equi-join it precedes)."""
    from pyspark.sql import functions as F

    condition = functools.reduce(
        lambda a, b: a & b,
        [c == F.col(f"{KEY_PREFIX}{i}") for i, c in enumerate(operands)],
    )
    return big.join(F.broadcast(keys), condition, "left_semi")


def broadcast_threshold(context: JoinContext) -> int:
    """Bytes under which Spark broadcasts a join input, as Spark reads its setting (``20MB``
    included; negative: none), once per query."""
    return context.broadcast_threshold()


def adaptive(context: JoinContext) -> bool:
    """Whether adaptive execution re-plans joins from the real sizes of their inputs."""
    return context.setting("spark.sql.adaptive.enabled", "true").lower() == "true"


#: Inputs whose rows a key filter may drop: both for inner joins, the null-supplying one
#: for outer joins (a preserved input keeps its unmatched rows). These are also the inputs
#: Spark may broadcast (build) for each join type.
_FILTERABLE = {"INNER": ["left", "right"], "LEFT OUTER": ["right"], "RIGHT OUTER": ["left"]}


def broadcast(
    side: JoinSide, rows: int | None, context: JoinContext, threshold: int, other_scan: bool
) -> bool:
    """Whether Spark broadcasts this (buildable) join input, so the other one is not shuffled.

    Planned so when Spark's estimate is under the threshold (Spark's estimate of a filtered
    scan is the whole table's). Otherwise adaptive execution broadcasts it once its shuffle
    stage shows its real size (``rows``, measured, times its row width), but by then a
    scan-only ``other`` input, whose stage had nothing to wait for, was shuffled beside it:
    measured at SF1 (orders 1 % ⋈ lineitem, 2 MB threshold), lineitem's shuffle stage ran
    and the broadcast join read it back locally. Only another input with an exchange below
    it is planned after the conversion, and then never shuffled.
    """
    if threshold < 0:
        return False
    if side.estimated_bytes <= threshold:
        return True
    if other_scan or not adaptive(context) or rows is None:
        return False
    return rows * row_width(side.columns) <= threshold


def _broadcast_reason(
    site: JoinSite,
    context: JoinContext,
    rows: dict[str, int | None],
    scans: dict[str, bool],
) -> str | None:
    """Why no shuffle is left to save: Spark broadcasts a buildable input, planned or (at
    its ``rows``, measured) adaptively before the other input is shuffled; or None."""
    threshold = broadcast_threshold(context)
    for which in _FILTERABLE[site.join_type]:
        side = site.side(which)
        other = "right" if which == "left" else "left"
        if not broadcast(side, rows.get(which), context, threshold, scans.get(other, True)):
            continue
        if side.estimated_bytes <= threshold:
            return f"Spark broadcasts the {which} input (est. {side.estimated_bytes} B)"
        size = int(rows[which] * row_width(side.columns))  # type: ignore[operator]
        return (
            f"adaptive execution broadcasts the {which} input at its measured size "
            f"({rows[which]} rows, ~{size} B <= {threshold} B; Spark estimated "
            f"{side.estimated_bytes} B) before the {other} input is shuffled: "
            "no shuffle to save"
        )
    return None


def key_sides(site: JoinSite, context: JoinContext) -> tuple[tuple[EquiKey, ...], list[str]] | str:
    """The equi-keys of a shuffle join and the inputs a key filter may shrink, or why not."""
    if site.join_type not in _JOIN_TYPES:
        return f"{site.join_type} join"
    if not has_equality(site.condition):
        return "no equi-join keys"
    # cheapest test first: most joins broadcast, and their inputs' columns are not needed
    planned = _broadcast_reason(site, context, {}, {})
    if planned:
        return f"{planned}: no shuffle to save"
    left_ids = {c[2] for c in site.left.columns}
    right_ids = {c[2] for c in site.right.columns}
    keys = equi_keys(site.condition, left_ids, right_ids)
    if not keys:
        return "no equi-join keys"
    return keys, _FILTERABLE[site.join_type]


class SemiPrefilter(Verdicts):
    """Left-semi join of the big input against the small input's distinct keys."""

    name = "semi_prefilter"
    needs_key_counts = True

    def apply(
        self, plan: JoinPlan, site: JoinSite, context: JoinContext
    ) -> tuple[DataFrame | None, JoinChoice | None]:
        found = measured_keys(plan, site, context)
        if isinstance(found, str):
            return None, self._choice(site, False, found)
        keys, big, stats = found
        decision = policy.semi_prefilter(**stats)
        if not decision.chosen:
            return None, self._choice(site, False, decision.reason, decision.details)
        frame, partitions = prefiltered_join(plan, site, context, big, keys)
        details = decision.details | {"filtered": big, "shuffle_partitions": partitions}
        return frame, self._choice(site, True, decision.reason, details)


def measured_keys(
    plan: JoinPlan,
    site: JoinSite,
    context: JoinContext,
    refuse: Callable[[tuple[EquiKey, ...]], str | None] | None = None,
) -> tuple[tuple[EquiKey, ...], str, dict[str, Any]] | str:
    """A key filter's opening: the equi-join keys, the big side and the policy arguments
    measured for both inputs, or why not. ``refuse`` may turn the keys down (a reason)
    before any measurement job runs."""
    if site.join_type in _JOIN_TYPES:
        too_small = _too_small_by_tree(plan, site, context)
        if too_small:
            return too_small
    found = key_sides(site, context)
    if isinstance(found, str):
        return found
    keys, filterable = found
    refused = refuse(keys) if refuse is not None else None
    if refused:
        return refused
    measured = measure_sides(plan, site, context, keys, filterable)
    if isinstance(measured, str):
        return measured
    big, stats = measured
    return keys, big, stats


def _side_keys(
    plan: JoinPlan,
    site: JoinSite,
    context: JoinContext,
    which: str,
    facts: InputFacts,
    paths: list[Any],
    label: str,
) -> dict[str, Any] | None:
    """The rows and key counts of one input (see ``measure_keys``)."""
    return measure_keys(
        context,
        lambda: plan.side(site.path, which),
        facts.measure_key,
        {label: lambda: key_column([plan.condition_column(site.path, p) for p in paths])},
        facts.may_measure,
    )


def measure_sides(
    plan: JoinPlan,
    site: JoinSite,
    context: JoinContext,
    keys: tuple[EquiKey, ...],
    filterable: list[str],
) -> tuple[str, dict[str, Any]] | str:
    """Measured facts of both inputs for a key filter: (big side, policy arguments), or why
    not. The big input is the wider one in bytes (rows × row width) among ``filterable``."""
    facts, measured = {}, {}
    for which in ("left", "right"):
        facts[which] = input_facts(context, plan, site.path, which)
        if not facts[which].deterministic:
            return f"{which} input is not deterministic"
    scans = {w: f.simple for w, f in facts.items()}
    adaptive_broadcast = _broadcast_reason(
        site, context, {w: f.rows for w, f in facts.items()}, scans
    )
    if adaptive_broadcast:
        return adaptive_broadcast  # the QTree's rows already say so: nothing to measure
    too_small = _too_small_to_pay(site, facts, filterable)
    if too_small:
        return too_small
    later = None  # why not now, when an input's keys are measured after the action
    for which in _measuring_order(site):
        paths = [getattr(k, which) for k in keys]
        label = key_label([operand_label(operand(site.condition, p)) for p in paths])
        if not facts[which].simple and facts[which].rows is None:
            return f"{which} input not measured yet (joins/aggregates below, no QTree stats)"
        known = _side_keys(plan, site, context, which, facts[which], paths, label)
        if known is None:
            if (
                facts[which].may_measure
                and not measured
                and _may_end_it(site, which, scans, context)
            ):
                return (
                    f"{which} input's keys are measured after this query's action (the "
                    "other input's only if its measured size leaves a shuffle to save)"
                )
            if facts[which].may_measure:  # and the other input's with it
                later = f"{which} input's keys are measured after this query's action"
                continue
            return (
                f"{which} input seen in fewer than min_ref={context.session.options.min_ref} "
                "queries: its keys are measured when it recurs"
            )
        measured[which] = (known["rows"], known["ndv"][label])
        rows = {w: m[0] for w, m in measured.items()}
        adaptive_broadcast = _broadcast_reason(site, context, rows, scans)
        if adaptive_broadcast:
            return adaptive_broadcast  # the other input need not be measured
    if later is not None:
        return later
    return _policy_arguments(site, keys, filterable, measured)


def _policy_arguments(
    site: JoinSite,
    keys: tuple[EquiKey, ...],
    filterable: list[str],
    measured: dict[str, tuple[int, int]],
) -> tuple[str, dict[str, Any]]:
    """The big input (the wider in bytes among ``filterable``) and a key filter's policy
    arguments, from both inputs' measured (rows, distinct keys)."""
    widths = {"left": row_width(site.left.columns), "right": row_width(site.right.columns)}
    big = max(filterable, key=lambda w: measured[w][0] * widths[w])
    small = "right" if big == "left" else "left"
    key_width = sum(operand_width(operand(site.condition, k.left)) for k in keys)
    survival = min(1.0, measured[small][1] / max(1, measured[big][1]))
    return big, {
        "big_rows": measured[big][0],
        "big_width": widths[big],
        "survival": survival,
        "keys": measured[small][1],
        "key_width": key_width,
    }


def _too_small_by_tree(plan: JoinPlan, site: JoinSite, context: JoinContext) -> str | None:
    """``_too_small_to_pay`` from the query's canonical tree alone (the inputs' columns as
    its operators' outputs name them), before any JVM call: the join's condition, its
    inputs' columns and Spark's size estimates are ~0.4 ms each, and most joins of a
    small query stop here. None where the tree does not tell."""
    most = {}
    for which in _FILTERABLE[site.join_type]:
        bound = tree_size_bound(
            context, site.path, which, input_facts(context, plan, site.path, which)
        )
        if bound is None:
            return None
        most[which] = bound
    which = max(most, key=lambda w: most[w][1])
    bound, size = most[which]
    if policy.key_filter_can_pay(size):
        return None
    return (
        f"the {which} input holds at most {bound} rows (~{int(size)} B): "
        f"its shuffle costs less than a key filter's fixed {policy.FIXED_COST_S:.2f}s"
    )


def _too_small_to_pay(
    site: JoinSite, facts: dict[str, InputFacts], filterable: list[str]
) -> str | None:
    """Why no key filter can pay at this join whatever its inputs' keys (so none is
    measured), or None: the larger filterable input, at the most rows it can hold, shuffles
    too few bytes to save a filter's fixed cost (``policy.key_filter_can_pay``)."""
    bounds = {w: facts[w].rows_bound for w in filterable}
    if any(b is None for b in bounds.values()):
        return None
    most = {w: bounds[w] * row_width(site.side(w).columns) for w in filterable}
    if policy.key_filter_can_pay(max(most.values())):
        return None
    which = max(most, key=most.get)
    return (
        f"the {which} input holds at most {bounds[which]} rows (~{int(most[which])} B): "
        f"its shuffle costs less than a key filter's fixed {policy.FIXED_COST_S:.2f}s"
    )


def _measuring_order(site: JoinSite) -> list[str]:
    """The inputs in the order their keys are measured: first the one Spark may broadcast
    at its measured size (the smaller buildable input by Spark's estimate), whose rows can
    end the decision before the other, most often the larger, is measured at all."""
    buildable = sorted(
        _FILTERABLE[site.join_type],
        key=lambda w: site.side(w).estimated_bytes,
    )
    return buildable + [w for w in ("left", "right") if w not in buildable]


def _may_end_it(site: JoinSite, which: str, scans: dict[str, bool], context: JoinContext) -> bool:
    """Whether ``which``'s measured rows alone may show that adaptive execution broadcasts
    it: ``broadcast`` would at the fewest rows it can measure (none). Then the other input
    is measured only once they are known."""
    if which not in _FILTERABLE[site.join_type]:
        return False
    side = site.side(which)
    other = "right" if which == "left" else "left"
    return broadcast(side, 0, context, broadcast_threshold(context), scans.get(other, True))


def prefiltered_join(
    plan: JoinPlan, site: JoinSite, context: JoinContext, big: str, keys: tuple[EquiKey, ...]
) -> tuple[DataFrame, int | None]:
    """The join with its ``big`` input semi-joined against the other input's distinct keys,
    both inputs hash-partitioned into ``w × cores`` partitions when ``PARALLELISM_W`` is set."""
    small = "right" if big == "left" else "left"
    frames = {w: plan.side(site.path, w) for w in ("left", "right")}
    operands = {w: [plan.condition_column(site.path, getattr(k, w)) for k in keys] for w in frames}
    keyset = distinct_keys(frames[small], operands[small])
    frames[big] = semi_filter(frames[big], operands[big], keyset)
    partitions = None
    if policy.PARALLELISM_W:
        cores = context.session.spark.sparkContext.defaultParallelism
        partitions = policy.shuffle_partitions(cores)
        frames = {w: f.repartition(partitions, *operands[w]) for w, f in frames.items()}
    # The small input goes first: Spark's analyzer gives fresh exprIds to the second
    # occurrence of a relation in a plan, which must be the key set's copy (nothing outside
    # refers to it), not the join input its condition references.
    how = "left_outer" if site.join_type != "INNER" else "inner"
    joined = frames[small].join(frames[big], plan.condition_column(site.path), how)
    return joined, partitions
