"""What ``criss replay`` prints: statement names, what Criss did per query, next commands."""

from __future__ import annotations

import importlib.util
import logging
import sys

from rich.console import Console

from criss.console import (
    PhaseLog,
    ReplayProgress,
    print_next_steps,
    print_replay_summary,
    reuse_summary,
    statement_name,
)


def _record(position: int, variant: str, criss: dict | None = None) -> dict:
    record = {"position": position, "query": "Q3", "variant": variant, "seconds": 1.0, "rows": 7}
    return record if criss is None else {**record, "criss": criss}


def test_statement_names_never_say_orig():
    assert statement_name(_record(0, "orig")) == "Q3"
    assert statement_name(_record(0, "v60")) == "Q3-v60"


def test_each_query_says_what_criss_reused_or_cached_and_how():
    reused = {
        "operators_seen": 20,
        "operators_reused": 2,
        "partitions_reused": 6,
        "partitions_recomputed": 2,
        "rewrites_project_subset": 1,
        "operators_cached": 1,
        "fallback": None,
    }
    assert reuse_summary(reused) == "reused 2 (6/8 partitions, project-subset) · cached 1"
    assert reuse_summary({"operators_cached": 3, "joins_range_join": 1}) == (
        "cached 3 · join range-join"
    )
    assert reuse_summary({"operators_seen": 9, "operators_matched": 4}) == (
        "nothing (4/9 operators seen before)"
    )
    assert reuse_summary({"fallback": "catalog locked"}) == "fallback: catalog locked"


def test_the_summary_table_has_a_column_per_criss_mode(capsys):
    spark = [_record(0, "orig"), _record(1, "v30")]
    criss = [_record(0, "orig", {"operators_cached": 1}), _record(1, "v30", {"fallback": "x"})]
    result = {
        "stream": "zipf",
        "sf": 0.1,
        "seed": 42,
        "modes": {
            "spark": {"total_seconds": 2.0, "queries": spark},
            "criss": {"total_seconds": 2.0, "queries": criss},
        },
    }
    print_replay_summary(result)
    out = capsys.readouterr().out
    assert "criss: reused / cached" in out and "cached 1" in out and "fallback: x" in out
    assert "orig" not in out and "Q3-v30" in out


def test_the_run_ends_with_the_commands_that_look_inside_its_home(capsys, monkeypatch):
    print_next_steps({"criss": "results/demo-home"}, "results")
    out = capsys.readouterr().out
    assert "criss ls --home results/demo-home" in out
    assert "criss dashboard --home results/demo-home --results results" in out


def test_next_steps_name_the_criss_that_ran_when_it_is_not_on_path(capsys, monkeypatch, tmp_path):
    """The demo runs .venv/bin/criss without activating the venv: a bare ``criss`` would
    not be found, so the commands name that script; without Flask, how to install it."""
    script = tmp_path / ".venv" / "bin" / "criss"
    script.parent.mkdir(parents=True)
    script.touch()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(script), "replay"])
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    print_next_steps({"criss": "results/demo-home"}, "results")
    out = capsys.readouterr().out
    assert ".venv/bin/criss ls --home results/demo-home" in out
    assert "pip install 'criss[dashboard]'" in out


def test_slow_phases_are_shown_while_a_replay_runs():
    console = Console(record=True, width=200)
    with PhaseLog(console):
        logging.getLogger("criss.progress").info("measuring the disk tier's bandwidth (once)")
    logging.getLogger("criss.progress").info("not shown after the run")
    text = console.export_text()
    assert "measuring the disk tier's bandwidth (once)" in text and "not shown" not in text


def test_the_warm_up_has_its_own_bar():
    progress = ReplayProgress(4, ("spark", "criss"), enabled=False)
    with progress:
        progress.warmup(1, 3)
        progress.update("spark", _record(0, "orig"))
    tasks = {t.description: t for t in progress._progress.tasks}
    assert tasks["warm-up (plain Spark, untimed)"].completed == 1
    assert tasks["replay Q3"].total == 4


def test_the_once_per_home_bandwidth_measurement_says_so(tmp_path, caplog):
    from criss.config import CrissOptions
    from criss.space import calibrate
    from criss.storage.tiers import LocalTier

    class Meta(dict):
        meta, set_meta = dict.get, dict.__setitem__

    tier, meta = LocalTier("disk", tmp_path / "disk"), Meta()
    with caplog.at_level(logging.INFO, logger="criss.progress"):
        calibrate([tier], CrissOptions(), meta, codec_rate=50e6)
        calibrate([tier], CrissOptions(), meta, codec_rate=50e6)  # measured: not again
    said = [r.getMessage() for r in caplog.records if r.name == "criss.progress"]
    assert len(said) == 1 and "disk tier's bandwidth" in said[0] and "once per home" in said[0]
