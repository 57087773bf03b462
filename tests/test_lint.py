"""The code base stays ruff-clean (lint and format), as STYLE.md asks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _ruff() -> list[str]:
    beside = Path(sys.executable).with_name("ruff")
    return [str(beside)] if beside.exists() else [shutil.which("ruff") or "ruff"]


def test_ruff_lint_and_format_are_clean():
    for args in (["check", "."], ["format", "--check", "."]):
        proc = subprocess.run(_ruff() + args, cwd=REPO, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
