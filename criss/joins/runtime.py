"""Runtime / Lookahead Information Passing filters for star joins (seed 003).

When a fact input is joined with several filtered dimensions up a chain of inner joins,
every dimension's key filter is applied at the fact input (below its lowest join), not
only the adjacent one's: rows without a partner in a dimension higher up are dropped
before they are shuffled and joined with the lower dimensions.

Runs on the lowest join of the chain (innermost joins are visited first): its fact input
is replaced by the fact input semi-joined against each chosen dimension's distinct keys
(``prefilter.semi_filter``), and the join itself is rebuilt over it with its original
condition; the joins above are untouched and still do the real joining. Only dimensions
that filter their table are candidates (a whole table's keys drop no fact row with a
partner, so it is never measured), and each is chosen from measured statistics (rows
and distinct keys of the fact input and of each dimension, stored under their key
sources' fingerprints) by ``policies.filters.star_filters``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from criss.bridge import operator_names
from criss.policies import filters as policy
from criss.qtree.star import (
    TRANSPARENT,
    Ancestor,
    StarFilter,
    operand,
    operand_label,
    star_filters,
)

from . import JoinChoice, Verdicts
from .prefilter import (
    InputFacts,
    broadcast,
    broadcast_threshold,
    distinct_keys,
    input_facts,
    measure_keys,
    operand_width,
    row_width,
    scan_input,
    semi_filter,
    tree_size_bound,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import DataFrame

    from criss.bridge import JoinPlan, JoinSite
    from criss.qtree.plan import PlanNode

    from . import JoinContext


def ancestors(
    plan: JoinPlan, path: tuple[int, ...], tree: PlanNode | None = None
) -> Iterator[Ancestor]:
    """The operators from the one at ``path`` up to the root, as ``qtree.star`` needs them,
    each built as the walk up reaches it: the star search stops at the first operator it
    cannot pass (an aggregate, an outer join), and a join's condition and columns cost JVM
    calls (TPC-DS q14a: 330 joins, a walk to the root from each candidate took 0.4 s).
    A join other than an INNER one is given without them: the search stops there.

    Operator names come from the query's canonical ``tree`` (same paths) when given, else
    from the JVM plan.
    """
    names = _names_along(tree, path) if tree is not None else None
    if names is None:
        names = operator_names(plan, path)
    sites = {s.path: s for s in plan.sites}
    for depth in range(len(path), -1, -1):
        at = path[:depth]
        site = sites.get(at)
        if site is None:
            yield Ancestor(names[depth], at)
        elif site.join_type != "INNER":
            yield Ancestor("Join", at, site.join_type)
        else:
            yield Ancestor(
                "Join",
                at,
                site.join_type,
                site.condition,
                frozenset(c[2] for c in site.left.columns),
                frozenset(c[2] for c in site.right.columns),
            )


def _names_along(tree: PlanNode, path: tuple[int, ...]) -> list[str]:
    return [node.op for node in _nodes_along(tree, path)]


def _nodes_along(tree: PlanNode, path: tuple[int, ...]) -> list[PlanNode]:
    """The operators from the root down to the one at ``path``."""
    nodes = [tree]
    for index in path:
        nodes.append(nodes[-1].children[index])
    return nodes


def _join_above(tree: PlanNode, path: tuple[int, ...]) -> bool:
    """Whether the first operator above ``path`` other than a Project/Filter is a join:
    only then can a star's other dimensions filter the fact input below it."""
    names = _names_along(tree, path)[:-1]
    for name in reversed(names):
        if name not in TRANSPARENT:
            return name == "Join"
    return False


def _bound_from_tree(
    context: JoinContext, path: tuple[int, ...], which: str, facts: InputFacts
) -> tuple[str, float] | None:
    """Why the ``which`` input of the join at ``path`` is too small for any key filter at it
    to pay, with the most bytes its shuffles could move: its size bound
    (``tree_size_bound``) and, as the most shuffles a star above it can have, the joins up
    to the first operator the star search cannot pass, all from the canonical tree. None:
    it may pay, or the tree does not tell."""
    found = tree_size_bound(context, path, which, facts)
    if found is None or context.tree is None:
        return None
    shuffles = inner_joins_up(context.tree, path)
    if not shuffles:
        return None
    bound, size = found
    most = shuffles * size
    if policy.key_filter_can_pay(most):
        return None
    reason = (
        f"the fact input holds at most {bound} rows (the {which} input): its at "
        f"most {shuffles} shuffle(s) move ~{int(most)} B, less than a key filter's fixed "
        f"{policy.FIXED_COST_S:.2f}s saves"
    )
    return reason, most


def inner_joins_up(tree: PlanNode, path: tuple[int, ...]) -> int:
    """How many joins from the one at ``path`` up to the first operator the star search
    stops at (anything but a Project, a Filter or an inner join): the most shuffles a
    star filter at an input of that join can spare. A join whose type the tree does not
    name counts, and the walk goes on past it."""
    count = 0
    for node in reversed(_nodes_along(tree, path)):
        if node.op in TRANSPARENT:
            continue
        if node.op != "Join":
            break
        kind = node.args.get("joinType")
        named = kind.get("object", "") if isinstance(kind, dict) else ""
        if named and not named.endswith(".Inner$"):
            break
        count += 1
    return count


class _Measured(NamedTuple):
    """One dimension filter as measured: the fact input's rows, the fraction of them whose
    key the dimension holds, the dimension's distinct keys, key width and rows."""

    fact_rows: int
    survival: float
    keys: int
    key_width: float
    dim_rows: int


class RuntimeFilters(Verdicts):
    """Every filtered dimension's keys applied at the fact input of a star join."""

    name = "runtime_filters"
    needs_key_counts = True

    def apply(
        self, plan: JoinPlan, site: JoinSite, context: JoinContext
    ) -> tuple[DataFrame | None, JoinChoice | None]:
        if site.join_type != "INNER":
            return None, None
        if context.tree is not None and not _join_above(context.tree, site.path):
            return None, None  # no join above: the semi prefilter's case (and no JVM calls)
        declined = self._too_small(plan, site, context)
        if declined is not None:
            return None, declined
        for which in ("left", "right"):
            found = self._candidate(plan, site, context, which)
            if found is None:
                continue
            if isinstance(found, JoinChoice):
                return None, found
            return found
        return None, None

    def _too_small(self, plan: JoinPlan, site: JoinSite, context: JoinContext) -> JoinChoice | None:
        """The decline of a join neither of whose inputs can be a fact input a key filter
        pays at, judged from the query's canonical tree alone (see ``_bound_from_tree``),
        before the star search reads each join's condition and columns from the JVM
        (~9 ms of TPC-H Q2's planning at SF 1, where every such input declined)."""
        if context.tree is None:
            return None
        reasons = []
        for which in ("left", "right"):
            fact = input_facts(context, plan, site.path, which)
            if not (fact.simple and fact.deterministic):
                continue  # never a fact input (``_candidate``)
            reason = _bound_from_tree(context, site.path, which, fact)
            if reason is None:
                return None
            reasons.append(reason)
        if not reasons:
            return None
        return self._choice(site, False, max(reasons, key=lambda r: r[1])[0])

    def _candidate(self, plan: JoinPlan, site: JoinSite, context: JoinContext, which: str) -> Any:
        fact = input_facts(context, plan, site.path, which)  # from the query's own tree
        if not (fact.simple and fact.deterministic):
            return None
        side = site.side(which)
        fact_path = site.path + ((0,) if which == "left" else (1,))
        fact_ids = {c[2] for c in side.columns}
        filters = star_filters(fact_path, fact_ids, ancestors(plan, site.path, context.tree))
        if not any(f.join_path != site.path for f in filters):
            return None  # not a star: the adjacent join alone is the semi prefilter's case
        threshold = broadcast_threshold(context)
        shuffles = {f.join_path for f in filters if _shuffled(plan, context, f, threshold)}
        if not shuffles:
            reason = "every dimension is broadcast: the fact input is never shuffled"
            return self._choice(site, False, reason, {"filters": len(filters)})
        bound = fact.rows_bound
        if bound is not None:
            most = len(shuffles) * bound * row_width(side.columns)
            if not policy.key_filter_can_pay(most):
                reason = (
                    f"the fact input holds at most {bound} rows: its "
                    f"{len(shuffles)} shuffle(s) move ~{int(most)} B, less than a key "
                    f"filter's fixed {policy.FIXED_COST_S:.2f}s saves"
                )
                return self._choice(site, False, reason, {"filters": len(filters)})
        dimensions = self._dimensions(plan, context, filters)
        if not dimensions:
            reason = (
                "no dimension is a filtered scan (a whole table drops no fact row that has a "
                "partner; inputs with joins below are not measured)"
            )
            return self._choice(site, False, reason, {"filters": len(filters)})
        dim_keys = self._measure_dimensions(plan, context, dimensions)
        unmeasured = self._unmeasured(plan, site, context, filters, dim_keys, threshold)
        if unmeasured is not None:
            return unmeasured
        measured = dict(self._measure_fact(plan, site, context, which, fact, dim_keys))
        usable = {f: m for f, m in measured.items() if m is not None}
        if not usable:
            return self._choice(site, False, _no_dimension_measured(context))
        fact_rows = next(iter(usable.values())).fact_rows
        chain = self._chain(plan, context, filters, usable, threshold)
        decision = policy.star_filters(fact_rows, row_width(side.columns), chain)
        if not decision.chosen:
            return self._choice(site, False, decision.reason, decision.details)
        kept = [filters[i] for i in decision.details["keep"]]
        frame = self._filtered_join(plan, site, which, kept)
        details = decision.details | {"dimensions": [_describe(plan, f) for f in kept]}
        return frame, self._choice(site, True, decision.reason, details)

    def _dimensions(
        self, plan: JoinPlan, context: JoinContext, filters: list[StarFilter]
    ) -> list[tuple[StarFilter, InputFacts]]:
        """The filters whose dimension may drop fact rows, judged without running a job:
        a simple, deterministic input that filters its table (not a whole table)."""
        found = []
        for f in filters:
            dim = input_facts(context, plan, f.join_path, f.dim_side)
            if dim.simple and dim.deterministic and not dim.whole_table:
                found.append((f, dim))
        return found

    def _chain(
        self,
        plan: JoinPlan,
        context: JoinContext,
        filters: list[StarFilter],
        measured: dict[StarFilter, _Measured],
        threshold: int,
    ) -> list[policy.StarJoin]:
        """The star's joins, lowest first, as the LIP model sees them: measured filters are
        candidates, and a join shuffles the fact side unless its dimension, at its measured
        size, is broadcast (by adaptive execution if not by the plan)."""
        chain, joins = [], set()
        for f in filters:
            m = measured.get(f)
            first_key_of_join = f.join_path not in joins
            joins.add(f.join_path)
            shuffled = first_key_of_join and _shuffled(
                plan, context, f, threshold, m.dim_rows if m else None
            )
            if m is None:
                chain.append(policy.StarJoin(shuffled=shuffled))
            else:
                chain.append(
                    policy.StarJoin(m.survival, m.keys, m.key_width, shuffled, candidate=True)
                )
        return chain

    def _measure_dimensions(
        self,
        plan: JoinPlan,
        context: JoinContext,
        dimensions: list[tuple[StarFilter, InputFacts]],
    ) -> dict[StarFilter, tuple[int, int] | None]:
        """Each dimension's (distinct keys, rows), None where not measured (yet)."""
        dim_keys: dict[StarFilter, tuple[int, int] | None] = {}
        for f, dim in dimensions:
            label = operand_label(_operand(plan, f, f.dim_operand))
            known = measure_keys(
                context,
                lambda f=f: plan.side(f.join_path, f.dim_side),
                dim.measure_key,
                {label: lambda f=f: plan.condition_column(f.join_path, f.dim_operand)},
                dim.may_measure,
            )
            dim_keys[f] = (known["ndv"][label], known["rows"]) if known is not None else None
        return dim_keys

    def _unmeasured(
        self,
        plan: JoinPlan,
        site: JoinSite,
        context: JoinContext,
        filters: list[StarFilter],
        dim_keys: dict[StarFilter, tuple[int, int] | None],
        threshold: int,
    ) -> JoinChoice | None:
        """Why the fact input (the big one) is not measured, or None to measure it: no
        dimension is measured, or at the dimensions' measured rows every join of the star
        broadcasts its dimension, so no fact row is shuffled and no filter can pay
        (``policy.star_filters`` would find 0 s to save)."""
        if all(k is None for k in dim_keys.values()):
            return self._choice(site, False, _no_dimension_measured(context))
        rows = {f: k[1] for f, k in dim_keys.items() if k is not None}
        if any(_shuffled(plan, context, f, threshold, rows.get(f)) for f in filters):
            return None
        reason = (
            "every dimension is broadcast at its measured size: the fact input is never "
            "shuffled (and is not measured)"
        )
        return self._choice(site, False, reason, {"filters": len(filters)})

    def _measure_fact(
        self,
        plan: JoinPlan,
        site: JoinSite,
        context: JoinContext,
        which: str,
        fact: InputFacts,
        dim_keys: dict[StarFilter, tuple[int, int] | None],
    ) -> list[tuple[StarFilter, _Measured | None]]:
        """What was measured for each filter, None if it could not be: the fact input's
        key counts with each measured dimension's."""
        labels = {f: operand_label(_operand(plan, f, f.fact_operand)) for f in dim_keys}
        fact_columns = {
            labels[f]: lambda f=f: plan.condition_column(f.join_path, f.fact_operand)
            for f in dim_keys
        }
        known = measure_keys(
            context,
            lambda: plan.side(site.path, which),
            fact.measure_key,
            fact_columns,
            fact.may_measure,
        )
        out: list[tuple[StarFilter, _Measured | None]] = []
        for f, dim in dim_keys.items():
            if known is None or dim is None:
                out.append((f, None))
                continue
            keys, dim_rows = dim
            survival = min(1.0, keys / max(1, known["ndv"][labels[f]]))
            width = operand_width(_operand(plan, f, f.dim_operand))
            out.append((f, _Measured(known["rows"], survival, keys, width, dim_rows)))
        return out

    def _filtered_join(
        self, plan: JoinPlan, site: JoinSite, which: str, kept: list[StarFilter]
    ) -> DataFrame:
        frames = {w: plan.side(site.path, w) for w in ("left", "right")}
        fact = frames[which]
        for f in kept:
            keys = distinct_keys(
                plan.side(f.join_path, f.dim_side),
                [plan.condition_column(f.join_path, f.dim_operand)],
            )
            fact = semi_filter(fact, [plan.condition_column(f.join_path, f.fact_operand)], keys)
        other = "right" if which == "left" else "left"
        # The other input first, as in ``prefilter.prefiltered_join``.
        return frames[other].join(fact, plan.condition_column(site.path), "inner")


def _no_dimension_measured(context: JoinContext) -> str:
    return (
        "no dimension measured (joins below without statistics, inputs seen in fewer than "
        f"min_ref={context.session.options.min_ref} queries, or measured after this "
        "query's action)"
    )


def _operand(plan: JoinPlan, f: StarFilter, path: tuple[int, ...]) -> Any:
    site = next(s for s in plan.sites if s.path == f.join_path)
    return operand(site.condition, path)


def _shuffled(
    plan: JoinPlan, context: JoinContext, f: StarFilter, threshold: int, rows: int | None = None
) -> bool:
    """Whether Spark shuffles the fact side at the join of ``f``: its dimension is not
    broadcast (see ``prefilter.broadcast``) at ``rows`` (measured), else at the QTree's
    rows for it; the lowest join of a star, over the fact table's scan, shuffles it
    before adaptive execution can broadcast."""
    site = next(s for s in plan.sites if s.path == f.join_path)
    dim = site.side(f.dim_side)
    if threshold < 0 or dim.estimated_bytes <= threshold:
        return not broadcast(dim, rows, context, threshold, other_scan=True)
    if rows is None:
        rows = context.side_facts(plan, f.join_path, f.dim_side).rows
    fact_side = "right" if f.dim_side == "left" else "left"
    fact = context.side_facts(plan, f.join_path, fact_side).node
    return not broadcast(dim, rows, context, threshold, other_scan=scan_input(fact))


def _describe(plan: JoinPlan, f: StarFilter) -> str:
    return (
        f"{operand_label(_operand(plan, f, f.fact_operand))} in "
        f"{operand_label(_operand(plan, f, f.dim_operand))} (join at {list(f.join_path)})"
    )
