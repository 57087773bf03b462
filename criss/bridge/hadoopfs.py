"""A Hadoop file system as Spark's driver reaches it: the files of a tier at a URI.

``hdfs://``, ``s3a://``, ``abfs://``, ``viewfs://``, ``file:``: whatever Spark's Hadoop
configuration can open, the driver lists, reads, writes, renames and deletes through the
same ``org.apache.hadoop.fs.FileSystem`` Spark's tasks use, so it never assumes that a
path it sees is a local file, nor that it can list an executor's local directory.
:class:`HadoopFiles` implements ``criss.storage.hadoop.RemoteFiles`` for
``criss.storage.hadoop.HadoopTier``.

Each call is a py4j round trip (about 0.1 ms); bytes cross py4j in 4 MiB chunks, so the
driver moves file contents only to verify a file once per version or to calibrate.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, BinaryIO

from criss.errors import StorageError
from criss.storage.tiers import file_uri

#: Bytes per py4j call when a file's contents cross to Python or back.
CHUNK = 4 << 20
#: Java exceptions that mean "no such file" (a missing name is an answer, not a failure).
_MISSING = ("java.io.FileNotFoundException",)


class HadoopFiles:
    """The Hadoop file system holding ``root`` (a URI), reached through ``spark``'s JVM."""

    def __init__(self, spark: Any, root: str) -> None:
        jvm = spark._jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        try:
            root_path = self._path(root)
            self._fs = root_path.getFileSystem(spark._jsc.hadoopConfiguration())
            #: ``root`` as the file system writes it back (scheme, authority, no trailing /).
            self.root = str(self._fs.makeQualified(root_path).toString()).rstrip("/")
        except Exception as exc:
            raise StorageError(
                f"Spark cannot open a Hadoop file system at {root}: {_first_line(exc)} "
                "(is the scheme's connector on Spark's classpath and configured?)"
            ) from exc

    def _call(self, doing: str, uri: str, call) -> Any:
        try:
            return call()
        except Exception as exc:
            if _java_class(exc) in _MISSING:
                raise FileNotFoundError(uri) from exc
            raise StorageError(f"cannot {doing} {uri}: {_first_line(exc)}") from exc

    def list(self, uri: str) -> dict[str, int]:
        """Every file under ``uri`` (recursively): name relative to ``uri`` → bytes."""
        base = self._qualified(uri)
        try:
            found = self._call("list", uri, lambda: self._fs.listFiles(self._path(uri), True))
        except FileNotFoundError:
            return {}
        files: dict[str, int] = {}
        while self._call("list", uri, found.hasNext):
            name, size = self._call("list", uri, lambda: _name_and_size(found.next()))
            if name.startswith(base + "/"):
                files[name[len(base) + 1 :]] = size
        return files

    def size(self, uri: str) -> int | None:
        try:
            status = self._call("stat", uri, lambda: self._fs.getFileStatus(self._path(uri)))
        except FileNotFoundError:
            return None
        return None if status.isDirectory() else int(status.getLen())

    def open(self, uri: str) -> BinaryIO:
        size = self.size(uri)
        if size is None:
            raise FileNotFoundError(uri)
        stream = self._call("open", uri, lambda: self._fs.open(self._path(uri)))
        return io.BufferedReader(_JvmReader(stream, uri, size), CHUNK)

    def write(self, uri: str, source: BinaryIO) -> int:
        """Write ``source`` to ``uri`` (replacing it); the bytes written."""
        sink = self._call("create", uri, lambda: self._fs.create(self._path(uri), True))
        written = 0
        try:
            while chunk := source.read(CHUNK):
                self._call("write", uri, lambda c=chunk: sink.write(bytearray(c)))
                written += len(chunk)
        finally:
            self._call("close", uri, sink.close)
        return written

    def upload(self, local: Path, uri: str) -> int:
        """Copy the local file ``local`` to ``uri`` inside the JVM (no bytes cross py4j),
        then delete ``local``; the bytes copied."""
        size = os.stat(local).st_size
        self._call(
            "copy into",
            uri,
            lambda: self._fs.copyFromLocalFile(
                True, True, self._path(file_uri(local)), self._path(uri)
            ),
        )
        return size

    def rename(self, source: str, target: str) -> None:
        """Move ``source`` to ``target``, which must not exist (Hadoop's rename never replaces)."""
        self.mkdirs(target.rsplit("/", 1)[0])
        done = self._call(
            "rename", source, lambda: self._fs.rename(self._path(source), self._path(target))
        )
        if not done:
            raise StorageError(f"cannot rename {source} to {target}: the file system refused")

    def delete(self, uri: str, recursive: bool = False) -> None:
        try:
            self._call("delete", uri, lambda: self._fs.delete(self._path(uri), recursive))
        except FileNotFoundError:
            pass

    def remove_dir_if_empty(self, uri: str) -> None:
        try:
            if not self._call("list", uri, lambda: self._fs.listStatus(self._path(uri))):
                self.delete(uri)
        except (FileNotFoundError, StorageError):
            pass  # not there, or another writer just filled it

    def mkdirs(self, uri: str) -> None:
        if not self._call("create", uri, lambda: self._fs.mkdirs(self._path(uri))):
            raise StorageError(f"cannot create the directory {uri}")

    def children(self, uri: str) -> list[str]:
        """Names directly under ``uri``."""
        try:
            statuses = self._call("list", uri, lambda: self._fs.listStatus(self._path(uri)))
        except FileNotFoundError:
            return []
        return [str(s.getPath().getName()) for s in statuses]

    def _qualified(self, uri: str) -> str:
        return str(self._fs.makeQualified(self._path(uri)).toString()).rstrip("/")


class _JvmReader(io.RawIOBase):
    """A seekable reader of an ``FSDataInputStream`` (pyarrow reads Parquet footers from it)."""

    def __init__(self, stream: Any, uri: str, size: int) -> None:
        self._stream, self._uri, self._size = stream, uri, size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        try:
            data = self._stream.readNBytes(min(len(buffer), CHUNK))
        except Exception as exc:
            raise OSError(f"cannot read {self._uri}: {_first_line(exc)}") from exc
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        try:
            if whence == io.SEEK_CUR:
                offset += self.tell()
            elif whence == io.SEEK_END:
                offset += self._size
            self._stream.seek(offset)
        except Exception as exc:
            raise OSError(f"cannot seek in {self._uri}: {_first_line(exc)}") from exc
        return offset

    def tell(self) -> int:
        return int(self._stream.getPos())

    def close(self) -> None:
        if not self.closed:
            try:
                self._stream.close()
            except Exception:  # closing a stream that already failed: nothing left to free
                pass
        super().close()


def _name_and_size(status: Any) -> tuple[str, int]:
    return str(status.getPath().toString()), int(status.getLen())


def _java_class(exc: BaseException) -> str | None:
    java = getattr(exc, "java_exception", None)
    try:
        return str(java.getClass().getName()) if java is not None else None
    except Exception:
        return None


def _first_line(exc: BaseException) -> str:
    """The Java exception's own text (class: message), else the error's first line."""
    java = getattr(exc, "java_exception", None)
    try:
        if java is not None:
            return str(java.toString())
    except Exception:  # the gateway is gone: fall back to py4j's text
        pass
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
