"""What ``pip install criss`` gives: one import name, a working CLI, and what Spark needs.

Builds a fresh virtual environment, installs a copy of the repository (not editable, no
extras) and checks from outside the repository that only ``criss`` was added, that the
folders mapped into it (qtree, storage, policies, workload) do not leak as top-level names,
and that a PySpark job using ``mapInArrow`` (the range index) runs with the declared
dependencies alone. About 1-2 minutes with pip's wheel cache warm.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

pytestmark = [pytest.mark.slow, pytest.mark.spark]

REPO = Path(__file__).resolve().parent.parent
#: Top-level names that live in the repository but must install only under ``criss``.
NOT_TOP_LEVEL = ("qtree", "storage", "policies", "experiments", "workload")

MAP_IN_ARROW_JOB = textwrap.dedent(
    """
    import pyarrow as pa
    from criss.sparksession import local_spark

    spark = local_spark("criss-install-test", master="local[1]",
                        conf={"spark.driver.memory": "1g"})

    def double(batches):
        for batch in batches:
            yield pa.RecordBatch.from_pydict({"id": [2 * v for v in batch.column(0).to_pylist()]})

    rows = spark.range(10).mapInArrow(double, "id long").collect()
    assert sorted(r.id for r in rows) == list(range(0, 20, 2)), rows
    spark.stop()
    print("mapInArrow ok")
    """
)


def _source_copy(target: Path) -> Path:
    """The files a build reads (pyproject, README, mapped folders), so pip's in-tree build
    writes its build/ and egg-info there and not in the working tree."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    folders = set(project["tool"]["setuptools"]["package-dir"].values())
    target.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, target / name)
    for folder in sorted(folders):
        shutil.copytree(
            REPO / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    return target


def _run(args: list, cwd: Path, timeout: float, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("PYSPARK_PYTHON", None)
    proc = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"{args} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(the venv's python, its site-packages, a working directory outside the repository)."""
    root = tmp_path_factory.mktemp("install")
    source = _source_copy(root / "src")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=root, timeout=120)
    python = venv / "bin" / "python"
    _run([python, "-m", "pip", "install", "--quiet", source], cwd=root, timeout=600)
    site = Path(
        _run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=root,
            timeout=60,
        ).stdout.strip()
    )
    away = root / "elsewhere"
    away.mkdir()
    return python, site, away


def test_site_packages_gains_criss_and_no_other_project_name(installed):
    _, site, _ = installed
    names = {p.name for p in site.iterdir()}
    assert "criss" in names
    assert any(n.startswith("criss-") and n.endswith(".dist-info") for n in names), names
    leaked = sorted(set(NOT_TOP_LEVEL) & names)
    assert not leaked, f"installed as top-level names: {leaked}"
    for sub in ("qtree", "storage", "policies", "workload", "dashboard"):
        assert (site / "criss" / sub / "__init__.py").is_file(), sub
    assert (site / "criss" / "dashboard" / "templates" / "base.html").is_file()


def test_the_mapped_folders_import_only_under_criss(installed):
    python, _, away = installed
    bare = _run([python, "-c", "import storage"], cwd=away, timeout=60, check=False)
    assert bare.returncode != 0 and "No module named 'storage'" in bare.stderr
    ok = _run(
        [python, "-c", "import criss.storage.tiers, criss.qtree, criss.policies, criss.workload"],
        cwd=away,
        timeout=60,
    )
    assert ok.returncode == 0


def test_the_console_script_works(installed):
    python, _, away = installed
    proc = _run([python.parent / "criss", "--help"], cwd=away, timeout=60)
    assert "Criss: automatic reuse" in proc.stdout
    for command in ("replay", "ls", "stats", "explain", "clear", "dashboard", "datagen"):
        assert command in proc.stdout


def test_a_map_in_arrow_job_runs_with_the_declared_dependencies(installed):
    python, _, away = installed
    proc = _run([python, "-c", MAP_IN_ARROW_JOB], cwd=away, timeout=240, check=False)
    assert "PACKAGE_NOT_INSTALLED" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0 and "mapInArrow ok" in proc.stdout, proc.stderr[-3000:]
