"""Tier bandwidths: the medium's raw speed combined with Spark's Parquet throughput."""

from __future__ import annotations

import pytest

from criss.bandwidth import measure_bandwidth, measure_codec_rate
from criss.config import CrissOptions
from criss.qtree import QTree
from criss.space import calibrate
from criss.storage.tiers import LocalTier

pytestmark = pytest.mark.spark


def test_spark_codec_rate_bounds_the_effective_bandwidth(spark, tmp_path):
    rate = measure_codec_rate(spark, tmp_path, rows=200_000)
    raw = measure_bandwidth(tmp_path / "raw")
    assert 1e5 < rate < 1e10 and raw > 1e6
    qtree = QTree(tmp_path / "catalog.db")
    tier = LocalTier("disk", tmp_path / "disk")
    calibrate([tier], CrissOptions.resolve(None), qtree, rate)
    assert tier.bandwidth < min(rate, qtree.meta(f"bandwidth:disk:{tier.root}"))
    configured = LocalTier("disk", tmp_path / "d2")
    calibrate([configured], CrissOptions.resolve(None, disk_bandwidth="5m"), qtree, rate)
    assert configured.bandwidth == 5 << 20  # a configured bandwidth is taken as it is
    qtree.close()
