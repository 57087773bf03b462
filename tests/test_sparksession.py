"""The local session's JVM settings (criss.sparksession), without starting one."""

from __future__ import annotations

import pytest

from criss.sparksession import LOCAL_DEFAULTS, driver_memory_bytes, with_fixed_heap


@pytest.fixture(autouse=True)
def no_submit_args(monkeypatch):
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)


def java_options(conf: dict[str, str]) -> list[str]:
    settings = {**LOCAL_DEFAULTS, **conf}
    return with_fixed_heap(settings, conf)["spark.driver.extraJavaOptions"].split()


def test_the_heap_is_fixed_at_the_driver_memory_the_caller_chose():
    assert java_options({}) == ["-XX:+UseParallelGC", "-Xms6144m"]
    assert java_options({"spark.driver.memory": "512m"})[-1] == "-Xms512m"
    assert java_options({"spark.driver.memory": "2048"})[-1] == "-Xms2048m"  # MiB, as Spark
    assert java_options({"spark.driver.memory": "2gb"})[-1] == "-Xms2048m"


def test_a_callers_own_java_options_or_an_unread_memory_are_left_as_given():
    mine = {"spark.driver.extraJavaOptions": "-XX:+UseG1GC"}
    assert java_options(mine) == ["-XX:+UseG1GC"]
    assert java_options({"spark.driver.memory": "lots"}) == ["-XX:+UseParallelGC"]
    assert driver_memory_bytes("lots") is None and driver_memory_bytes(" 6g ") == 6 * 2**30


@pytest.mark.parametrize(
    "submit_args",
    ["--driver-memory 2g pyspark-shell", "--conf spark.driver.memory=2g pyspark-shell"],
)
def test_a_heap_set_on_spark_submits_command_line_is_not_contradicted(monkeypatch, submit_args):
    """PYSPARK_SUBMIT_ARGS follow the builder's settings on the command line and win: an
    -Xms from the builder's 6g above their 2g maximum would stop the JVM at start."""
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", submit_args)
    assert java_options({}) == ["-XX:+UseParallelGC"]
