"""Seeded random refinements (``experiments.subsumption_fuzz``) through Criss on real Spark:
every query's rows equal plain Spark's, Criss raises only where plain Spark does, and reuse
across parameters did serve some of them (a run that served nothing would prove nothing)."""

from __future__ import annotations

import pytest

from experiments.subsumption_fuzz import fuzz

pytestmark = pytest.mark.spark


def test_random_refinements_through_criss_equal_plain_spark(spark):
    report = fuzz(spark, pairs=40, seed=5)
    assert report.mismatches == []
    assert report.served["rewrites_filter_subsumption"] >= 3, dict(report.served)
