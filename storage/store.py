"""A directory-per-operator store of cached results with atomic commits.

An entry is one operator's result: Parquet part files written by Spark plus a
``manifest.json`` naming every file with its size. It is written under a temporary
name and renamed into place, so a reader sees a whole entry or none. An entry whose
files no longer match its manifest (missing, truncated) is treated as absent.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from criss.errors import StorageError

MANIFEST = "manifest.json"
#: Spark bookkeeping files in an output directory that are not data.
_NOT_DATA = ("_", ".")


@dataclass(frozen=True)
class Entry:
    """A committed cached result of the operator with fingerprint ``key``."""

    key: str
    path: str
    schema_json: str
    #: (file name, size in bytes, CRC-32 of the content) of every data file.
    files: tuple[tuple[str, int, int], ...]
    rows: int
    bytes: int
    texec: float
    created: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def file_paths(self) -> list[str]:
        return [os.path.join(self.path, name) for name, _, _ in self.files]


class EntryStore:
    """Committed entries under ``root``: ``<root>/<key>/{manifest.json, part-*}``."""

    def __init__(self, root: str | Path, name: str = "disk") -> None:
        self.root = Path(root)
        self.name = name
        self._tmp = self.root / "_tmp"
        try:
            self._tmp.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cache directory {self.root} is not writable: {exc}") from exc
        self.bytes_written = 0
        self._verified: set[tuple[str, int, int]] = set()

    def staging_dir(self, key: str) -> Path:
        """A fresh directory path (not created) for Spark to write ``key``'s files into."""
        return self._tmp / f"{key}.{uuid.uuid4().hex[:8]}"

    def commit(
        self,
        key: str,
        staged: Path,
        *,
        schema_json: str,
        rows: int,
        texec: float,
        extra: dict[str, Any] | None = None,
    ) -> Entry:
        """Write the manifest of ``staged`` and move it into place as entry ``key``."""
        staged = Path(staged)
        files = tuple(
            sorted(
                (p.name, p.stat().st_size, file_crc32(p))
                for p in staged.iterdir()
                if p.is_file() and not p.name.startswith(_NOT_DATA)
            )
        )
        entry = Entry(
            key=key,
            path=str(self.root / key),
            schema_json=schema_json,
            files=files,
            rows=rows,
            bytes=sum(f[1] for f in files),
            texec=texec,
            created=time.time(),
            extra=dict(extra or {}),
        )
        (staged / MANIFEST).write_text(json.dumps(asdict(entry)))
        final = self.root / key
        existing = self.get(key)
        if existing is not None:
            # Another writer committed the same result first; DataFrames may be reading its
            # files, so keep them and drop ours.
            shutil.rmtree(staged, ignore_errors=True)
            return existing
        if final.exists():
            self.delete(key)  # damaged: nobody can be reading it successfully
        try:
            os.rename(staged, final)
        except OSError as exc:
            shutil.rmtree(staged, ignore_errors=True)
            raise StorageError(f"cannot commit cache entry {key} into {final}: {exc}") from exc
        self.bytes_written += entry.bytes
        return entry

    def get(self, key: str) -> Entry | None:
        """The committed entry ``key`` if all its files are intact, else None."""
        manifest = self.root / key / MANIFEST
        try:
            data = json.loads(manifest.read_text())
            entry = Entry(**{**data, "files": tuple(tuple(f) for f in data["files"])})
        except (OSError, ValueError, TypeError, KeyError):
            return None
        if not all(
            self._intact(path, size, crc)
            for path, (_, size, crc) in zip(entry.file_paths, entry.files, strict=True)
        ):
            return None
        return entry

    def _intact(self, path: str, size: int, crc: int) -> bool:
        """Size always; content (CRC-32) once per file version seen by this process."""
        try:
            stat = os.stat(path)
        except OSError:
            return False
        if stat.st_size != size:
            return False
        version = (path, stat.st_size, stat.st_mtime_ns)
        if version not in self._verified:
            if file_crc32(path) != crc:
                return False
            self._verified.add(version)
        return True

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def keys(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if (p / MANIFEST).is_file())

    def delete(self, key: str) -> None:
        target = self.root / key
        if not target.exists():
            return
        # Rename first so a concurrent reader never sees a half-deleted entry as whole.
        doomed = self._tmp / f"deleted.{key}.{uuid.uuid4().hex[:8]}"
        try:
            os.rename(target, doomed)
        except OSError:
            doomed = target
        shutil.rmtree(doomed, ignore_errors=True)

    def used_bytes(self) -> int:
        total = 0
        for key in self.keys():
            entry = self.get(key)
            total += entry.bytes if entry else 0
        return total

    def clear(self, keep: set[str] | None = None) -> None:
        for key in self.keys():
            if not keep or key not in keep:
                self.delete(key)
        for stale in self._tmp.iterdir():
            shutil.rmtree(stale, ignore_errors=True)


def file_crc32(path: str | Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc
