"""Differential fuzzing of plan identity: statements that return different rows must never
share the fingerprint Criss would serve one's cached result to the other under.

Seeded random pairs of one statement under two literal values, or under two session
settings, whose literals are drawn to look alike in text: strings with commas, brackets,
quotes and the word null; arrays, maps and inline tables of them; timestamps under other
time zones (and with explicit offsets); doubles (NaN, -0.0, tiny); decimals; a try_ form
and its plain twin; settings Spark reads at run time. Each pair runs on plain Spark over a
small table: where the two results differ (rows as multisets, or one raises and the other
does not), the fingerprints of their results (``criss.qtree.rewrite.result_node``) must
differ too, unless Criss refuses to cache either. Nothing runs through Criss's cache: the
capture and canonical form decide identity, so a run checks hundreds of pairs a minute.

    .venv/bin/python -m experiments.identity_fuzz --pairs 500 --seed 1

``tests/test_identity_fuzz.py`` runs a seed in the suite. Runs quoted in RESULTS.md are
under ``experiments/results/issue20/session41/``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
from dataclasses import dataclass, field

import criss
from criss.qtree.rewrite import result_node, storable

TABLE = "identity_t"
STRINGS = ["'a'", "'a,b'", "'b'", "'null'", "''", "' '", "'a]'", "'[a'", "'x''y'", "'a, b'"]
STRINGS += ["cast(null as string)", "'keys: [a], values: [1]'", "'\\\\'"]
DOUBLES = ["0.0D", "-0.0D", "double('NaN')", "1.5D", "1e-300D", "double('Infinity')", "0.1D"]
DECIMALS = ["1.0", "1.00", "0.10", "1.5", "-0.0", "100"]
TIMESTAMPS = [
    "timestamp'2024-03-10 05:00:00'",
    "timestamp'2024-03-10 05:00:00Z'",
    "timestamp'2024-03-10 05:00:00+09:00'",
    "timestamp'2024-11-03 01:30:00'",
    "timestamp'2024-11-03 05:30:00Z'",
    "timestamp'2024-11-03 06:30:00Z'",
]
ZONES = ["UTC", "Asia/Tokyo", "America/New_York", "+05:30"]
#: Settings that change what a plan returns, with values to draw two of (None: never set,
#: which is not always what a default passed to ``conf.get`` says: ANSI is on in Spark 4).
SETTINGS = {
    "spark.sql.mapKeyDedupPolicy": ("EXCEPTION", "LAST_WIN"),
    "spark.sql.ansi.enabled": (None, "true", "false"),
    "spark.sql.legacy.timeParserPolicy": ("CORRECTED", "LEGACY"),
    "spark.sql.session.timeZone": ("UTC", "Asia/Tokyo"),
}


@dataclass
class IdentityReport:
    pairs: int = 0
    #: Pairs whose two results differ on plain Spark (the ones that can collide).
    differing: int = 0
    #: Differing pairs whose results Criss refused to cache (no reuse: no collision).
    refused: int = 0
    #: Differing pairs whose result fingerprints are equal: a cache would confuse them.
    collisions: list[str] = field(default_factory=list)


def make_table(spark, path: str) -> None:
    """``TABLE`` under ``path``: a few rows of the strings, doubles and timestamps the
    literals mimic."""
    rows = ", ".join(
        f"({i}, {STRINGS[i % len(STRINGS)]}, {DOUBLES[i % len(DOUBLES)]}, "
        f"timestamp_seconds(1710046800 + {i * 3600 - 12 * 3600}), "
        f"cast({DECIMALS[i % len(DECIMALS)]} as decimal(6,2)))"
        for i in range(24)
    )
    spark.sql(f"select * from values {rows} as t(i, s, d, ts, n)").write.parquet(path + "/t")
    spark.read.parquet(path + "/t").createOrReplaceTempView(TABLE)


def _strings(rng: random.Random, low: int, high: int) -> str:
    return ", ".join(rng.choice(STRINGS) for _ in range(rng.randint(low, high)))


def _literal_pair(rng: random.Random, pool: list[str]) -> tuple[str, str]:
    first = rng.choice(pool)
    return first, rng.choice([v for v in pool if v != first])


def _array(rng: random.Random) -> str:
    return f"array({_strings(rng, 1, 3)})"


#: Plain words whose joins and spellings Catalyst's text confuses.
WORDS = ["a", "b", "c", "null", "a,b"]


def _confusable(rng: random.Random, size: int) -> tuple[list[str], list[str]]:
    """Two lists of SQL strings whose unquoted text reads alike: adjacent words joined by
    a comma in one, apart in the other; or 'null' in one where the other has NULL."""
    words = [rng.choice(WORDS) for _ in range(size + 1)]
    if rng.random() < 0.5:
        cut = rng.randrange(size)
        joined = [*words[:cut], words[cut] + "," + words[cut + 1], *words[cut + 2 :]]
        apart = words
    else:
        joined = [*words[:-1], "null"]
        apart = [*words[:-1], None]
    quote = lambda w: "cast(null as string)" if w is None else f"'{w}'"  # noqa: E731
    return [quote(w) for w in joined], [quote(w) for w in apart]


def _look_alike(rng: random.Random, kind: str) -> tuple[str, str] | None:
    """Half the time, two literals of ``kind`` whose text Catalyst writes alike."""
    if rng.random() < 0.5:
        return None
    one, other = _confusable(rng, rng.randint(1, 3))
    if kind == "array":
        return f"array({', '.join(one)})", f"array({', '.join(other)})"
    if min(len(one), len(other)) < 2:  # two words joined: too few for a row of two
        return None
    return f"({one[0]}, {one[1]})", f"({other[0]}, {other[1]})"  # an inline table's row


#: Two statements and the settings each runs under.
Pair = tuple[str, str, dict, dict]


def _both(rng: random.Random, templates: list[str], a: str, b: str, **fields) -> tuple[str, str]:
    """One of ``templates`` filled with ``a``, and with ``b`` (``TABLE`` as ``{t}``)."""
    template = rng.choice(templates)
    return template.format(t=TABLE, v=a, **fields), template.format(t=TABLE, v=b, **fields)


def _strings_pair(rng: random.Random, kind: str) -> Pair:
    a, b = _literal_pair(rng, STRINGS)
    templates = ["select i from {t} where s = {v}", "select i, concat(s, {v}) z from {t}",
                 "select i, coalesce(s, {v}) z from {t}"]  # fmt: skip
    return *_both(rng, templates, a, b), {}, {}


def _collections_pair(rng: random.Random, kind: str) -> Pair:
    a, b = _look_alike(rng, "array") or (_array(rng), _array(rng))
    same: dict[str, str] = {}
    if kind == "array":
        template = rng.choice(
            ["select i from {t} where array_contains({v}, s)",
             "select i, array_position({v}, s) z from {t}", "select i, {v} z from {t}"]
        )  # fmt: skip
    else:
        a, b = (f"map_from_arrays({x}, transform({x}, (e, k) -> k))" for x in (a, b))
        template = "select i, element_at({v}, s) z from {t}"
        same = {"spark.sql.mapKeyDedupPolicy": "LAST_WIN"}
    return template.format(t=TABLE, v=a), template.format(t=TABLE, v=b), same, same


def _in_set_pair(rng: random.Random, kind: str) -> Pair:
    absent = ", ".join(f"'{k}-none'" for k in range(10))
    a, b = _literal_pair(rng, STRINGS)
    template = "select i, s in ({v}, " + absent + ") z from {t}"
    return template.format(t=TABLE, v=a), template.format(t=TABLE, v=b), {}, {}


def _values_pair(rng: random.Random, kind: str) -> Pair:
    a, b = _look_alike(rng, "values") or (
        ", ".join(f"({_strings(rng, 2, 2)})" for _ in range(rng.randint(1, 3))) for _ in range(2)
    )
    template = "select x, y, count(*) c from values {v} as v(x, y) group by x, y"
    return template.format(v=a), template.format(v=b), {}, {}


def _numbers_pair(rng: random.Random, kind: str) -> Pair:
    a, b = _literal_pair(rng, DOUBLES if kind == "double" else DECIMALS)
    column = "d" if kind == "double" else "n"
    templates = ["select i, {c} / {v} z from {t}", "select i from {t} where {c} = {v}",
                 "select i, greatest({c}, {v}) z from {t}"]  # fmt: skip
    return *_both(rng, templates, a, b, c=column), {}, {}


def _timestamps_pair(rng: random.Random, kind: str) -> Pair:
    a, b = _literal_pair(rng, TIMESTAMPS)
    templates = ["select i from {t} where ts < {v}", "select i, unix_micros({v}) z from {t}",
                 "select i, ts = {v} z from {t}"]  # fmt: skip
    first, second = _both(rng, templates, a, b)
    zone = "spark.sql.session.timeZone"
    if kind == "zone":
        one, other = _literal_pair(rng, ZONES)
        return first, first, {zone: one}, {zone: other}
    same = {zone: rng.choice(ZONES)}
    return first, second, same, same


def _try_pair(rng: random.Random, kind: str) -> Pair:
    value = rng.choice(["9223372036854775807", "2", "4611686018427387904"])
    plain = f"select i, i * {value} * {value} z from {TABLE}"
    tried = f"select i, try_multiply(i * {value}, {value}) z from {TABLE}"
    ansi = {"spark.sql.ansi.enabled": rng.choice(["true", "false"])}
    return plain, tried, ansi, ansi


def _settings_pair(rng: random.Random, kind: str) -> Pair:
    key = rng.choice(sorted(SETTINGS))
    sql = rng.choice(
        [f"select i, map_from_arrays(array(s, s), array(i, 0))[s] z from {TABLE} where s > ''",
         f"select i, cast(s as int) z from {TABLE}",
         f"select i, to_timestamp(concat('2024-3-', i + 1), 'yyyy-M-d') z from {TABLE}",
         f"select i, hour(ts) z from {TABLE}"]
    )  # fmt: skip
    one, other = _literal_pair(rng, list(SETTINGS[key]))
    return sql, sql, {key: one}, {key: other}


#: Each kind of pair, in the order a seed draws them.
KINDS = {
    "string": _strings_pair,
    "array": _collections_pair,
    "map": _collections_pair,
    "in-set": _in_set_pair,
    "values": _values_pair,
    "double": _numbers_pair,
    "decimal": _numbers_pair,
    "timestamp": _timestamps_pair,
    "zone": _timestamps_pair,
    "try": _try_pair,
    "setting": _settings_pair,
}


def statements(rng: random.Random) -> Pair:
    """Two statements and the settings each runs under."""
    kind = rng.choice(list(KINDS))
    return KINDS[kind](rng, kind)


def _apply(spark, settings: dict[str, str | None]) -> None:
    for key, value in settings.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def _under(spark, settings: dict[str, str | None], work):
    """``work()`` with the session's ``settings`` set (None: unset), then restored."""
    before = {key: spark.conf.get(key, None) for key in settings}
    try:
        _apply(spark, settings)
        return work()
    finally:
        _apply(spark, before)


def _outcome(spark, sql: str) -> tuple[str, ...]:
    """The statement's rows as sorted text, or the error class it raised."""
    try:
        return tuple(sorted(repr(tuple(row)) for row in spark.sql(sql).collect()))
    except Exception as exc:  # noqa: BLE001 - any type: what plain Spark does is the outcome
        return ("raised", type(exc).__name__)


def _identity(cs, sql: str) -> str | None:
    """The fingerprint Criss would cache the statement's result under; None if refused
    (or if planning raises: Criss then leaves the statement to plain Spark)."""
    try:
        captured = cs.bridge.capture(cs.spark.sql(sql))
    except Exception:  # noqa: BLE001 - any type: nothing is cached for it
        return None
    result = result_node(cs.canonical_tree(captured))
    return result.fingerprint if storable(result) else None


def check(cs, spark, rng: random.Random, report: IdentityReport) -> str | None:
    """One seeded pair: if plain Spark's outcomes differ, the identities must too; the
    collision found, if any (also added to ``report``)."""
    first, second, settings_one, settings_other = statements(rng)
    outcomes, identities = [], []
    for sql, settings in ((first, settings_one), (second, settings_other)):
        outcomes.append(_under(spark, settings, lambda sql=sql: _outcome(spark, sql)))
        identities.append(_under(spark, settings, lambda sql=sql: _identity(cs, sql)))
    report.pairs += 1
    if outcomes[0] == outcomes[1]:
        return None
    report.differing += 1
    if None in identities:
        report.refused += 1
        return None
    if identities[0] != identities[1]:
        return None
    collision = (
        f"{first} {settings_one}\n  {second} {settings_other}\n"
        f"  outcomes {outcomes[0][:3]} vs {outcomes[1][:3]}"
    )
    report.collisions.append(collision)
    return collision


def fuzz(spark, pairs: int, seed: int, on_collision=None) -> IdentityReport:
    """``pairs`` seeded pairs on ``spark``; what collided."""
    rng = random.Random(seed)
    scratch = tempfile.mkdtemp(prefix="criss-identity-")
    make_table(spark, scratch)
    report = IdentityReport()
    cs = criss.session(spark, home=scratch + "/home")
    try:
        for _ in range(pairs):
            collision = check(cs, spark, rng, report)
            if collision is not None and on_collision is not None:
                on_collision(collision)
    finally:
        cs.close()
        spark.catalog.dropTempView(TABLE)
        shutil.rmtree(scratch, ignore_errors=True)
    return report


def main() -> None:
    from criss.sparksession import local_spark

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    spark = local_spark(app_name="identity-fuzz")
    report = fuzz(spark, args.pairs, args.seed, on_collision=print)
    print(
        f"# seed {args.seed}: {report.pairs} pairs, {report.differing} with different "
        f"results, {report.refused} of them refused, {len(report.collisions)} collisions"
    )


if __name__ == "__main__":
    main()
