"""Cost decisions for key-filter joins: semi-join prefilter, Bloom filter, LIP star filters.

Plain numbers in (measured rows, key counts, row widths, survival fractions), decisions
out. The model is the semi-join paper's (seed 000): a shuffle join moves the big input's
bytes through the shuffle; a key prefilter moves only the surviving fraction, at the price
of computing, shipping and probing the small input's distinct keys. The Bloom variant
(seed 004) trades filter size against false positives: its error rate minimises
``build(bits) + false positives × cost per shuffled row``.

The constants are defaults measured on this machine kind (2 cores, local mode) by
``python -m experiments.joins.filters --sf 1`` (results in
``experiments/results/joins/filters.json``); tests may lower them to force a decision.

>>> semi_prefilter(big_rows=6_000_000, big_width=40, survival=0.01, keys=15_000, key_width=8).chosen
True
>>> semi_prefilter(big_rows=6_000_000, big_width=40, survival=0.5, keys=750_000, key_width=8).chosen
False
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: Above this surviving fraction of the big input a prefilter is not chosen: measured
#: gains at 1 % and 10 % (3.0 → 0.9 s, 3.3 → 1.4 s), none at 50 %.
MAX_SURVIVAL = 0.3
#: A single dimension filter of a star join is dropped when it keeps more than this.
MAX_FILTER_SURVIVAL = 0.5
#: Bytes per second a sort-merge join's shuffle (write, read, sort) moves, local[2].
SHUFFLE_RATE = 100e6
#: Bytes per second of distinct keys computed, collected and broadcast.
KEY_RATE = 20e6
#: Bytes per second of big-input keys probed against a broadcast key set.
PROBE_RATE = 400e6
#: Fixed cost of the extra key job (scheduling, broadcast), seconds.
FIXED_COST_S = 0.3
#: Shuffle partitions per executor core for a prefiltered join (seed 000 found w = 2 on
#: its cluster). None keeps Spark's own (AQE-coalesced) partitioning: on local[2] at SF1,
#: orders(10 %) ⋈ wide lineitem took 7.0 s without a repartition against 8.9 / 10.7 / 11.5 /
#: 10.8 s with w = 1 / 2 / 4 / 8 (experiments/results/joins/filters.json, "parallelism").
PARALLELISM_W: int | None = None
#: Key sets above this many bytes are not broadcast as an exact set (a Bloom filter is).
MAX_EXACT_KEY_BYTES = 64 << 20
#: Bloom filter: seconds per bit serialised, shipped and OR-merged, per partition of the
#: small side (each task's buffer is a full-size filter). An estimate (50 MB/s), not measured.
BLOOM_BIT_COST_S = 1 / (8 * 50e6)


@dataclass(frozen=True)
class Decision:
    chosen: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


def shuffle_seconds(rows: float, width: float) -> float:
    return rows * width / SHUFFLE_RATE


def key_filter_can_pay(shuffled_bytes: float) -> bool:
    """Whether any key filter (exact, Bloom or runtime) could pay where at most
    ``shuffled_bytes`` of the filtered inputs cross the shuffles it would spare: each
    costs ``FIXED_COST_S`` at least (:func:`key_filter_seconds`, :func:`bloom_join`) and
    saves at most those shuffles (:func:`shuffle_seconds`). False lets a join be declined
    from its inputs' row bounds (table rows from Parquet footers, or rows measured before),
    before any job measures their keys."""
    return shuffled_bytes / SHUFFLE_RATE > FIXED_COST_S


def key_filter_seconds(keys: float, key_width: float, big_rows: float) -> float:
    """Cost of one exact key filter: the distinct-keys job plus probing every big row."""
    return FIXED_COST_S + keys * key_width / KEY_RATE + big_rows * key_width / PROBE_RATE


def semi_prefilter(
    big_rows: int, big_width: float, survival: float, keys: int, key_width: float
) -> Decision:
    """Filter the big input of a shuffle join by the small input's distinct keys?"""
    plain = shuffle_seconds(big_rows, big_width)
    filtered = key_filter_seconds(keys, key_width, big_rows) + survival * plain
    details = {
        "big_rows": big_rows,
        "big_row_bytes": round(big_width, 1),
        "survival": round(survival, 4),
        "small_keys": keys,
        "est_plain_s": round(plain, 3),
        "est_prefiltered_s": round(filtered, 3),
    }
    if survival > MAX_SURVIVAL:
        return Decision(
            False, f"{survival:.0%} of big rows survive (> {MAX_SURVIVAL:.0%})", details
        )
    if keys * key_width > MAX_EXACT_KEY_BYTES:
        return Decision(False, f"{keys} keys too many to broadcast exactly", details)
    if filtered >= plain:
        return Decision(
            False, f"est. {filtered:.2f}s with prefilter >= {plain:.2f}s plain", details
        )
    return Decision(
        True,
        f"{survival:.1%} of {big_rows} big rows survive; est. {plain:.2f}s -> {filtered:.2f}s",
        details,
    )


def shuffle_partitions(cores: int, w: int | None = None) -> int:
    """Partitions of a prefiltered join's shuffle: ``w × executor cores`` (seed 000)."""
    return max(1, (w or PARALLELISM_W or 2) * cores)


def bloom_error_rate(
    keys: int, filterable_rows: float, row_width: float, partitions: int = 8
) -> float:
    """The false-positive rate minimising build cost + cost of the rows it lets through.

    Seed 004's model: T(p) = a + b·m(p) + c + d·p·N_f with m(p) = -n·ln p / (ln 2)² bits
    (an optimal Bloom filter), b the cost of a bit (× the partitions whose filters are
    merged), d of a false positive (a shuffled row), N_f the big rows the filter could drop.
    dT/dp = 0 gives p* = b·n / ((ln 2)²·d·N_f).
    """
    if keys <= 0 or filterable_rows <= 0:
        return 0.5
    d = row_width / SHUFFLE_RATE
    b = BLOOM_BIT_COST_S * partitions
    p = b * keys / (math.log(2) ** 2 * d * filterable_rows)
    return min(0.5, max(1e-4, p))


def bloom_bits(keys: int, error_rate: float) -> int:
    return max(64, math.ceil(-keys * math.log(error_rate) / math.log(2) ** 2))


def bloom_join(
    big_rows: int,
    big_width: float,
    survival: float,
    keys: int,
    key_width: float,
    partitions: int = 8,
) -> Decision:
    """Filter the big input by a Bloom filter of the small input's keys rather than exactly?

    Chosen when the Bloom filter (build + false positives) is estimated cheaper than the
    exact key set, and a filter at all is cheaper than the plain join.
    """
    plain = shuffle_seconds(big_rows, big_width)
    filterable = (1 - survival) * big_rows
    p = bloom_error_rate(keys, filterable, big_width, partitions)
    bits = bloom_bits(keys, p)
    bloom = (
        FIXED_COST_S
        + bits * BLOOM_BIT_COST_S * partitions
        + big_rows * key_width / PROBE_RATE
        + (survival * big_rows + p * filterable) * big_width / SHUFFLE_RATE
    )
    exact = key_filter_seconds(keys, key_width, big_rows) + survival * plain
    if keys * key_width > MAX_EXACT_KEY_BYTES:
        exact = math.inf
    details = {
        "big_rows": big_rows,
        "survival": round(survival, 4),
        "small_keys": keys,
        "fpp": round(p, 5),
        "bits": bits,
        "est_plain_s": round(plain, 3),
        "est_bloom_s": round(bloom, 3),
        "est_exact_s": round(exact, 3) if math.isfinite(exact) else None,
    }
    if survival > MAX_SURVIVAL:
        return Decision(
            False, f"{survival:.0%} of big rows survive (> {MAX_SURVIVAL:.0%})", details
        )
    if bloom >= plain:
        return Decision(
            False, f"est. {bloom:.2f}s with Bloom filter >= {plain:.2f}s plain", details
        )
    if bloom >= exact:
        return Decision(
            False, f"exact key set cheaper (est. {exact:.2f}s <= {bloom:.2f}s)", details
        )
    return Decision(True, f"fpp {p:.3%} ({bits} bits); est. {plain:.2f}s -> {bloom:.2f}s", details)


@dataclass(frozen=True)
class StarJoin:
    """One join of a star's chain above the fact input, as the LIP model sees it."""

    #: Fraction of fact rows with a partner in the dimension (1.0 when not measured).
    survival: float = 1.0
    #: Distinct keys of the dimension (its key set's size), 0 when not measured.
    keys: int = 0
    key_width: float = 8.0
    #: Whether Spark shuffles the fact side here (the dimension is too big to broadcast).
    shuffled: bool = True
    #: Whether its key filter may be applied at the fact input (a measured, filtered dimension).
    candidate: bool = False


def chain_shuffle_seconds(
    fact_rows: int, fact_width: float, chain: list[StarJoin], at_scan: set[int]
) -> float:
    """Seconds the chain's shuffle joins spend moving fact rows, when the filters in
    ``at_scan`` are applied at the fact input: the rows reaching a join are those left by
    the filters at the scan and by the joins below it."""
    rows = fact_rows * math.prod(chain[i].survival for i in at_scan)
    seconds = 0.0
    for i, join in enumerate(chain):
        if join.shuffled:
            seconds += shuffle_seconds(rows, fact_width)
        if i not in at_scan:
            rows *= join.survival
    return seconds


def star_filters(fact_rows: int, fact_width: float, chain: list[StarJoin]) -> Decision:
    """Which dimension key filters to apply at a star join's fact input (LIP, seed 003).

    ``chain`` holds the joins above the fact input, lowest first. A filter pays only where
    it keeps fact rows out of a shuffle join *below* its own join (a dimension broadcast
    at the lowest join already filters before anything is shuffled). Candidates keeping
    more than ``MAX_FILTER_SURVIVAL`` are dropped; the rest are applied if their cost plus
    the shuffles left is below the plain chain's shuffles. ``details["keep"]`` lists the
    indices kept.
    """
    keep = [i for i, j in enumerate(chain) if j.candidate and j.survival <= MAX_FILTER_SURVIVAL]
    survival = math.prod(chain[i].survival for i in keep) if keep else 1.0
    plain = chain_shuffle_seconds(fact_rows, fact_width, chain, set())
    cost = sum(key_filter_seconds(chain[i].keys, chain[i].key_width, fact_rows) for i in keep)
    filtered = cost + chain_shuffle_seconds(fact_rows, fact_width, chain, set(keep))
    details = {
        "fact_rows": fact_rows,
        "survivals": [round(j.survival, 4) for j in chain if j.candidate],
        "shuffled": [i for i, j in enumerate(chain) if j.shuffled],
        "keep": keep,
        "survival": round(survival, 4),
        "est_plain_s": round(plain, 3),
        "est_filtered_s": round(filtered, 3),
    }
    if not keep:
        return Decision(False, "no dimension filter keeps few enough fact rows", details)
    if filtered >= plain:
        return Decision(False, f"est. {filtered:.2f}s filtered >= {plain:.2f}s plain", details)
    return Decision(
        True,
        f"{len(keep)} dimension filters keep {survival:.1%} of {fact_rows} fact rows;"
        f" est. {plain:.2f}s -> {filtered:.2f}s",
        details,
    )
