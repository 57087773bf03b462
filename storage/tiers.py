"""Storage tiers: one contract for every medium that holds cached partition files.

A tier stores files by *name*, a relative path such as ``<key>/00003-1a2b3c4d.parquet``.
Every write is atomic (a temporary name, then a rename), so a name that exists is a
whole file. Tiers know nothing about entries, bitmaps or benefit: the partition cache
(:mod:`storage.cache`) decides what goes where and records it in the catalog.

Implementations: :class:`LocalTier` (the memory tier on tmpfs and the disk tier under
``home``) and :class:`storage.alluxio.AlluxioTier`. All pass ``tests/test_tiers.py``.
"""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from criss.errors import StorageError

#: Directory (inside a tier) for files being written; anything in it is an orphan on start.
TEMP_DIR = "_tmp"
_COPY_CHUNK = 1 << 22


def check_name(name: str) -> str:
    """A tier file name must be relative and stay inside the tier."""
    parts = PurePosixPath(name).parts
    if not parts or name.startswith("/") or any(p in ("..", ".", "") for p in parts):
        raise StorageError(f"invalid tier file name {name!r}: must be a relative path inside it")
    if parts[0] == TEMP_DIR:
        raise StorageError(f"tier file name {name!r} may not start with {TEMP_DIR}/")
    return name


class Tier(ABC):
    """A storage medium for partition files, with a quota and a bandwidth.

    ``capacity_bytes`` None means unlimited. ``bandwidth`` (bytes/s) is measured or
    configured by the cache; tiers only carry it.
    """

    name: str
    capacity_bytes: int | None
    bandwidth: float | None = None
    #: The medium's own bandwidth, without Spark's encoding (None: ``bandwidth`` was
    #: configured as a whole).
    medium_bandwidth: float | None = None

    @abstractmethod
    def write(self, name: str, source: BinaryIO) -> int:
        """Store ``source``'s bytes as ``name`` atomically; return the bytes written."""

    @abstractmethod
    def open(self, name: str) -> BinaryIO:
        """A binary reader of ``name``; raises StorageError if it is absent."""

    @abstractmethod
    def size(self, name: str) -> int | None:
        """Bytes of ``name``, or None if it does not exist."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Remove ``name``; a missing name is not an error."""

    @abstractmethod
    def list(self) -> dict[str, int]:
        """Every committed file (name → bytes); temporary files are not listed."""

    @abstractmethod
    def uri(self, name: str) -> str:
        """Where Spark reads ``name`` from."""

    @abstractmethod
    def clean_temp(self) -> int:
        """Delete leftovers of interrupted writes; return how many were removed."""

    # --- defaults built on the primitives ----------------------------------------------------

    def adopt(self, local: Path, name: str) -> int:
        """Move the local file ``local`` into the tier as ``name`` (it is gone afterwards)."""
        with open(local, "rb") as source:
            written = self.write(name, source)
        local.unlink(missing_ok=True)
        return written

    def used_bytes(self) -> int:
        return sum(self.list().values())

    def scratch_dir(self) -> Path | None:
        """A local directory on the tier's own file system for staging writes, if any."""
        return None

    def local_path(self, name: str) -> Path | None:
        """A local path of ``name`` when the tier is a local file system."""
        return None

    def local_root(self) -> Path | None:
        """The local directory holding the tier's files, None if Spark reads it by a URI."""
        return None

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "capacity_bytes": self.capacity_bytes}


class LocalTier(Tier):
    """A directory on a local file system: the disk tier, or the memory tier on tmpfs."""

    def __init__(self, name: str, root: str | Path, capacity_bytes: int | None = None) -> None:
        self.name = name
        self.root = Path(root)
        self.capacity_bytes = capacity_bytes
        self._temp = self.root / TEMP_DIR
        try:
            make_private_dir(self._temp)
        except OSError as exc:
            raise StorageError(f"{name} tier directory {self.root} is not usable: {exc}") from exc

    def _path(self, name: str) -> Path:
        return self.root / check_name(name)

    def _temp_path(self, name: str) -> Path:
        return self._temp / f"{name.replace('/', '.')}.{uuid.uuid4().hex[:8]}"

    def write(self, name: str, source: BinaryIO) -> int:
        final, temp = self._path(name), self._temp_path(name)
        try:
            with open(temp, "wb") as sink:
                shutil.copyfileobj(source, sink, _COPY_CHUNK)
            written = temp.stat().st_size
            make_private_dir(final.parent)
            os.replace(temp, final)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            raise StorageError(f"{self.name} tier cannot store {name}: {exc}") from exc
        return written

    def adopt(self, local: Path, name: str) -> int:
        final = self._path(name)
        try:
            same_device = os.stat(local).st_dev == os.stat(self.root).st_dev
        except OSError as exc:
            raise StorageError(f"{self.name} tier cannot adopt {local}: {exc}") from exc
        if not same_device:
            return super().adopt(local, name)
        try:
            make_private_dir(final.parent)
            written = os.stat(local).st_size
            os.replace(local, final)
        except OSError as exc:
            raise StorageError(f"{self.name} tier cannot adopt {local}: {exc}") from exc
        return written

    def open(self, name: str) -> BinaryIO:
        try:
            return open(self._path(name), "rb")
        except OSError as exc:
            raise StorageError(f"{self.name} tier cannot read {name}: {exc}") from exc

    def size(self, name: str) -> int | None:
        path = self._path(name)  # an invalid name is an error, not a missing file
        try:
            return os.stat(path).st_size
        except OSError:
            return None

    def delete(self, name: str) -> None:
        path = self._path(name)
        path.unlink(missing_ok=True)
        try:
            path.parent.rmdir()  # the entry's directory, once its last partition is gone
        except OSError:
            pass

    def list(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for path in self._files():
            try:
                found[path.relative_to(self.root).as_posix()] = path.stat().st_size
            except OSError:
                continue  # deleted while listing
        return found

    def _files(self) -> Iterator[Path]:
        for child in self.root.iterdir():
            if child.name == TEMP_DIR or child.name.startswith("."):
                continue  # leftovers of writes, and the tier's own markers
            if child.is_dir():
                yield from (p for p in child.rglob("*") if p.is_file())
            elif child.is_file():
                yield child

    def uri(self, name: str) -> str:
        return file_uri(self._path(name))

    def local_path(self, name: str) -> Path:
        return self._path(name)

    def local_root(self) -> Path:
        return self.root

    def scratch_dir(self) -> Path:
        return self._temp

    def clean_temp(self) -> int:
        removed = 0
        for leftover in self._temp.iterdir():
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
            removed += 1
        return removed

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "root": str(self.root)}


def file_uri(path: str | os.PathLike) -> str:
    """``file:///abs/path``: a local file's address that Spark resolves on the local file
    system whatever ``fs.defaultFS`` is (a bare path would resolve against HDFS there).
    Not percent-encoded: Hadoop's ``Path`` quotes the path itself."""
    return "file://" + os.path.abspath(path)


def spark_uri(location: str | os.PathLike) -> str:
    """Where Spark writes or reads ``location``: a local path as a ``file:`` URI, a URI as is."""
    local = local_file(str(location))
    return file_uri(local) if local is not None else str(location)


def local_file(location: str) -> str | None:
    """The local path of a ``file:`` URI or a bare path; None for a remote URI."""
    if location.startswith("file:"):
        rest = location[len("file:") :]
        return "/" + rest.lstrip("/") if rest.startswith("//") or rest.startswith("/") else rest
    return None if "://" in location else location


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) readable by this user only (0700)."""
    if path.is_dir():
        return
    # mkdir(parents=True) would create missing parents with the umask's mode, not 0700.
    make_private_dir(path.parent)
    try:
        path.mkdir(mode=stat.S_IRWXU)
    except FileExistsError:
        if not path.is_dir():
            raise


def move_file(source: Tier, target: Tier, name: str) -> int:
    """Move ``name`` from ``source`` to ``target`` (rename when both share a file system)."""
    local = source.local_path(name)
    # Only a LocalTier owns its files; another tier's local path is a view (e.g. a FUSE mount).
    if local is not None and isinstance(source, LocalTier) and isinstance(target, LocalTier):
        try:
            scratch = target.scratch_dir()
            if os.stat(local).st_dev == os.stat(scratch).st_dev:
                return target.adopt(local, name)
        except OSError as exc:
            raise StorageError(f"cannot move {name} from {source.name}: {exc}") from exc
    with source.open(name) as reader:
        written = target.write(name, reader)
    source.delete(name)
    return written
