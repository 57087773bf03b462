"""The soak's shared work directory: data, home, control files, events."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAULT_KINDS = (
    "delete",
    "truncate",
    "corrupt",
    "rewrite_input",
    "append_input",
    "fill",
    "hold_lock",
    "kill",
)
APPS = ("A", "B")
#: Each application's Criss options: A as shipped, B caching everything it can and reading
#: every cached result with Spark (no driver-side reads), so both read paths are soaked.
APP_OPTIONS: dict[str, dict[str, Any]] = {
    "A": {},
    "B": {"min_texec": 0, "local_read_bytes": 0},
}
#: Appended files per table before the next append replaces the table instead.
MAX_APPENDS = 3
TIER_TEMP = "_tmp"


# --- the shared work directory ----------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """Where one soak keeps its data, home, control files and events."""

    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def memory(self) -> Path:
        return Path("/dev/shm") / f"criss-soak-{self.root.name}"

    @property
    def control(self) -> Path:
        return self.root / "control"

    @property
    def events(self) -> Path:
        return self.root / "events"

    def tier_roots(self) -> dict[str, Path]:
        return {"memory": self.memory, "disk": self.home / "disk"}

    def data_version(self) -> int:
        try:
            return int((self.data / "VERSION").read_text())
        except (OSError, ValueError):
            return 0

    def stopping(self) -> bool:
        return (self.control / "stop").exists()


@contextmanager
def data_lock(work: Work, exclusive: bool) -> Iterator[None]:
    """Statements share the data; a data change excludes them (and new ones wait for it)."""
    pause = work.control / "pause"
    if exclusive:
        pause.touch()
    else:
        while pause.exists():
            time.sleep(0.05)
    with open(work.control / "data.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            if exclusive:
                pause.unlink(missing_ok=True)


def _files_under(root: Path, skip_temp: bool) -> Iterator[tuple[Path, int]]:
    """(path, bytes) of each file under ``root``; files vanishing meanwhile are skipped."""
    for folder, dirs, files in os.walk(root):  # os.walk ignores directories that vanish
        if skip_temp and Path(folder) == root:
            dirs[:] = [d for d in dirs if d != TIER_TEMP and not d.startswith(".")]
            files = [f for f in files if not f.startswith(".")]
        for name in files:
            path = Path(folder, name)
            try:
                yield path, path.stat().st_size
            except OSError:
                continue


def partition_files(work: Work) -> list[Path]:
    """Cached partition files in the tiers (not staged writes, not markers)."""
    return [p for root in work.tier_roots().values() for p, _ in _files_under(root, True)]


def tier_bytes(root: Path) -> tuple[int, int]:
    """(bytes stored, largest file) in a tier directory, staged writes not counted."""
    sizes = [size for _, size in _files_under(root, True)]
    return sum(sizes), max(sizes, default=0)


def tree_bytes(path: Path) -> int:
    return sum(size for _, size in _files_under(path, False))
