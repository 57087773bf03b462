"""Several Criss configurations replayed side by side with plain Spark in one run."""

from __future__ import annotations

import math
import multiprocessing
import tempfile
from collections import Counter

import pytest

import criss
from criss.errors import ConfigError, WorkloadError
from criss.workload.applications import _reply_error, memory_advice, side_by_side_memory
from criss.workload.replay import (
    ReplayConfig,
    run_order,
    run_replay,
    warm_up_criss,
)

pytestmark = pytest.mark.spark


def test_variants_run_side_by_side_with_their_own_options(tpch, tpch_dir, tmp_path):
    config = ReplayConfig(
        stream="zipf",
        queries=8,
        sf=0.01,
        seed=5,
        modes=("spark", "criss", "criss-disk", "criss-recycler"),
        variants={"criss-disk": {"media": "disk"}, "criss-recycler": {"policy": "recycler"}},
        home=tmp_path / "home",
        data_dir=tpch_dir,
    )
    result = run_replay(tpch, config)
    assert set(result["comparisons"]) == {"criss", "criss-disk", "criss-recycler"}
    assert all(c["checksums_match"] for c in result["comparisons"].values())
    reports = result["criss_reports"]
    assert reports["criss-disk"]["media"] == "disk"
    assert reports["criss-disk"]["tiers"]["memory"]["used_bytes"] == 0
    assert reports["criss-disk"]["tiers"]["disk"]["used_bytes"] > 0
    assert reports["criss-recycler"]["policy"] == "recycler"
    homes = {r["home"] for r in reports.values()}
    assert len(homes) == 3  # one cache space each
    for mode in config.criss_modes:
        assert reports[mode]["counters"]["operators_reused"] >= 1
    modes = result["modes"]
    for position in range(config.queries):
        turns = {m: modes[m]["queries"][position]["turn"] for m in config.modes}
        order = run_order(config.modes, position)
        assert turns == {m: order.index(m) for m in config.modes}, position
        # every mode's JVM collection time is counted per statement, plain Spark's too
        assert all(modes[m]["queries"][position]["jvm_gc_seconds"] >= 0 for m in config.modes)
    assert sum(q["jvm_gc_seconds"] for m in config.modes for q in modes[m]["queries"]) > 0
    # and the stage classes each statement compiled (in one JVM, whichever mode runs a
    # statement first compiles most of what the others find compiled)
    assert all(q["classes_compiled"] >= 0 for m in config.modes for q in modes[m]["queries"])
    assert sum(q["classes_compiled"] for m in config.modes for q in modes[m]["queries"]) > 0


@pytest.mark.parametrize("count", [2, 3, 4])
def test_every_mode_runs_first_and_before_every_other_equally_often(count):
    """Whoever runs a statement first at its position compiles what the others may find
    compiled: over a full cycle each mode goes first, and before each other mode, as often
    as any other."""
    modes = [f"m{i}" for i in range(count)]
    cycle = math.factorial(count)
    orders = [run_order(modes, position) for position in range(2 * cycle)]
    assert orders[:cycle] == orders[cycle:]
    assert all(sorted(order) == modes for order in orders)
    firsts = Counter(order[0] for order in orders)
    assert set(firsts.values()) == {2 * cycle // count}
    before = Counter(
        (a, b) for order in orders for i, a in enumerate(order) for b in order[i + 1 :]
    )
    assert len(before) == count * (count - 1) and set(before.values()) == {cycle}
    if count == 2:  # two modes simply alternate
        assert orders[:2] == [("m0", "m1"), ("m1", "m0")]


def test_unknown_modes_and_badly_named_variants_are_refused():
    with pytest.raises(WorkloadError, match="unknown replay mode"):
        ReplayConfig(modes=("spark", "criss-fast"))
    with pytest.raises(WorkloadError, match="must start with 'criss-'"):
        ReplayConfig(modes=("spark", "fast"), variants={"fast": {}})


def test_each_mode_plays_in_spark_applications_of_its_own(tpch_dir, tmp_path, spark):
    """No mode runs on classes another mode compiled: each has its JVMs (two per mode
    here, ``replicas=2``), and still every statement's rows equal plain Spark's and each
    Criss application reuses what it cached in its own home."""
    config = ReplayConfig(
        stream="zipf",
        queries=4,
        sf=0.01,
        seed=4,  # Q9, Q17, Q17, Q22: a repeat for each home to reuse
        modes=("spark", "criss"),
        home=tmp_path / "home",
        data_dir=tpch_dir,
        warmup=True,
        isolation="application",
        spark_conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.criss.min.texec": "0",
            "spark.driver.memory": "1g",  # four JVMs live at once beside the suite's own
        },
        replicas=2,
    )
    assert config.modes == ("spark", "criss", "spark#2", "criss#2")
    seen, warmed = [], []
    result = run_replay(
        None,
        config,
        on_query=lambda mode, record: seen.append(mode),
        on_warmup=lambda done, total: warmed.append((done, total)),
    )
    assert result["isolation"] == "application" and result["replicas"] == 2
    applications = result["applications"]
    assert len(set(applications.values())) == 4
    assert spark.sparkContext.applicationId not in applications.values()
    # every other application against the first plain one, the plain replica included
    assert set(result["comparisons"]) == {"criss", "spark#2", "criss#2"}
    assert all(c["checksums_match"] for c in result["comparisons"].values()), result["comparisons"]
    assert result["homes"]["criss"] != result["homes"]["criss#2"]
    for mode in ("criss", "criss#2"):
        assert result["criss_reports"][mode]["counters"]["operators_reused"] >= 1
        assert sum(q["criss"].get("operators_reused", 0) for q in result["modes"][mode]["queries"])
    assert all("criss" not in q for q in result["modes"]["spark#2"]["queries"])
    assert result["machine"]["master"] == "local[2]"
    assert result["spark_conf"]["spark.sql.shuffle.partitions"] == "4"
    # and the collector each driver ran (criss.sparksession.LOCAL_DEFAULTS)
    # with its heap fixed at the driver memory the replay set, not at the default's 6g
    options = result["spark_conf"]["spark.driver.extraJavaOptions"].split()
    assert "-XX:+UseParallelGC" in options and "-Xms1024m" in options, options
    assert len(seen) == 16  # every timed statement reported as it ran
    distinct = len({item.sql for item in config.stream_queries()})
    # one progress over every application's warm-up, each running every distinct statement:
    # a plain one as often as a Criss one runs them in full (once plain, once through Criss)
    assert warmed == [(done, 6 * distinct) for done in range(1, 6 * distinct + 1)]
    # each Criss application also ran Criss's own machinery, over a table of its own
    assert set(result["warmup_seconds"]["spark"]) == {"statements"}
    assert set(result["warmup_seconds"]["spark#2"]) == {"statements"}
    for mode in ("criss", "criss#2"):
        machinery = result["warmup_seconds"][mode]["criss"]
        assert machinery["operators_cached"] >= 1 and machinery["operators_reused"] >= 1
    for position in range(config.queries):
        turns = {m: result["modes"][m]["queries"][position]["turn"] for m in config.modes}
        assert turns == {m: run_order(config.modes, position).index(m) for m in config.modes}


def test_replicas_need_applications_of_their_own():
    with pytest.raises(WorkloadError, match="replicas=2"):
        ReplayConfig(modes=("spark", "criss"), replicas=2, isolation="session")
    with pytest.raises(WorkloadError, match="replicas=5"):
        ReplayConfig(modes=("spark",), replicas=5, isolation="application")
    config = ReplayConfig(
        modes=("spark", "criss-disk"),
        variants={"criss-disk": {"media": "disk"}},
        replicas=3,
        isolation="application",
    )
    assert config.modes == (
        "spark",
        "criss-disk",
        "spark#2",
        "criss-disk#2",
        "spark#3",
        "criss-disk#3",
    )
    assert config.criss_modes == ["criss-disk", "criss-disk#2", "criss-disk#3"]
    assert config.options_of("criss-disk#3") == {"media": "disk"}


def test_an_application_whose_jvm_is_gone_says_so_and_what_heaps_to_lower():
    """Four applications at the default 6 GB heap filled this 23 GB machine on a no-repeat
    stream and the kernel killed one's JVM: the replay said "ConnectionRefusedError"."""
    config = ReplayConfig(modes=("spark", "criss"), isolation="application")
    physical = side_by_side_memory(config)[2]
    small = ReplayConfig(
        modes=("spark", "criss"),
        isolation="application",
        spark_conf={"spark.driver.memory": "512m"},
    )
    assert side_by_side_memory(small)[:2] == ("512m", 2 * 2**29)
    assert memory_advice(small) is None
    for setting, each in (("4096", 2**32), ("2gb", 2**31), ("lots", None)):
        odd = ReplayConfig(modes=("spark",), spark_conf={"spark.driver.memory": setting})
        assert side_by_side_memory(odd)[1] == each  # a bare number is MiB, as for Spark
    heap = f"{physical // 2**20}m"  # each application's heap as large as the machine
    config = ReplayConfig(
        modes=("spark", "criss"),
        isolation="application",
        replicas=2,
        spark_conf={"spark.driver.memory": heap},
    )
    advice = memory_advice(config)
    assert advice is not None and advice.startswith("4 Spark applications run side by side")
    assert f"spark.driver.memory={heap} each" in advice and "--replicas" in advice
    parent, child = multiprocessing.Pipe()
    _reply_error(child, ConnectionRefusedError(111, "Connection refused"), config)
    kind, text = parent.recv()
    assert kind == "error" and text.startswith("its JVM has exited (ConnectionRefusedError")
    assert text.endswith(f"most likely killed for memory: {advice}")
    _reply_error(child, ValueError("a statement's own error"), config)  # not a dead JVM
    assert parent.recv() == ("error", "ValueError: a statement's own error")


def test_heaps_that_do_not_fit_the_machine_are_refused_before_any_application_starts():
    """Each application's heap is fixed at its size, so heaps that do not fit together
    fill the machine: the replay says so before starting, not when the kernel kills one
    (four applications at 6 GB on 23 GB did, ten minutes into a replay)."""
    physical = side_by_side_memory(ReplayConfig(modes=("spark",)))[2]
    config = ReplayConfig(
        modes=("spark", "criss"),
        isolation="application",
        replicas=2,
        spark_conf={"spark.driver.memory": f"{physical // 2**20 // 3}m"},
    )
    started = []
    with pytest.raises(ConfigError, match="^not started: 4 Spark applications run side by"):
        run_replay(None, config, on_warmup=lambda done, total: started.append(done))
    assert started == []
    fits = ReplayConfig(
        modes=("spark", "criss"),
        isolation="application",
        replicas=2,
        spark_conf={"spark.driver.memory": f"{physical // 2**20 // 8}m"},
    )
    assert memory_advice(fits) is None  # half the machine, and 1 GB beside each heap


def test_a_mode_whose_application_cannot_start_names_the_mode(tpch_dir, tmp_path):
    config = ReplayConfig(
        queries=2,
        sf=0.01,
        modes=("spark",),
        data_dir=tpch_dir,
        isolation="application",
        master="local[two]",
        spark_conf={"spark.driver.memory": "1g"},  # fits any machine: only the master is bad
    )
    with pytest.raises(WorkloadError, match="replay mode 'spark' failed in its Spark application"):
        run_replay(None, config)


def test_isolation_auto_is_an_application_per_mode_on_a_local_master_only():
    assert ReplayConfig(isolation="auto").isolation == "application"
    assert ReplayConfig(isolation="auto", master="local[*]").isolation == "application"
    assert ReplayConfig(isolation="auto", master="spark://127.0.0.1:7077").isolation == "session"
    assert ReplayConfig().isolation == "session"  # the API runs on the session handed in
    with pytest.raises(WorkloadError, match="unknown replay isolation 'jvm'"):
        ReplayConfig(isolation="jvm")
    with pytest.raises(WorkloadError, match="needs the SparkSession"):
        run_replay(None, ReplayConfig(queries=1, sf=0.01))


def test_criss_own_warm_up_caches_and_serves_the_statements_in_a_home_of_its_own(tpch):
    """The warm-up runs each statement through Criss as a first sight cached by its action
    and as a repeat served from it, so an application's one-time costs of that machinery
    fall on no timed query; a statement Spark rejects costs nothing more, and it leaves no
    view, no listener and nothing in Spark's cache behind."""
    from criss.workload.streams import StreamQuery
    from criss.workload.tpch.queries import statement

    spark = tpch
    statements = [statement(qid, seed=3).sql for qid in (1, 3, 6)]
    rejected = "SELECT * FROM no_such_table_anywhere"
    # a stream of them with a repeat and a statement Spark rejects
    stream = [
        StreamQuery(i, 0, "orig", sql)
        for i, sql in enumerate([*statements, statements[0], rejected])
    ]
    views = {t.name for t in spark.catalog.listTables()}
    with tempfile.TemporaryDirectory() as home:
        criss.session(spark, home=home).close()  # Criss's listener on this Spark, once
    listeners = len(spark._jsparkSession.listenerManager().listListeners())
    persisted = spark.sparkContext._jsc.getPersistentRDDs().size()
    warmed = warm_up_criss(spark, {"media": "disk"}, stream)
    # every statement cached on first sight and served on its repeat
    assert warmed["operators_cached"] >= len(statements), warmed
    assert warmed["operators_reused"] >= len(statements), warmed
    assert warmed["seconds"] > 0
    assert {t.name for t in spark.catalog.listTables()} == views
    assert len(spark._jsparkSession.listenerManager().listListeners()) == listeners
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == persisted
