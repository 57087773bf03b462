"""Seeded query streams, as in the Criss paper's evaluation (§3.1).

* ``random``    Random-QS: N queries drawn uniformly from the 22 (poor locality).
* ``zipf``      Zipf-QS: N queries drawn with a Zipf law over a seeded ranking of the 22.
* ``random-v``  Random-QS-v: N drawn from the 66 originals and variants, none more than twice.
* ``no-repeat`` every statement distinct and no subtree shared beyond the raw file scans
                (each statement filters every table by a no-op predicate of its own), to
                measure pure overhead.
* ``drift``     parameter drift: each position draws a query uniformly and fresh substitution
                parameters by qgen's rules (TPC-H clause 2.4), so exact repeats are rare and
                an exact-result cache saves almost nothing; what can be reused is the part of
                a query its parameters do not touch, or a cached result that still holds what
                the new parameters ask for.
* ``drift-hot`` analysts converging: as ``drift``, but each query has a few "hot" parameter
                sets drawn once per stream, and most positions take one of them.

Within a stream a query id always renders the same statement, so a repeat is a real repeat.
``benchmark="tpcds"`` draws ``random`` and ``zipf`` from the TPC-DS queries instead (Spark's
query files, whose parameters are fixed), named ``q1`` … ``q99`` with their variants.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass

from criss.errors import WorkloadError
from criss.workload.tpch import queries as tpch

BENCHMARK_STREAMS = {
    "tpch": ("random", "zipf", "random-v", "no-repeat", "drift", "drift-hot"),
    "tpcds": ("random", "zipf"),
}

STREAMS = BENCHMARK_STREAMS["tpch"]
#: First key column of each table, used by the no-repeat stream's per-statement no-op filter.
TABLE_KEYS = {
    "region": "r_regionkey",
    "nation": "n_nationkey",
    "supplier": "s_suppkey",
    "customer": "c_custkey",
    "part": "p_partkey",
    "partsupp": "ps_partkey",
    "orders": "o_orderkey",
    "lineitem": "l_orderkey",
}
#: No statement of Random-QS-v occurs more often than this (the paper's rule).
MAX_VARIANT_REPEATS = 2
#: ``drift-hot``: parameter sets per query that recur, and the share of positions taking one.
HOT_PARAMETER_SETS = 3
HOT_SHARE = 0.7


@dataclass(frozen=True)
class StreamQuery:
    position: int
    qid: int | str  # a TPC-H query number, or a TPC-DS query's name ("q14a")
    variant: str
    sql: str

    @property
    def query(self) -> str:
        """The query's name in reports: ``Q7`` (TPC-H) or ``q14a`` (TPC-DS)."""
        return self.qid if isinstance(self.qid, str) else f"Q{self.qid}"

    @property
    def name(self) -> str:
        return self.query if self.variant == "orig" else f"{self.query}-{self.variant}"

    def to_dict(self) -> dict:
        return asdict(self)


def zipf_weights(n: int, skew: float) -> list[float]:
    """Unnormalised Zipf weights 1/rank**skew for ranks 1..n."""
    return [1.0 / rank**skew for rank in range(1, n + 1)]


def _statement_seed(seed: int, qid: int) -> int:
    return seed * 1000 + qid


def _originals(seed: int, sf: float, benchmark: str = "tpch") -> dict[int | str, str]:
    """Each query's statement: TPC-H's drawn by qgen's rules from ``seed``, TPC-DS's fixed."""
    if benchmark == "tpcds":
        from criss.workload.tpcds import queries as tpcds

        return {name: tpcds.query(name) for name in tpcds.query_ids()}
    return {
        q: tpch.statement(q, "orig", seed=_statement_seed(seed, q), sf=sf).sql
        for q in tpch.QUERY_IDS
    }


def random_stream(n: int, seed: int, sf: float, benchmark: str = "tpch") -> list[StreamQuery]:
    rng = random.Random(seed)
    stmts = _originals(seed, sf, benchmark)
    picks = [rng.choice(list(stmts)) for _ in range(n)]
    return [StreamQuery(i, q, "orig", stmts[q]) for i, q in enumerate(picks)]


def zipf_stream(
    n: int, seed: int, sf: float, skew: float = 1.0, benchmark: str = "tpch"
) -> list[StreamQuery]:
    rng = random.Random(seed)
    stmts = _originals(seed, sf, benchmark)
    ranking = list(stmts)
    rng.shuffle(ranking)
    picks = rng.choices(ranking, weights=zipf_weights(len(ranking), skew), k=n)
    return [StreamQuery(i, q, "orig", stmts[q]) for i, q in enumerate(picks)]


def random_v_stream(n: int, seed: int, sf: float) -> list[StreamQuery]:
    statements = [
        tpch.statement(q, v, seed=_statement_seed(seed, q), sf=sf)
        for q in tpch.QUERY_IDS
        for v in tpch.VARIANTS
    ]
    slots = statements * MAX_VARIANT_REPEATS
    if n > len(slots):
        raise WorkloadError(
            f"random-v holds at most {len(slots)} queries ({len(statements)} statements, "
            f"each at most {MAX_VARIANT_REPEATS} times); asked for {n}"
        )
    random.Random(seed).shuffle(slots)
    return [StreamQuery(i, s.qid, s.variant, s.sql) for i, s in enumerate(slots[:n])]


def salted_tables(salt: int) -> dict[str, str]:
    """Derived tables equal to the base tables but with a filter unique to ``salt``."""
    return {
        table: f"(select * from {table} where {key} <> {-salt})"
        for table, key in TABLE_KEYS.items()
    }


def no_repeat_stream(n: int, seed: int, sf: float) -> list[StreamQuery]:
    rng = random.Random(seed)
    order: list[int] = []
    while len(order) < n:
        batch = list(tpch.QUERY_IDS)
        rng.shuffle(batch)
        order.extend(batch)
    return [
        StreamQuery(
            i,
            q,
            "orig",
            tpch.statement(
                q, "orig", seed=seed * 100_000 + i, sf=sf, tables=salted_tables(i + 1)
            ).sql,
        )
        for i, q in enumerate(order[:n])
    ]


def drift_stream(n: int, seed: int, sf: float, *, hot: bool = False) -> list[StreamQuery]:
    """Queries drawn uniformly, each with parameters drawn afresh by qgen's rules, or (with
    ``hot``) most of the time one of its few hot parameter sets. The variant is a digest of
    the statement (``p3f9a1c``), so equal names are equal statements and the other way round:
    a fresh draw can repeat an earlier one (Q18 has four quantities)."""
    rng = random.Random(seed)
    hot_sets = {
        q: [
            tpch.random_params(q, random.Random(_statement_seed(seed, q) * 31 + k), sf)
            for k in range(HOT_PARAMETER_SETS)
        ]
        for q in tpch.QUERY_IDS
    }
    stream = []
    for position in range(n):
        qid = rng.choice(tpch.QUERY_IDS)
        if hot and rng.random() < HOT_SHARE:
            params = hot_sets[qid][rng.randrange(HOT_PARAMETER_SETS)]
        else:
            params = tpch.random_params(qid, rng, sf)
        sql = tpch.variant_statement(qid, "orig", params).sql
        variant = "p" + hashlib.sha256(sql.encode()).hexdigest()[:6]
        stream.append(StreamQuery(position, qid, variant, sql))
    return stream


def check_stream(kind: str, benchmark: str) -> None:
    """A WorkloadError unless ``benchmark`` has a ``kind`` stream."""
    if benchmark not in BENCHMARK_STREAMS:
        raise WorkloadError(
            f"unknown benchmark {benchmark!r}; choose one of {', '.join(BENCHMARK_STREAMS)}"
        )
    if kind not in BENCHMARK_STREAMS[benchmark]:
        raise WorkloadError(
            f"no {kind!r} stream for {benchmark}: choose one of "
            f"{', '.join(BENCHMARK_STREAMS[benchmark])} (random-v and no-repeat rewrite "
            "TPC-H's templates)"
        )


def make_stream(
    kind: str,
    n: int = 100,
    seed: int = 42,
    sf: float = 1.0,
    *,
    zipf_skew: float = 1.0,
    benchmark: str = "tpch",
) -> list[StreamQuery]:
    """The ``kind`` stream of ``n`` queries; the same arguments always give the same stream."""
    if n < 1:
        raise WorkloadError(f"a stream needs at least one query, got {n}")
    check_stream(kind, benchmark)
    if kind == "random":
        return random_stream(n, seed, sf, benchmark)
    if kind == "zipf":
        return zipf_stream(n, seed, sf, zipf_skew, benchmark)
    if kind == "random-v":
        return random_v_stream(n, seed, sf)
    if kind == "no-repeat":
        return no_repeat_stream(n, seed, sf)
    if kind in ("drift", "drift-hot"):
        return drift_stream(n, seed, sf, hot=kind == "drift-hot")
    raise WorkloadError(f"unknown stream {kind!r}; choose one of {', '.join(STREAMS)}")
