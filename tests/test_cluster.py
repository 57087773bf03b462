"""Standalone clusters on this machine: the CLI that starts and stops one, and the multi-host
rules checked against real executors on another host.

"Another host" is simulated: a worker bound to 127.0.0.2 is a different host to Spark (its
executors report that address), but it shares this machine's file systems, so the only
thing this can show is that Criss sees the executor elsewhere and refuses host-local tiers.
No multi-host file system can be run on these machines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from criss.cli import main
from criss.cluster import LoopbackCluster, alive_workers, master_status, read_state

pytestmark = pytest.mark.spark  # starts Spark processes of its own

ELSEWHERE = textwrap.dedent(
    """
    import json, sys
    import criss
    from criss.errors import ConfigError
    from criss.sparksession import local_spark
    spark = local_spark(
        "elsewhere", master=sys.argv[1], conf={"spark.driver.host": "127.0.0.1"}
    )
    spark.range(10).count()  # an executor is registered once a job ran
    out = {}
    try:
        criss.session(spark, home=sys.argv[2] + "/refused", codec_rate="20m")
        out["refused"] = None
    except ConfigError as exc:
        out["refused"] = str(exc)
    cs = criss.session(
        spark, home=sys.argv[2] + "/vouched", media="disk", shared_tiers=True,
        codec_rate="20m", min_texec=0,
    )
    spark.range(100000).selectExpr("id", "id % 7 k").write.parquet(sys.argv[2] + "/t")
    spark.read.parquet(sys.argv[2] + "/t").createOrReplaceTempView("t")
    sql = "select k, count(*) n, sum(id) s from t group by k"
    expected = sorted(map(tuple, spark.sql(sql).collect()))
    got = [sorted(map(tuple, cs.sql(sql).collect())) for _ in range(3)]
    out["equal"] = all(rows == expected for rows in got)
    out["counters"] = dict(cs.report()["counters"])
    print("RESULT" + json.dumps(out), flush=True)
    """
)


def test_criss_cluster_start_status_and_stop(tmp_path: Path) -> None:
    runner = CliRunner()
    directory = str(tmp_path / "cluster")
    options = ["--dir", directory, "--workers", "1", "--memory", "1g"]
    started = runner.invoke(main, ["cluster", "start", *options])
    try:
        assert started.exit_code == 0, started.output
        url = started.output.strip().splitlines()[-1]
        assert url.startswith("spark://127.0.0.1:")
        state = read_state(directory)
        assert state.master_url == url and len(state.pids) == 2
        status = runner.invoke(main, ["cluster", "status", "--dir", directory])
        assert status.output.strip() == f"{url}: 1 of 1 workers alive"
        again = runner.invoke(main, ["cluster", "start", *options])
        assert again.exit_code != 0 and "stop it first" in again.output
    finally:
        stopped = runner.invoke(main, ["cluster", "stop", "--dir", directory])
    assert stopped.exit_code == 0, stopped.output
    assert master_status(state.web_url) is None
    for pid in state.pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    missing = runner.invoke(main, ["cluster", "status", "--dir", directory])
    assert missing.exit_code != 0 and "criss cluster start --dir" in missing.output


def test_host_local_tiers_are_refused_when_an_executor_runs_on_another_host(tmp_path: Path):
    with LoopbackCluster(tmp_path / "cluster", workers=1, worker_hosts=["127.0.0.2"]) as cluster:
        status = master_status(cluster.state.web_url)
        assert alive_workers(status) == 1
        assert status["workers"][0]["host"] == "127.0.0.2"
        proc = subprocess.run(
            [sys.executable, "-c", ELSEWHERE, cluster.master_url, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    refused = out["refused"]
    assert refused is not None, "a /dev/shm tier was accepted with an executor elsewhere"
    assert "memory tier" in refused and "tmpfs" in refused and "127.0.0.2" in refused
    assert "spark.criss.media=disk" in refused
    assert "disk tier" in refused and "spark.criss.shared.tiers=true" in refused
    # vouched shared (here it truly is: one machine), the executor elsewhere writes and reads
    assert out["equal"]
    assert out["counters"]["operators_reused"] >= 1 and out["counters"]["fallbacks"] == 0


@pytest.mark.cluster
def test_the_suite_runs_on_the_master_it_was_given(spark, spark_master) -> None:
    """The cluster pass really runs on the standalone cluster: executors in their own JVMs."""
    assert spark.sparkContext.master == spark_master
    if spark_master.startswith("local"):
        return
    assert spark_master.startswith("spark://127.0.0.1:")
    spark.range(100, numPartitions=4).count()  # executors are registered once a job ran
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    assert len(infos) >= 3  # the driver and one executor per worker
