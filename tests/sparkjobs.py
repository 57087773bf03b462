"""Counting the Spark jobs an action runs, with the status tracker (no Spark UI needed)."""

from __future__ import annotations


def jobs_in(spark, group: str, action) -> int:
    """How many Spark jobs ``action`` ran (counted with the status tracker)."""
    spark.sparkContext.setJobGroup(group, group)
    try:
        action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
