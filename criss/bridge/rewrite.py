"""Rewrite: plans that read cached files in place of an operator, and subtree substitution.

A read plan outputs the replaced operator's attributes (same names and exprIds), so every
ancestor still resolves; ``with_replacements`` rebuilds only the ancestors of what changed.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

from criss.bridge.capture import PlanNodes
from criss.bridge.lift import aggregate_parts, replace_parts, seq_items
from criss.bridge.plans import analyzed_plan, conjuncts
from criss.errors import BridgeError
from criss.localio import LOCAL_SORT_ROWS, arrow_exact, parquet_rows, read_arrow, spark_order
from criss.storage.tiers import local_file

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.bridge.catalyst import CatalystBridge
    from criss.qtree.predicates import Atom
    from criss.qtree.rewrite import SortKey
    from criss.qtree.subsume import Derivation, DerivedColumn, FilterBinding

#: Parquet bytes of local-relation read plans kept for reuse (they hold their rows).
LOCAL_PLANS_BYTES = 64 << 20
#: Read plans kept for reuse (file lists change as partitions move).
_READ_PLANS_KEPT = 512


class ReadPlans:
    """Analyzed plans reading cached entries, kept by (entry, files, order) for reuse."""

    def __init__(self, bridge: CatalystBridge) -> None:
        self.bridge = bridge
        self._plans: dict[tuple, Any] = {}
        self._local_bytes = 0
        #: (values, seconds) of each entry read on the driver since the planner took them.
        self.local_reads: list[tuple[int, float]] = []

    def cached_read_plan(
        self,
        original: Any,
        key: str,
        files: list[str],
        schema_json: str,
        columns: tuple[int, ...] | None = None,
        order: tuple[SortKey, ...] = (),
        table: Any = None,
    ) -> Any | None:
        """See ``CatalystBridge.cached_read_plan``."""
        read_plan = self.read_plan(key, files, schema_json, order, table)
        if read_plan is None:
            return None
        new_attrs, old_attrs = read_plan.output(), original.output()
        n = old_attrs.size()
        if columns is None and new_attrs.size() != n:
            columns = ()  # an exact entry must have exactly the operator's columns
        columns = tuple(range(n)) if columns is None else columns
        if len(columns) != n or (columns and max(columns) >= new_attrs.size()):
            raise BridgeError(
                f"cached entry {key} has {new_attrs.size()} columns, cannot serve {n} "
                f"from positions {columns}"
            )
        bridge = self.bridge
        aliases = [
            bridge.alias_as(new_attrs.apply(columns[i]), old_attrs.apply(i)) for i in range(n)
        ]
        return bridge.project(bridge.seq(aliases), read_plan)

    def derived_read_plan(
        self,
        original: Any,
        key: str,
        files: list[str],
        schema_json: str,
        derivation: Derivation,
        table: Any = None,
    ) -> Any:
        """See ``CatalystBridge.derived_read_plan``."""
        read = self.bridge.dataframe_of(self.read_plan(key, files, schema_json, (), table))
        return self.derived_plan(original, read, derivation)

    def derived_plan(self, original: Any, read: DataFrame, derivation: Derivation) -> Any:
        """``read``'s rows (a cached result, its columns by position) filtered by the
        derivation's residual, aggregated again if it groups, each output cast to the type
        of ``original``'s and aliased to its attribute."""
        from pyspark.sql import functions as F

        names = read.columns

        def cached(position: int) -> Any:
            return F.col(f"`{names[position]}`")

        for residual in derivation.residual:
            if residual.atom.kind != "opaque":
                read = read.where(residual_condition(cached(residual.column), residual.atom))
        if derivation.filters:
            read = self._refiltered(original, read, derivation.filters)
        elif any(r.atom.kind == "opaque" for r in derivation.residual):
            raise BridgeError("a residual condition with no Filter of the query stating it")
        wanted = original.output()
        if wanted.size() != len(derivation.outputs):
            raise BridgeError(
                f"a derivation of {len(derivation.outputs)} columns cannot serve an operator "
                f"of {wanted.size()}"
            )
        types = [spark_type(wanted.apply(i).dataType()) for i in range(wanted.size())]
        if derivation.grouping is None:
            outputs = [cached(o.columns[0]) for o in derivation.outputs]
        else:
            groups = [cached(p).alias(f"g{p}") for p in derivation.grouping]
            aggregates = {
                name: rolled_up(o, cached, read.schema).alias(name)
                for name, o in _rolled_up_columns(derivation.outputs)
            }
            read = (
                read.groupBy(*groups).agg(*aggregates.values())
                if aggregates
                else (read.select(*groups).distinct())
            )
            read, expressions = self._over_rolled_up(original, read, derivation.outputs)
            outputs = [
                expressions[i]
                if i in expressions
                else F.col(f"a{i}")
                if f"a{i}" in aggregates
                else F.col(f"g{o.columns[0]}")
                for i, o in enumerate(derivation.outputs)
            ]
        derived = read.select(
            *(c.cast(t).alias(f"o{i}") for i, (c, t) in enumerate(zip(outputs, types, strict=True)))
        )
        plan = analyzed_plan(derived)
        bridge, made = self.bridge, plan.output()
        aliases = [bridge.alias_as(made.apply(i), wanted.apply(i)) for i in range(wanted.size())]
        return bridge.project(bridge.seq(aliases), plan)

    def _over_rolled_up(
        self, original: Any, read: DataFrame, outputs: tuple[DerivedColumn, ...]
    ) -> tuple[DataFrame, dict[int, Any]]:
        """Each ``expression`` output of ``original`` (an Aggregate) as a column of ``read``:
        its own expression with each of its aggregates replaced by the one rolled up in
        ``read`` (``a{i}_{j}``), cast first to that aggregate's type, so that the
        expression computes in the query's own types."""
        from pyspark.sql import functions as F

        wanted = {i: o for i, o in enumerate(outputs) if o.how == "expression"}
        if not wanted:
            return read, {}
        own = original.aggregateExpressions()
        parts = {i: aggregate_parts(own.apply(i)) for i in wanted}
        for i, output in wanted.items():
            if len(parts[i]) != len(output.parts):
                raise BridgeError(
                    f"output {i} holds {len(parts[i])} aggregates, the derivation rolls up "
                    f"{len(output.parts)}"
                )
        typed = [
            F.col(f"a{i}_{j}").cast(spark_type(part.dataType())).alias(f"t{i}_{j}")
            for i in wanted
            for j, part in enumerate(parts[i])
        ]
        read = read.select("*", *typed)
        made = {str(a.name()): a for a in seq_items(analyzed_plan(read).output())}
        expressions = {}
        for i in wanted:
            replacements = iter(made[f"t{i}_{j}"] for j in range(len(parts[i])))
            expression = own.apply(i)
            if expression.nodeName() == "Alias":
                expression = expression.child()
            rebuilt = replace_parts(expression, replacements, self.bridge)
            expressions[i] = self.bridge.column(rebuilt)
        return read, expressions

    def _refiltered(
        self, original: Any, read: DataFrame, filters: tuple[FilterBinding, ...]
    ) -> DataFrame:
        """``read`` (a cached result's rows, columns by position) where every conjunct of
        the wanted operator's Filters that reads only cached columns holds, each read from
        the cached column of its input's (see ``criss.qtree.subsume.FilterBinding``)."""
        cached = analyzed_plan(read).output()
        for binding in filters:
            node = original
            for index in binding.at:
                node = node.children().apply(index)
            if node.nodeName() != "Filter":
                raise BridgeError(f"the wanted operator has no Filter at {list(binding.at)}")
            inputs = node.child().output()
            if any(position >= inputs.size() for position, _ in binding.inputs):
                raise BridgeError(f"the Filter at {list(binding.at)} has fewer inputs than bound")
            bound = {
                inputs.apply(position).exprId().id(): cached.apply(cached_position)
                for position, cached_position in binding.inputs
            }
            for conjunct in conjuncts(node.condition()):
                condition = self._rebound(conjunct, bound)
                if condition is not None:  # else it reads a column the cache applied it to
                    read = read.where(self.bridge.column(condition))
        return read

    def _rebound(self, expression: Any, bound: dict[int, Any]) -> Any | None:
        """``expression`` with each attribute it reads replaced by ``bound[its exprId]``;
        None when it reads one not there."""
        if expression.nodeName() == "AttributeReference":
            column = bound.get(expression.exprId().id())
            if column is not None and not expression.dataType().sameType(column.dataType()):
                raise BridgeError(
                    f"the cached column for {expression.name()} is "
                    f"{column.dataType().simpleString()}, the query's "
                    f"{expression.dataType().simpleString()}"
                )
            return column
        children = expression.children()
        if children.size() == 0:
            return expression
        rebuilt = []
        for index in range(children.size()):
            child = self._rebound(children.apply(index), bound)
            if child is None:
                return None
            rebuilt.append(child)
        return expression.withNewChildren(self.bridge.seq(rebuilt))

    def read_plan(
        self,
        key: str,
        files: list[str],
        schema_json: str,
        order: tuple[SortKey, ...] = (),
        table: Any = None,
    ) -> Any | None:
        """The analyzed plan reading ``files`` (positional columns), rows in ``order`` if
        given; None when ordering would need more rows on the driver than it sorts.
        ``table``, if given, holds the files' rows (read on the driver without reading them)."""
        version = (key, tuple(files), order)
        cached = self._plans.get(version)
        if cached is not None:
            return cached
        from pyspark.sql.types import StructType

        spark = self.bridge.spark
        schema = StructType.fromJson(json.loads(schema_json))
        local_bytes = self._driver_bytes(files, schema)
        values = None
        if local_bytes is not None and files and not order:
            # an ordered read stands in for a Sort's shuffle: only LOCAL_SORT_ROWS bounds it
            rows = table.num_rows if table is not None else parquet_rows(files)
            values = rows * max(len(schema.fields), 1)
            limit = self.bridge.local_read_values
            if limit is not None and values > limit:
                local_bytes = None
        started = time.perf_counter()
        if local_bytes is not None and files and table is None:
            table = read_arrow(files)
        if order and files:
            if local_bytes is None or table.num_rows > LOCAL_SORT_ROWS:
                return None
            reader = local_dataframe(self.bridge, spark_order(table, order), schema)
        elif not files:  # no rows (every partition empty): in any order
            reader = empty_dataframe(self.bridge, schema)
        elif local_bytes is not None:
            reader = local_dataframe(self.bridge, table, schema)
        else:
            # Parquet's dictionary filter tests equality as Java does: a query's `b = 0.0`
            # drops a row group whose dictionary holds -0.0 but not 0.0, rows Spark keeps
            # (its `=` holds for them). A cached result's row groups are another split of
            # the rows than the table's, so it would lose rows plain Spark returns.
            # A cached file gone or damaged by the action must fail the read (Criss then
            # runs the query uncached), whatever the session's ignore* settings say of
            # the user's own files: skipped, its rows would be missing from the result.
            reader = (
                spark.read.schema(schema)
                .option("parquet.filter.dictionary.enabled", "false")
                .option("ignoreMissingFiles", "false")
                .option("ignoreCorruptFiles", "false")
                .parquet(*files)
            )
        plan = analyzed_plan(reader)
        if local_bytes is not None and values is not None:
            self.local_reads.append((values, time.perf_counter() - started))
        self._keep(version, plan, local_bytes or 0)
        return plan

    def _keep(self, version: tuple, plan: Any, local_bytes: int) -> None:
        # bounded: file lists change as partitions move, and local plans hold their rows
        if (
            len(self._plans) >= _READ_PLANS_KEPT
            or self._local_bytes + local_bytes > LOCAL_PLANS_BYTES
        ):
            self._plans.clear()
            self._local_bytes = 0
        self._plans[version] = plan
        self._local_bytes += local_bytes

    def _driver_bytes(self, files: list[str], schema: Any) -> int | None:
        """Total bytes of ``files`` if they are read on the driver, else None."""
        limit = self.bridge.local_read_bytes
        if not limit or not all(arrow_exact(f.dataType) for f in schema.fields):
            return None
        total = 0
        for name in files:
            path = local_file(name)
            if path is None:  # a remote tier (Alluxio without a mount): Spark reads it
                return None
            try:
                total += os.path.getsize(path)
            except OSError as exc:
                raise BridgeError(f"cached file {name} is unreadable: {exc}") from exc
            if total > limit:
                return None
        return total

    def forget(self) -> None:
        self._plans.clear()


def spark_type(jvm_type: Any) -> Any:
    """The PySpark DataType of a JVM one."""
    from pyspark.sql.types import _parse_datatype_json_string

    return _parse_datatype_json_string(str(jvm_type.json()))


def residual_condition(column: Any, atom: Atom) -> Any:
    """``atom`` (a compare, in or notnull conjunct) as a condition on ``column``."""
    if atom.kind == "notnull":
        return column.isNotNull()
    values = [literal(atom.data_type, v) for v in atom.values]
    if atom.kind == "in":
        return column.isin(values)
    return {
        "<": column < values[0],
        "<=": column <= values[0],
        ">": column > values[0],
        ">=": column >= values[0],
        "=": column == values[0],
    }[atom.op]


def literal(data_type: str, text: str) -> Any:
    """A literal of Spark type ``data_type`` (its JSON name) from Catalyst's text of it."""
    import datetime
    from decimal import Decimal

    from pyspark.sql import functions as F

    from criss.qtree.predicates import FLOATING, INTEGRAL

    if data_type in INTEGRAL:
        return F.lit(int(text)).cast(data_type)
    if data_type in FLOATING:
        return F.lit(float(text)).cast(data_type)
    if data_type.startswith("decimal("):
        return F.lit(Decimal(text)).cast(data_type)
    if data_type == "date":
        return F.lit(datetime.date.fromisoformat(text))
    if data_type == "string":
        return F.lit(text)
    raise BridgeError(f"no literal of type {data_type} for a residual filter")


def _rolled_up_columns(outputs: tuple[DerivedColumn, ...]) -> list[tuple[str, DerivedColumn]]:
    """The aggregates a roll-up computes, by the name it gives them: ``a{i}`` for output i,
    ``a{i}_{j}`` for the j-th aggregate of an expression output i."""
    named = []
    for i, output in enumerate(outputs):
        if output.how == "expression":
            named += [(f"a{i}_{j}", part) for j, part in enumerate(output.parts)]
        elif output.how != "column":
            named.append((f"a{i}", output))
    return named


def rolled_up(output: DerivedColumn, cached: Any, schema: Any) -> Any:
    """One aggregate of a roll-up from the cached partial aggregates (see DerivedColumn)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType

    first = cached(output.columns[0])
    if output.how == "sum":
        return F.sum(first)
    if output.how == "count":
        return F.coalesce(F.sum(first), F.lit(0).cast("long"))
    if output.how in ("min", "max"):
        return getattr(F, output.how)(first)
    if output.how == "avg":  # as Spark's Average: the sum, in its type, over the count
        total_type = schema.fields[output.columns[0]].dataType
        count = F.sum(cached(output.columns[1]))
        if isinstance(total_type, DecimalType):
            ratio = F.sum(first).cast(total_type) / count.cast(DecimalType(20, 0))
        else:
            ratio = F.sum(first).cast("double") / count.cast("double")
        return F.when(count == 0, F.lit(None)).otherwise(ratio)
    raise BridgeError(f"no roll-up for {output.how!r}")


def local_dataframe(bridge: CatalystBridge, table: Any, schema: Any) -> Any:
    """A DataFrame over a local relation holding ``table``'s rows (Arrow, types Spark
    reads unchanged: see ``arrow_exact``), with ``schema``.

    What ``spark.createDataFrame(table, schema)`` does, without its per-call session
    lookups (timestamp settings, batch size, type widths: a dozen py4j calls, ~5-20 ms
    per query) that a table of exact types does not need.
    """
    from pyspark.sql import DataFrame
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.pandas.types import to_arrow_schema

    target = to_arrow_schema(schema)
    if table.schema.types != target.types:
        table = table.cast(target)
    spark, utils = bridge.spark, "org.apache.spark.sql.api.python.PythonSQLUtils"
    batches = table.to_batches()
    jiter = spark.sparkContext._serialize_to_jvm(
        batches,
        ArrowStreamSerializer(),
        lambda path: bridge.static(f"{utils}.readArrowStreamFromFile")(path),
        lambda: bridge.static("org.apache.spark.sql.api.python.ArrowIteratorServer")(),
    )
    jdf = bridge.static(f"{utils}.toDataFrame")(jiter, schema.json(), spark._jsparkSession)
    return DataFrame(jdf, spark)


def empty_dataframe(bridge: CatalystBridge, schema: Any) -> Any:
    """A DataFrame of no rows with ``schema``, over a local relation: no Spark job reads it.
    (``spark.createDataFrame([], schema)`` is a Python RDD, whose action starts Python
    workers: 1.15-1.94 s to serve TPC-H Q18's empty cached result at SF 0.05, where plain
    Spark took 0.23-0.73 s.)"""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    target = to_arrow_schema(schema)
    return local_dataframe(bridge, pa.Table.from_batches([], target), schema)


def with_replacements(
    bridge: CatalystBridge,
    nodes: PlanNodes,
    replacements: dict[tuple[int, ...], Any],
    at: tuple[int, ...],
) -> Any:
    """The JVM plan under the node at ``at`` of the plan ``nodes`` holds, with the subtree
    at each path of ``replacements`` swapped in: its ancestors rebuilt, every other
    subtree shared."""
    if at in replacements:
        return replacements[at]
    node = nodes.at(at)
    if not any(len(p) > len(at) and p[: len(at)] == at for p in replacements):
        return node
    kids = [
        with_replacements(bridge, nodes, replacements, at + (i,))
        for i in range(node.children().size())
    ]
    return bridge.with_children(node, kids)
