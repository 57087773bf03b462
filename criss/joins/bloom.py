"""Bloom-filtered shuffle join (seed 004, cascade join with a Bloom filter).

Like the semi-join prefilter, the big input of a shuffle equi-join is reduced to rows that
may have a partner before it is shuffled; here by a Bloom filter of the small input's keys
instead of their exact set, for small inputs whose key set is too large to broadcast
(``policies.filters.MAX_EXACT_KEY_BYTES``) or whose exact set costs more than the false
positives a filter lets through.

Division of labour with the prefilter: ``BloomJoin`` is registered right after
``SemiPrefilter`` and the first optimization that applies wins, so Bloom is only considered
where the exact prefilter declined; it then decides with ``policies.filters.bloom_join``
(Bloom vs exact vs nothing, from the same measured rows and distinct keys, reused from the
QTree's meta table), so it never takes a join the exact set would do better.

The filter is built distributed, as Spark's own runtime filter is (``InjectRuntimeFilter``):
``BloomFilterAggregate`` over ``xxhash64`` of the small input's key tuple (rows with a NULL
key left out: NULL never equals anything) builds one partial filter per partition and
merges them; the merged filter is collected as one binary value (one job), sized for the
small input's measured distinct keys with the false-positive rate of seed 004's cost model
(``bloom_error_rate``), its bits capped like Spark's
(``spark.sql.optimizer.runtime.bloomFilter.maxNumBits``). The big input is filtered by
``BloomFilterMightContain`` on its keys (and non-NULL keys), and the original join runs over
it with its original condition, so results are plain Spark's. For outer joins only the
null-supplying input is filtered (``prefilter.key_sides``).

Filters are kept per small input fingerprint (plan + files) in the session, so a repeated
query reuses the same filter (no build job, and an identical plan for the operator cache).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from criss.bridge import bloom_limits, bloom_might_contain, build_bloom_filter
from criss.policies import filters as policy
from criss.qtree.star import operand, operand_label

from . import JoinChoice, Verdicts
from .prefilter import input_facts, key_label, measured_keys

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.bridge import JoinPlan, JoinSite
    from criss.qtree.star import EquiKey

    from . import JoinContext

#: Key types whose hash may differ between values the join finds equal (-0.0 / 0.0, NaNs).
_UNHASHABLE = ("float", "double")
#: Filters kept per session (each up to maxNumBits / 8 bytes).
_KEPT = 8


def bloom_fpp(items: int, bits: int, inserted: int | None = None) -> float:
    """False-positive rate of a Bloom filter of ``bits`` bits sized for ``items`` keys
    (Spark's hash count: round(bits / items · ln 2), at least 1) holding ``inserted`` keys
    (default ``items``; more when Spark's maxNumItems capped the expected count)."""
    inserted = items if inserted is None else inserted
    if items <= 0 or inserted <= 0:
        return 0.0
    hashes = max(1, round(bits / items * math.log(2)))
    return (1 - math.exp(-hashes * inserted / bits)) ** hashes


def _unhashable(site: JoinSite, keys: tuple[EquiKey, ...]) -> str | None:
    """Why the keys cannot go into a Bloom filter, if they cannot."""
    for key in keys:
        data_type = dict(operand(site.condition, key.left).fields).get("dataType")
        if data_type in _UNHASHABLE:
            return f"{data_type} join key"
    return None


class BloomJoin(Verdicts):
    """Filter the big input of a shuffle join by a Bloom filter of the small input's keys."""

    name = "bloom_join"
    needs_key_counts = True

    def __init__(self) -> None:
        self._filters: OrderedDict[tuple[Any, ...], bytes | None] = OrderedDict()

    def apply(
        self, plan: JoinPlan, site: JoinSite, context: JoinContext
    ) -> tuple[DataFrame | None, JoinChoice | None]:
        found = measured_keys(plan, site, context, lambda keys: _unhashable(site, keys))
        if isinstance(found, str):
            return None, self._choice(site, False, found)
        keys, big, stats = found
        small = "right" if big == "left" else "left"
        partitions = context.session.spark.sparkContext.defaultParallelism
        decision = policy.bloom_join(**stats, partitions=partitions)
        if not decision.chosen:
            return None, self._choice(site, False, decision.reason, decision.details)

        max_bits, max_items = limits = bloom_limits(plan.bridge)
        items = max(1, min(stats["keys"], max_items))
        bits = min(decision.details["bits"], max_bits)
        small_paths = [getattr(k, small) for k in keys]
        big_paths = [getattr(k, big) for k in keys]
        bloom = self._filter(plan, site, context, small, small_paths, items, bits)
        joined = _filtered_join(plan, site, big, big_paths, bloom)

        fpp = bloom_fpp(items, bits, stats["keys"])
        survival = stats["survival"]
        surviving = round(stats["big_rows"] * (survival + fpp * (1 - survival)))
        details = decision.details | {
            "filtered": big,
            "keys": key_label([operand_label(operand(site.condition, p)) for p in big_paths]),
            "bits": bits,
            "bits_capped": bits < decision.details["bits"],
            "max_bits": limits[0],
            "fpp_model": decision.details["fpp"],
            "fpp": round(fpp, 5),
            "filter_bytes": len(bloom) if bloom is not None else 0,
            "expected_surviving_rows": surviving,
        }
        reason = (
            f"Bloom filter on {details['keys']}: {bits} bits, fpp {fpp:.3%},"
            f" ~{surviving} of {stats['big_rows']} {big} rows survive;"
            f" est. {details['est_plain_s']:.2f}s -> {details['est_bloom_s']:.2f}s"
        )
        return joined, self._choice(site, True, reason, details)

    def _filter(
        self,
        plan: JoinPlan,
        site: JoinSite,
        context: JoinContext,
        small: str,
        small_paths: list[tuple[int, ...]],
        items: int,
        bits: int,
    ) -> bytes | None:
        """The Bloom filter of the ``small`` input's keys: kept from an earlier query over
        the same input (plan and files), or built now (one job)."""
        labels = [operand_label(operand(site.condition, p)) for p in small_paths]
        fingerprint = input_facts(context, plan, site.path, small).fingerprint
        cache_key = (fingerprint, key_label(labels), items, bits)
        if cache_key in self._filters:
            self._filters.move_to_end(cache_key)
            context.counters["bloom_filters_reused"] += 1
        else:
            self._filters[cache_key] = build_bloom_filter(
                plan, site.path, small, small_paths, items, bits
            )
            context.counters["bloom_filters_built"] += 1
            while len(self._filters) > _KEPT:
                self._filters.popitem(last=False)
        return self._filters[cache_key]


def _filtered_join(
    plan: JoinPlan,
    site: JoinSite,
    big: str,
    big_paths: list[tuple[int, ...]],
    bloom: bytes | None,
) -> DataFrame:
    """The join over its inputs, the ``big`` one reduced to rows whose keys are all non-NULL
    and might be in ``bloom`` (to none when there is no filter: no small row has keys)."""
    frames = {w: plan.side(site.path, w) for w in ("left", "right")}
    if bloom is None:  # no small row has a non-NULL key: no big row can match
        from pyspark.sql import functions as F

        frames[big] = frames[big].where(F.lit(False))
    else:
        big_keys = [plan.condition_column(site.path, p) for p in big_paths]
        not_null = big_keys[0].isNotNull()
        for column in big_keys[1:]:
            not_null = not_null & column.isNotNull()
        might = bloom_might_contain(plan, site.path, big_paths, bloom)
        frames[big] = frames[big].where(not_null & might)
    how = {"INNER": "inner", "LEFT OUTER": "left_outer", "RIGHT OUTER": "right_outer"}
    return frames["left"].join(
        frames["right"], plan.condition_column(site.path), how[site.join_type]
    )
