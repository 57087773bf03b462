"""The experiments' analysis (oracle, first/repeat split, planning percentiles) and one tiny
real run of an experiment end to end (replay, JSON, summary, PNG)."""

from __future__ import annotations

import json

import pytest

from experiments.figures import EXPERIMENTS, markdown_table, repeats_served, run_experiment
from experiments.summary import (
    oracle_seconds,
    planning_ms,
    replica_views,
    split_first_and_repeats,
    statement_keys,
    summarize,
)


def _record(query, seconds, planning=None):
    record = {"query": query, "variant": "orig", "statement": query, "seconds": seconds}
    if planning is not None:
        record["criss"] = {"planning_seconds": planning}
    return record


def _result():
    # statement A three times, B once
    spark = [_record("Q1", 10), _record("Q2", 5), _record("Q1", 10), _record("Q1", 10)]
    criss = [
        _record("Q1", 12, 0.10),
        _record("Q2", 6, 0.08),
        _record("Q1", 1, 0.05),
        _record("Q1", 0.5, 0.30),
    ]
    results = [_record("Q1", 11), _record("Q2", 6), _record("Q1", 2), _record("Q1", 2)]
    return {
        "modes": {
            "spark": {"total_seconds": 35, "queries": spark},
            "criss": {"total_seconds": 19.5, "queries": criss},
            "criss-results": {"total_seconds": 21, "queries": results},
        },
        "comparisons": {"criss": {"checksums_match": True}},
        "stream": "zipf",
        "sf": 1,
        "queries": 4,
        "seed": 1,
        "created": "2026-11-21T00:00:00",
        "experiment": "fig5",
    }


def test_oracle_pays_each_statement_once_and_repeats_at_the_cheapest_measured_read():
    assert oracle_seconds(_result()) == pytest.approx(10 + 5 + 1 + 0.5)


def test_statements_without_a_recorded_hash_are_regenerated_from_the_seeded_stream():
    # no-repeat: the same query id recurs with a different no-op filter, so nothing repeats
    result = {"stream": "no-repeat", "queries": 30, "seed": 5, "sf": 1.0}
    records = [{"query": f"Q{i % 22 + 1}", "variant": "orig", "seconds": 1.0} for i in range(30)]
    result["modes"] = {"spark": {"total_seconds": 30.0, "queries": records}}
    assert len(set(statement_keys(result))) == 30
    assert split_first_and_repeats(records, statement_keys(result)) == (30.0, 0.0)


def test_summary_splits_first_occurrences_and_repeats_and_relates_to_the_oracle():
    assert split_first_and_repeats(_result()["modes"]["criss"]["queries"]) == (18, 1.5)
    summary = summarize(_result())
    criss = summary["modes"]["criss"]
    assert criss["time_saved"] == pytest.approx(1 - 19.5 / 35, abs=1e-4)
    assert criss["oracle_share"] == pytest.approx((35 - 19.5) / (35 - 16.5), abs=1e-3)
    assert criss["planning_ms"] == {"median": 90.0, "p95": 300.0}
    assert planning_ms([_record("Q1", 1)]) is None
    assert "| oracle | 16.5 |" in markdown_table(_result(), EXPERIMENTS["fig5"], "f.json")


def test_replicas_are_summarized_pair_by_pair_and_as_their_mean():
    result = _result()
    del result["modes"]["criss-results"]
    assert [label for label, _ in replica_views(result)] == [""]
    modes = result["modes"]
    # a second plain application 10 % slower at every position, a second Criss one equal
    modes["spark#2"] = {
        "total_seconds": 38.5,
        "queries": [{**q, "seconds": q["seconds"] * 1.1} for q in modes["spark"]["queries"]],
    }
    modes["criss#2"] = modes["criss"]
    result["replicas"] = 2
    # a plain replica's repeats are no read of a cached result: the oracle ignores them
    assert oracle_seconds(result) == pytest.approx(10 + 5 + 1 + 0.5)
    views = dict(replica_views(result))
    assert list(views) == ["1", "2", "mean"]
    assert views["2"]["modes"]["spark"] is modes["spark#2"]
    mean = views["mean"]["modes"]
    assert set(mean) == {"spark", "criss"} and "replicas" not in views["mean"]
    assert mean["spark"]["total_seconds"] == pytest.approx((35 + 38.5) / 2)
    assert mean["spark"]["queries"][1]["seconds"] == pytest.approx(5.25)
    assert mean["criss"]["total_seconds"] == pytest.approx(19.5)
    shares = {k: summarize(v)["modes"]["criss"]["oracle_share"] for k, v in views.items()}
    assert shares["2"] > shares["mean"] > shares["1"]


def test_repeats_worth_serving_count_only_repeats_plain_spark_took_long_on():
    result = _result()
    # Q1's two repeats took 10 s in plain Spark; only the first reused an operator
    result["modes"]["criss"]["queries"][2]["criss"]["operators_reused"] = 1
    assert repeats_served(result) == (1, 2)
    assert repeats_served(result, min_seconds=20) == (0, 0)
    result["modes"]["criss"]["queries"][3]["criss"]["operators_reused"] = 2
    assert repeats_served(result) == (2, 2)
    # a statement plain Spark rejects has nothing to serve: not worth serving
    result["modes"]["spark"]["queries"][3]["error"] = "DIVIDE_BY_ZERO"
    assert repeats_served(result) == (1, 1)


@pytest.mark.spark
def test_reuse_kinds_tell_repeats_subtrees_and_rules_apart():
    from experiments.summary import reuse_kinds

    queries = [
        {"criss": {}},
        {"criss": {"operators_reused": 1}},  # a statement seen before: a repeat
        {
            "criss": {
                "operators_reused": 2,
                "rewrites_aggregate_rollup": 1,
                "aggregates_lifted": 1,
                "selections_widened": 1,
            }
        },
        {"criss": {"operators_reused": 1, "rewrites_filter_subsumption": 1}},
    ]
    kinds = reuse_kinds(queries, ["a", "a", "b", "c"])
    assert kinds["repeat"] == 1 and kinds["subtree"] == 1
    assert kinds["aggregate_rollup"] == kinds["filter_subsumption"] == kinds["lifted"] == 1
    assert kinds["widened"] == 1


def test_an_experiment_runs_end_to_end(tpch, tpch_dir, tmp_path):
    pytest.importorskip("matplotlib")
    [path] = run_experiment(
        EXPERIMENTS["overhead"],
        sf=0.01,
        queries=3,
        seed=3,
        quiet=True,
        out_dir=tmp_path,
        spark=tpch,
        data_dir=tpch_dir,
    )
    result = json.loads(path.read_text())
    assert set(result["modes"]) == {"spark", "criss"}
    assert result["summary"]["modes"]["criss"]["checksums_match"] is True
    assert len(result["modes"]["criss"]["queries"]) == 3
    png = path.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
