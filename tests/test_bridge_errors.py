"""The bridge's one rule for JVM failures: py4j/PySpark errors become BridgeError (no Spark)."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JError
from pyspark.errors import AnalysisException

from criss.bridge import is_jvm_error, jvm_errors
from criss.errors import BridgeError


def test_is_jvm_error_tells_spark_failures_from_criss_bugs():
    assert is_jvm_error(Py4JError("gateway gone"))
    assert is_jvm_error(AnalysisException("no such column"))
    assert not is_jvm_error(KeyError("plan JSON changed"))
    assert not is_jvm_error(BridgeError("already ours"))


@pytest.mark.parametrize("error", [Py4JError("gateway gone"), AnalysisException("bad plan")])
def test_jvm_errors_name_the_operation_and_chain_the_original(error):
    @jvm_errors("read the executed plan's metrics")
    def read() -> None:
        raise error

    with pytest.raises(BridgeError, match="cannot read the executed plan's metrics: ") as raised:
        read()
    assert raised.value.__cause__ is error


def test_jvm_errors_let_other_errors_through_and_keep_results():
    @jvm_errors("inspect the plan's joins")
    def broken() -> None:
        raise KeyError("criss bug")

    @jvm_errors("inspect the plan's joins")
    def works(x: int) -> int:
        return x + 1

    with pytest.raises(KeyError):
        broken()
    assert works(1) == 2 and works.__name__ == "works"
