"""Bloom filters for join rewrites (``criss.joins.bloom``), built from Spark 4's own
runtime-filter expressions (``InjectRuntimeFilter`` builds the same ones):
``BloomFilterAggregate`` over xxhash64 of the keys (a partial filter per partition, merged by
the aggregate: one job, one binary value) and ``BloomFilterMightContain`` probing it."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import TYPE_CHECKING, Any

from criss.errors import BridgeError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from criss.bridge.catalyst import CatalystBridge
    from criss.bridge.joins import JoinPlan

_BLOOM_MAX_BITS = "spark.sql.optimizer.runtime.bloomFilter.maxNumBits"
_BLOOM_MAX_ITEMS = "spark.sql.optimizer.runtime.bloomFilter.maxNumItems"
#: Bloom literals kept alive (and content-named in captured plans), most recent last.
_BLOOM_LITERALS_KEPT = 16


class BloomLiterals:
    """BINARY Literals holding Bloom filters, one per content, and the names captured plans
    give them.

    Catalyst's JSON shows a byte array as "[B@<identity hash>", unstable and possibly
    colliding, so ``names`` maps each live literal's identity to "bloom:<SHA-256 of the
    content>" for the capture to use instead.
    """

    def __init__(self, bridge: CatalystBridge) -> None:
        self.bridge = bridge
        self._literals: dict[str, Any] = {}
        #: JSON identity ("[B@hash": a byte array's toString) → "bloom:<digest>".
        self.names: dict[str, str] = {}

    def literal(self, bloom: bytes) -> Any:
        """The Literal holding ``bloom`` (the same one for the same content, so plans reusing
        a filter are equal)."""
        digest = hashlib.sha256(bloom).hexdigest()
        literal = self._literals.pop(digest, None)
        if literal is None:
            jvm = self.bridge.jvm
            types = jvm.org.apache.spark.sql.types.DataTypes
            E = jvm.org.apache.spark.sql.catalyst.expressions
            literal = E.Literal.create(bytearray(bloom), types.BinaryType)
            identity = json.loads(literal.toJSON())[0]["value"]
            if self.names.get(identity, f"bloom:{digest}") != f"bloom:{digest}":
                raise BridgeError("Bloom filter literal identity collides with a live one")
            self.names[identity] = f"bloom:{digest}"
        self._literals[digest] = literal
        while len(self._literals) > _BLOOM_LITERALS_KEPT:
            old = self._literals.pop(next(iter(self._literals)))
            self.names.pop(json.loads(old.toJSON())[0]["value"], None)
        return literal


def _expressions(plan: JoinPlan, path: tuple[int, ...], expr_paths: list[tuple[int, ...]]) -> Any:
    """The join condition's sub-expressions at ``expr_paths`` as a Scala Seq."""
    return plan.bridge.seq([plan.condition_expression(path, p) for p in expr_paths])


def _long_literal(bridge: CatalystBridge, value: int) -> Any:
    """A foldable LONG expression (py4j hands small ints over as Integer, which a LONG
    Literal rejects, so an INT literal cast to LONG)."""
    E = bridge.jvm.org.apache.spark.sql.catalyst.expressions
    types = bridge.jvm.org.apache.spark.sql.types.DataTypes
    literal = E.Literal.create(int(value), types.IntegerType)
    return E.Cast(literal, types.LongType, bridge.none, E.EvalMode.LEGACY())


def bloom_limits(bridge: CatalystBridge) -> tuple[int, int]:
    """Spark's caps on a Bloom filter aggregate: (max bits, max expected items)."""
    conf = bridge.spark.conf
    return int(conf.get(_BLOOM_MAX_BITS, "67108864")), int(conf.get(_BLOOM_MAX_ITEMS, "4000000"))


def build_bloom_filter(
    plan: JoinPlan,
    path: tuple[int, ...],
    which: str,
    expr_paths: list[tuple[int, ...]],
    items: int,
    bits: int,
) -> bytes | None:
    """Serialized Bloom filter of xxhash64 of the key tuple of the join's ``which`` input,
    over its rows whose keys are all non-NULL (NULL never equals anything). Built
    distributed by ``BloomFilterAggregate``: one job; None when no row has keys."""
    bridge = plan.bridge
    E = bridge.jvm.org.apache.spark.sql.catalyst.expressions
    keys = _expressions(plan, path, expr_paths)
    aggregate = E.aggregate.BloomFilterAggregate(
        E.XxHash64(keys), _long_literal(bridge, items), _long_literal(bridge, bits)
    ).toAggregateExpression()
    frame = plan.side(path, which)
    columns = [bridge.column(keys.apply(i)) for i in range(keys.size())]
    frame = frame.where(functools.reduce(lambda a, b: a & b, [c.isNotNull() for c in columns]))
    value = frame.agg(bridge.column(aggregate).alias("bloom")).first()[0]
    return bytes(value) if value is not None else None


def bloom_might_contain(
    plan: JoinPlan, path: tuple[int, ...], expr_paths: list[tuple[int, ...]], bloom: bytes
) -> Column:
    """``might_contain(bloom, xxhash64(keys))`` over the join's other input's key tuple."""
    bridge = plan.bridge
    E = bridge.jvm.org.apache.spark.sql.catalyst.expressions
    hashed = E.XxHash64(_expressions(plan, path, expr_paths))
    probe = E.BloomFilterMightContain(bridge.bloom_literal(bloom), hashed)
    return bridge.column(probe)
