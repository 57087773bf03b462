"""Several Criss configurations replayed side by side with plain Spark in one run."""

from __future__ import annotations

import pytest

from criss.errors import WorkloadError
from criss.workload.replay import ReplayConfig, run_replay

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


def test_unknown_modes_and_badly_named_variants_are_refused():
    with pytest.raises(WorkloadError, match="unknown replay mode"):
        ReplayConfig(modes=("spark", "criss-fast"))
    with pytest.raises(WorkloadError, match="must start with 'criss-'"):
        ReplayConfig(modes=("spark", "fast"), variants={"fast": {}})
