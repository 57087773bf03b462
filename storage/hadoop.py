"""A tier at a Hadoop file system URI: ``hdfs://``, ``s3a://``, ``abfs://``, ``viewfs://``.

On a cluster of several hosts a tier must be a place every executor and the driver reach at
one address. A shared POSIX mount is one (a :class:`storage.tiers.LocalTier` at the mount);
a Hadoop file system URI is the other, and the one Spark users have: Spark's tasks write
and read the files by URI, and the driver manages them through the same Hadoop
``FileSystem`` (:class:`RemoteFiles`, which the bridge implements). Nothing here
treats a path as local: results are staged under the tier's ``_tmp/`` by Spark's writers
and committed by a rename inside the file system.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import BinaryIO, Protocol

from criss.errors import ConfigError, StorageError
from criss.storage.tiers import TEMP_DIR, Tier, check_name, local_file

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


class RemoteFiles(Protocol):
    """A Hadoop file system as the driver reaches it (``criss.bridge.hadoopfs.HadoopFiles``).

    URIs are absolute. A missing file raises FileNotFoundError; any other failure
    StorageError.
    """

    root: str

    def list(self, uri: str) -> dict[str, int]:
        """Files under ``uri``, recursively: name relative to it → bytes ({} if absent)."""

    def size(self, uri: str) -> int | None: ...

    def open(self, uri: str) -> BinaryIO: ...

    def write(self, uri: str, source: BinaryIO) -> int: ...

    def upload(self, local: Path, uri: str) -> int:
        """Copy a local file in (without crossing to Python), deleting the local one."""

    def rename(self, source: str, target: str) -> None: ...

    def delete(self, uri: str, recursive: bool = False) -> None: ...

    def remove_dir_if_empty(self, uri: str) -> None: ...

    def mkdirs(self, uri: str) -> None: ...

    def children(self, uri: str) -> list[str]: ...


def check_uri(uri: str, option: str = "disk_uri") -> str:
    """A tier URI must name its file system (``scheme://...``) and a directory in it."""
    scheme, sep, rest = uri.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        raise ConfigError(
            f"{option} {uri!r} is not a Hadoop file system URI: write it as "
            "scheme://authority/path, e.g. hdfs://namenode:8020/criss/cache"
        )
    if "/" not in rest.strip("/") and not uri.startswith("file:"):
        raise ConfigError(
            f"{option} {uri!r} names no directory: add one for Criss's files, "
            f"e.g. {uri.rstrip('/')}/criss/cache"
        )
    return uri.rstrip("/")


class HadoopTier(Tier):
    """Partition files under ``files.root``, a directory of a Hadoop file system.

    Writes go to ``<root>/_tmp/`` and are renamed into place; Hadoop's rename never replaces
    a file, so a name written again is deleted first: a reader may find it missing for a
    moment, never partial. Results Spark writes are staged under ``_tmp/`` too
    (:meth:`staging_uri`) and adopted by a rename, so no byte crosses to the driver.
    """

    def __init__(self, name: str, files: RemoteFiles, capacity_bytes: int | None = None) -> None:
        self.name = name
        self.files = files
        self.root = files.root
        self.capacity_bytes = capacity_bytes
        self._temp = f"{self.root}/{TEMP_DIR}"
        files.mkdirs(self._temp)

    def _uri(self, name: str) -> str:
        return f"{self.root}/{check_name(name)}"

    def _temp_uri(self, name: str) -> str:
        return f"{self._temp}/{name.replace('/', '.')}.{uuid.uuid4().hex[:8]}"

    def write(self, name: str, source: BinaryIO) -> int:
        temp = self._temp_uri(name)
        try:
            written = self.files.write(temp, source)
            self._commit(temp, name)
        except BaseException as exc:
            self._discard(temp)
            if isinstance(exc, (OSError, StorageError)):
                raise StorageError(f"{self.name} tier cannot store {name}: {exc}") from exc
            raise  # the source's own error (a bad row, an interrupt) is the caller's
        return written

    def _discard(self, temp: str) -> None:
        try:
            self.files.delete(temp)
        except (OSError, StorageError):
            pass  # the next application opening alone cleans _tmp/

    def adopt(self, local: Path | str, name: str) -> int:
        """Take a file staged in this file system (a URI: renamed) or a local one (copied
        in by the JVM); either is gone afterwards."""
        if isinstance(local, str) and local.startswith(self._temp + "/"):
            size = self.files.size(local)
            if size is None:
                raise StorageError(f"{self.name} tier cannot adopt {local}: it is gone")
            self._commit(local, name)
            return size
        if isinstance(local, str):
            raise StorageError(f"{self.name} tier adopts files of its own _tmp/ only: {local}")
        temp = self._temp_uri(name)
        try:
            size = self.files.upload(local, temp)
            self._commit(temp, name)
        except (OSError, StorageError) as exc:
            self._discard(temp)
            raise StorageError(f"{self.name} tier cannot adopt {local}: {exc}") from exc
        return size

    def _commit(self, temp: str, name: str) -> None:
        final = self._uri(name)
        self.files.delete(final)
        self.files.rename(temp, final)

    def open(self, name: str) -> BinaryIO:
        try:
            return self.files.open(self._uri(name))
        except (OSError, StorageError) as exc:
            raise StorageError(f"{self.name} tier cannot read {name}: {exc}") from exc

    def size(self, name: str) -> int | None:
        uri = self._uri(name)  # an invalid name is an error, not a missing file
        try:
            return self.files.size(uri)
        except StorageError:
            return None

    def delete(self, name: str) -> None:
        uri = self._uri(name)
        self.files.delete(uri)
        if "/" in name:  # the entry's directory, once its last partition is gone
            self.files.remove_dir_if_empty(uri.rsplit("/", 1)[0])

    def list(self) -> dict[str, int]:
        return {
            name: size
            for name, size in self.files.list(self.root).items()
            if not name.startswith((f"{TEMP_DIR}/", "."))
        }

    def uri(self, name: str) -> str:
        return self._uri(name)

    def local_root(self) -> Path | None:
        """The local directory of a ``file:`` root (this host's disk, like a LocalTier's
        for the host check), None for any other file system."""
        local = local_file(self.root)
        return Path(local) if local is not None else None

    def staging_uri(self, label: str) -> str:
        """A fresh directory (not created) under ``_tmp/`` for Spark to write a result into."""
        return f"{self._temp}/stage.{label}.{uuid.uuid4().hex[:8]}"

    def clean_temp(self) -> int:
        leftovers = self.files.children(self._temp)
        for leftover in leftovers:
            self.files.delete(f"{self._temp}/{leftover}", recursive=True)
        return len(leftovers)

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "root": self.root}
