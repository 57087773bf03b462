"""Streams are deterministic and have the stated properties; replays run end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from criss.workload.replay import ReplayConfig, result_checksum, run_replay, write_results
from criss.workload.streams import MAX_VARIANT_REPEATS, STREAMS, make_stream, zipf_weights

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("kind", STREAMS)
def test_streams_are_deterministic_per_seed(kind):
    a = make_stream(kind, 100, seed=7, sf=0.01)
    b = make_stream(kind, 100, seed=7, sf=0.01)
    c = make_stream(kind, 100, seed=8, sf=0.01)
    assert [q.sql for q in a] == [q.sql for q in b]
    assert [q.sql for q in a] != [q.sql for q in c]
    assert len(a) == 100 and [q.position for q in a] == list(range(100))


def test_random_stream_is_roughly_uniform():
    counts = Counter(q.qid for q in make_stream("random", 2200, seed=1, sf=1))
    assert set(counts) == set(range(1, 23))
    assert max(counts.values()) < 2.0 * min(counts.values())


def test_zipf_stream_is_skewed_by_rank():
    stream = make_stream("zipf", 5000, seed=3, sf=1, zipf_skew=1.2)
    counts = Counter(q.qid for q in stream).most_common()
    top_share = counts[0][1] / len(stream)
    expected_top = zipf_weights(22, 1.2)[0] / sum(zipf_weights(22, 1.2))
    assert abs(top_share - expected_top) < 0.03
    assert counts[0][1] > 4 * counts[10][1]  # rank 1 vs rank 11: 11**1.2 ≈ 17.8x
    sql_per_qid = {}
    for q in stream:  # a repeat is the very same statement
        assert sql_per_qid.setdefault(q.qid, q.sql) == q.sql


def test_random_v_stream_repeats_no_statement_more_than_twice():
    stream = make_stream("random-v", 100, seed=5, sf=1)
    per_statement = Counter(q.sql for q in stream)
    assert max(per_statement.values()) <= MAX_VARIANT_REPEATS
    assert {q.variant for q in stream} == {"orig", "v60", "v30"}
    assert len(per_statement) >= 50


def test_no_repeat_stream_has_only_distinct_statements():
    stream = make_stream("no-repeat", 100, seed=5, sf=1)
    assert len({q.sql for q in stream}) == 100
    assert all("<> -" in q.sql for q in stream)


def test_drift_streams_draw_fresh_parameters_and_hot_ones_recur():
    from criss.workload.tpch.queries import QUERY_IDS

    drift = make_stream("drift", 200, seed=5, sf=1)
    hot = make_stream("drift-hot", 200, seed=5, sf=1)
    assert {q.qid for q in drift} == set(QUERY_IDS)
    for stream in (drift, hot):  # equal names are equal statements, and the other way round
        assert len({q.name for q in stream}) == len({q.sql for q in stream})
    # fresh draws rarely repeat a statement (Q18 has four quantities, Q13 16 word pairs)
    drift_repeats = len(drift) - len({q.sql for q in drift})
    hot_repeats = len(hot) - len({q.sql for q in hot})
    assert drift_repeats < 0.25 * len(drift) < hot_repeats
    # a hot stream's repeats are spread over its few sets per query, not one statement
    per_query = Counter(q.qid for q in {q.sql: q for q in hot}.values())
    assert min(per_query.values()) >= 2


def test_tpcds_streams_draw_from_sparks_query_files():
    from criss.errors import WorkloadError
    from criss.workload.tpcds.queries import query, query_ids

    stream = make_stream("zipf", 200, seed=3, sf=0.01, benchmark="tpcds")
    assert stream == make_stream("zipf", 200, seed=3, sf=0.01, benchmark="tpcds")
    assert {q.qid for q in stream} <= set(query_ids()) and len({q.qid for q in stream}) > 20
    assert all(q.sql == query(q.qid) and q.query == q.qid for q in stream)
    assert len(query_ids()) == 118 and {"q1", "q14a", "q14b", "q99"} <= set(query_ids())
    for kind in ("random-v", "no-repeat"):
        with pytest.raises(WorkloadError, match="random, zipf"):
            make_stream(kind, 10, benchmark="tpcds")
        with pytest.raises(WorkloadError, match="random, zipf"):
            ReplayConfig(stream=kind, benchmark="tpcds")
    with pytest.raises(WorkloadError, match="no TPC-DS query 'q100'"):
        query("q100")


def test_datagen_writes_tpcds_tables_once(tmp_path):
    from click.testing import CliRunner

    from criss.cli import main
    from criss.workload.tpcds.data import TABLES, TPCDS

    where = tmp_path / "tpcds"
    args = ["datagen", "--benchmark", "tpcds", "--sf", "0.01", "--data-dir", str(where)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert TPCDS.is_complete(where, 0.01)
    assert {p.stem for p in where.glob("*.parquet")} >= set(TABLES)
    written = (where / TPCDS.marker).stat().st_mtime_ns
    assert CliRunner().invoke(main, args).exit_code == 0  # complete: reused, not rewritten
    assert (where / TPCDS.marker).stat().st_mtime_ns == written


GENERATE = (
    "import sys; from pathlib import Path; from criss.workload.tpch.data import ensure_tpch; "
    "ensure_tpch(0.01, Path(sys.argv[1]))"
)


def test_processes_asking_for_the_same_data_at_once_generate_it_once(tmp_path):
    """Two processes (test workers, two ``criss datagen``) wanting one directory take turns:
    one generates, the other waits and finds it complete, and neither wipes the other's files."""
    from criss.workload.tpch.data import TPCH

    where = tmp_path / "tpch" / "sf0.01"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", GENERATE, str(where)], stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    said = [proc.communicate(timeout=300)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], said
    assert sum("generating TPC-H SF0.01" in text for text in said) == 1, said
    assert TPCH.is_complete(where, 0.01)
    assert (where.parent / ".sf0.01.lock").exists()


@pytest.mark.spark
def test_a_tpcds_replay_returns_plain_sparks_rows_and_reuses(spark, tmp_path):
    from criss.workload.tpcds.data import ensure_tpcds

    data = ensure_tpcds(0.01, REPO / "data" / "tpcds" / "sf0.01", quiet=True)
    config = ReplayConfig(
        stream="zipf",
        queries=6,
        sf=0.01,
        seed=5,
        modes=("spark", "criss"),
        home=tmp_path / "home",
        data_dir=data,
        benchmark="tpcds",
    )
    # a session of its own: TPC-DS's views (customer, ...) must not replace TPC-H's
    result = run_replay(spark.newSession(), config)
    assert result["benchmark"] == "tpcds"
    assert result["comparison"]["checksums_match"], result["comparison"]
    names = [q["query"] for q in result["modes"]["criss"]["queries"]]
    assert len(set(names)) < len(names)  # the stream repeats a query...
    assert result["criss_report"]["counters"]["operators_reused"] >= 1  # ...which Criss serves


@pytest.mark.spark
def test_a_statement_spark_rejects_is_recorded_in_every_mode_not_fatal(spark, tmp_path):
    """TPC-DS q90 divides by zero at SF 0.01 (ANSI mode): plain Spark raises, so must
    Criss, and the replay goes on with the next statement."""
    from criss.workload.tpcds.data import ensure_tpcds

    data = ensure_tpcds(0.01, REPO / "data" / "tpcds" / "sf0.01", quiet=True)
    config = ReplayConfig(
        stream="random",
        queries=3,
        sf=0.01,
        seed=0,  # q90, q38, q80a
        modes=("spark", "criss"),
        home=tmp_path / "home",
        data_dir=data,
        benchmark="tpcds",
    )
    result = run_replay(spark.newSession(), config)
    assert result["comparison"]["checksums_match"], result["comparison"]
    for mode in ("spark", "criss"):
        first, *rest = result["modes"][mode]["queries"]
        assert (first["query"], first["error"], first["rows"]) == ("q90", "DIVIDE_BY_ZERO", None)
        assert first["checksum"] == "error:DIVIDE_BY_ZERO"
        assert all("error" not in q and q["rows"] is not None for q in rest)


def test_checksum_ignores_row_order_but_not_content():
    rows = [(1, "a", 2.5), (2, "b", None)]
    assert result_checksum(rows) == result_checksum(list(reversed(rows)))
    assert result_checksum(rows) != result_checksum([(1, "a", 2.5), (2, "c", None)])
    assert result_checksum(rows + rows[:1]) != result_checksum(rows)


@pytest.mark.spark
def test_replay_both_modes_same_checksums_and_reuse(tpch, tpch_dir, tmp_path):
    config = ReplayConfig(
        stream="zipf",
        queries=12,
        sf=0.01,
        seed=11,
        modes=("spark", "criss"),
        home=tmp_path / "home",
        data_dir=tpch_dir,
    )
    result = run_replay(tpch, config)
    assert result["comparison"]["checksums_match"], result["comparison"]
    criss_queries = result["modes"]["criss"]["queries"]
    assert sum(q["criss"].get("operators_reused", 0) for q in criss_queries) >= 1
    assert result["criss_report"]["counters"]["operators_reused"] >= 1
    again = run_replay(
        tpch,
        ReplayConfig(
            stream="zipf", queries=12, sf=0.01, seed=11, modes=("spark",), data_dir=tpch_dir
        ),
    )
    assert [q["checksum"] for q in again["modes"]["spark"]["queries"]] == [
        q["checksum"] for q in result["modes"]["spark"]["queries"]
    ]
    out = write_results(result, tmp_path / "r.json")
    shape = json.loads(out.read_text())
    assert {"stream", "seed", "sf", "queries", "modes"} <= set(shape)
    assert set(shape["modes"]["spark"]["queries"][0]) >= {
        "position",
        "query",
        "variant",
        "seconds",
        "rows",
        "checksum",
    }


@pytest.mark.spark  # the replay's Spark runs in a child process
def test_cli_replay_both_modes_end_to_end(tpch_dir, tmp_path):
    out = tmp_path / "cli.json"
    cmd = [
        sys.executable,
        "-m",
        "criss.cli",
        "replay",
        "--stream",
        "random",
        "--queries",
        "2",
        "--sf",
        "0.01",
        "--mode",
        "both",
        "--data-dir",
        str(tpch_dir),
        "--out",
        str(out),
        "--quiet",
        "--warmup",
        "--variant",
        "disk:media=disk,codec_rate=20m",
        # three applications live at once beside the suite's: each heap fixed at 1 GB
        "--conf",
        "spark.driver.memory=1g",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["queries"] == 2 and len(result["modes"]["spark"]["queries"]) == 2
    assert result["warmup"] is True
    # a replay's applications run with their heap fixed at the driver memory it set
    assert "-Xms1024m" in result["spark_conf"]["spark.driver.extraJavaOptions"].split()
    # each Criss mode's own warm-up ran with its options, outside the timed stream
    assert result["warmup_seconds"]["criss-disk"]["criss"]["operators_reused"] >= 1
    # a Criss configuration named on the command line ran side by side with Spark
    assert result["variants"] == {
        "criss": {},
        "criss-disk": {"media": "disk", "codec_rate": "20m"},
    }
    assert result["comparisons"]["criss-disk"]["checksums_match"]
    assert result["comparisons"]["criss"]["checksums_match"]  # --mode both: Criss as well
    assert len(result["modes"]["criss"]["queries"]) == 2
    # by default each timed statement waited (untimed, at most 3 s) for idle CPUs
    waits = [q["idle_wait"] for m in result["modes"].values() for q in m["queries"]]
    assert len(waits) == 6 and all(0 < w <= 3.5 for w in waits), waits
    assert "criss-disk vs spark" in proc.stdout
    bad = subprocess.run(
        [*cmd[:3], "replay", "--variant", "nocolon"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "expected NAME:KEY=VALUE" in bad.stderr


def test_every_cli_command_has_help_and_is_in_the_readme():
    from click.testing import CliRunner

    from criss.cli import main

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for name, command in main.commands.items():
        assert command.help, f"criss {name} has no help text"
        assert f"criss {name}" in readme, f"criss {name} is not documented in README.md"
        assert CliRunner().invoke(main, [name, "--help"]).exit_code == 0
