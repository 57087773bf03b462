"""A Spark standalone cluster on this machine: one master and N workers, from the installed
PySpark, each worker with its own work and local directories.

Executors run in their own JVMs (one per worker), as on a real cluster; what they cannot
show is a second host's file system. The suite runs its cluster tests on one of these
(``pytest --spark-master loopback``), and ``criss cluster start`` starts one by hand:

    criss cluster start --dir /tmp/criss-cluster      # prints spark://127.0.0.1:<port>
    criss replay --master spark://127.0.0.1:<port> ...
    criss cluster stop --dir /tmp/criss-cluster

Processes are stopped by the pids recorded in ``<dir>/cluster.json``, never by name.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from criss.errors import EnvironmentProblem, NotFoundError
from criss.sparksession import require_java

STATE_FILE = "cluster.json"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


@dataclass
class ClusterState:
    """What ``stop`` and ``status`` need: the master's addresses and every process started."""

    master_url: str
    web_url: str
    pids: list[int] = field(default_factory=list)
    workers: int = 0


def spark_home() -> Path:
    """The installed PySpark's directory: it carries ``bin/spark-class`` and Spark's jars."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").exists():
        raise EnvironmentProblem(
            f"{home}/bin/spark-class is missing: this PySpark cannot start a standalone "
            "cluster; reinstall it with `pip install --force-reinstall pyspark`."
        )
    return home


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


class LoopbackCluster:
    """A standalone master and ``workers`` workers of ``cores`` cores and ``memory`` each.

    ``worker_hosts`` gives each worker the address it binds and registers with (default:
    ``host`` for all); another loopback address such as 127.0.0.2 makes Spark see that
    worker's executors on a host other than the driver's.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        host: str = "127.0.0.1",
        worker_hosts: list[str] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.host = host
        self.cores = cores
        self.memory = memory
        self.worker_hosts = worker_hosts or [host] * workers
        self.state: ClusterState | None = None

    def start(self, timeout: float = 90.0) -> str:
        """Start the master and the workers; return the master URL once all are alive."""
        require_java()
        self.directory.mkdir(parents=True, exist_ok=True)
        port, web_port = free_port(self.host), free_port(self.host)
        url = f"spark://{self.host}:{port}"
        state = ClusterState(url, f"http://{self.host}:{web_port}", workers=len(self.worker_hosts))
        self.state = state
        try:
            master = ["--host", self.host, "--port", str(port), "--webui-port", str(web_port)]
            state.pids.append(self._launch("master", MASTER_CLASS, master, {}))
            self._wait(lambda status: status is not None, timeout, "the master to answer")
            for index, worker_host in enumerate(self.worker_hosts):
                state.pids.append(self._launch_worker(index, worker_host, url))
            self._wait(
                lambda status: status is not None and alive_workers(status) >= state.workers,
                timeout,
                f"{state.workers} workers to register",
            )
        except BaseException:
            self.stop()
            raise
        (self.directory / STATE_FILE).write_text(json.dumps(asdict(state)))
        return url

    def _launch_worker(self, index: int, worker_host: str, url: str) -> int:
        base = self.directory / f"worker-{index}"
        (base / "work").mkdir(parents=True, exist_ok=True)
        (base / "local").mkdir(parents=True, exist_ok=True)
        args = [
            "--host", worker_host,
            "--cores", str(self.cores),
            "--memory", self.memory,
            "--work-dir", str(base / "work"),
            "--webui-port", str(free_port(self.host)),
            url,
        ]  # fmt: skip
        local = {"SPARK_LOCAL_DIRS": str(base / "local")}
        return self._launch(f"worker-{index}", WORKER_CLASS, args, local)

    def _launch(self, name: str, main_class: str, args: list[str], env: dict[str, str]) -> int:
        home = spark_home()
        environment = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOG_DIR": str(self.directory / "logs"),
            # executors start Python workers with the driver's interpreter (it sends its
            # own PYSPARK_PYTHON); this covers tasks a worker itself starts
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            **env,
        }
        log = open(self.directory / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        process = subprocess.Popen(
            [str(home / "bin" / "spark-class"), main_class, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )
        log.close()
        return process.pid

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready(master_status(self.state.web_url)):
                return
            if not all(_running(pid) for pid in self.state.pids):
                break
            time.sleep(0.5)
        raise EnvironmentProblem(
            f"the loopback Spark cluster did not start: timed out waiting for {what}; "
            f"see the logs in {self.directory}"
        )

    def stop(self) -> None:
        """Stop every process this cluster started (by pid, with its process group)."""
        _stop_and_forget(self.directory, self.state.pids if self.state is not None else [])

    def __enter__(self) -> LoopbackCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def master_url(self) -> str:
        if self.state is None:
            raise NotFoundError("the cluster is not started: call start() first")
        return self.state.master_url


def master_status(web_url: str) -> dict | None:
    """The master's JSON status (workers, applications), or None if it does not answer."""
    try:
        with urllib.request.urlopen(f"{web_url}/json/", timeout=2) as answer:
            return json.load(answer)
    except (OSError, ValueError):
        return None


def alive_workers(status: dict) -> int:
    return sum(1 for worker in status.get("workers", ()) if worker.get("state") == "ALIVE")


def read_state(directory: str | Path) -> ClusterState:
    path = Path(directory) / STATE_FILE
    try:
        return ClusterState(**json.loads(path.read_text()))
    except FileNotFoundError:
        raise NotFoundError(
            f"no cluster started from {directory} ({path} is missing): "
            f"start one with `criss cluster start --dir {directory}`"
        ) from None


def stop_cluster(directory: str | Path) -> ClusterState:
    """Stop the cluster started from ``directory`` (by a command before this one)."""
    state = read_state(directory)
    _stop_and_forget(Path(directory), state.pids)
    return state


def _stop_and_forget(directory: Path, pids: list[int]) -> None:
    stop_pids(pids)
    (directory / STATE_FILE).unlink(missing_ok=True)


def stop_pids(pids: list[int], grace: float = 10.0) -> None:
    """SIGTERM each process group, then SIGKILL what is left after ``grace`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_running(pid) for pid in pids):
            time.sleep(0.2)
        if not any(_running(pid) for pid in pids):
            return


def _running(pid: int) -> bool:
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child (started by another command): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return finished == 0
