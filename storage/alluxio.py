"""Alluxio as a cache tier, managed through the Alluxio proxy's REST API.

:class:`AlluxioTier` implements the :class:`storage.tiers.Tier` contract with the ``alluxio``
0.1.x Python client (``pip install 'criss[alluxio]'``), which talks to an Alluxio *proxy*
(``alluxio-start.sh proxy``, port 39999 by default) over HTTP. Every operation (create, write,
rename, delete, list, status, pin, free) is a REST call; Spark reads the files either through
an Alluxio FUSE mount (``mount=``, plain local paths) or through ``alluxio://`` URIs (which
need the Alluxio client jar on Spark's classpath).

Testing status, plainly: no Alluxio server can be installed on the development machines.
This backend is tested against a local stand-in of the Alluxio proxy REST API
(``tests/alluxio_standin.py``), not against a real Alluxio. The stand-in follows the proxy's
endpoints, JSON shapes and error format, but a real deployment may still differ.
"""

from __future__ import annotations

import io
import posixpath
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import BinaryIO, cast
from urllib.parse import urlsplit

from criss.errors import ConfigError, StorageError
from criss.storage.tiers import TEMP_DIR, Tier, check_name, file_uri

#: How to get the client this module needs (1.x of the ``alluxio`` package is another library).
INSTALL_HINT = "pip install 'criss[alluxio]'  (the Alluxio proxy REST client, alluxio>=0.1.4,<1)"
DEFAULT_PROXY_PORT = 39999
DEFAULT_MASTER_PORT = 19998
WRITE_TYPES = ("MUST_CACHE", "CACHE_THROUGH", "THROUGH", "ASYNC_THROUGH")
_CHUNK = 1 << 22
_COMMIT_ATTEMPTS = 3


def load_client() -> ModuleType:
    """The ``alluxio`` client module, imported only when a tier is built (it is optional)."""
    try:
        import alluxio
        import alluxio.exceptions
        import requests  # noqa: F401  (the client's transport; its errors are caught below)
    except ImportError as exc:
        raise ConfigError(
            f"the Alluxio tier needs the Alluxio REST client: {INSTALL_HINT}"
        ) from exc
    if not hasattr(alluxio, "Client"):
        version = getattr(alluxio, "__version__", "?")
        raise ConfigError(
            f"the installed alluxio package ({version}) is not the proxy REST client: "
            f"{INSTALL_HINT}"
        )
    return alluxio


class AlluxioTier(Tier):
    """Cache files stored in Alluxio under ``root``, managed through the proxy at ``url``.

    Not tested against a real Alluxio: no Alluxio server can be installed on the development
    machines, so the tests run it against a local stand-in of the proxy REST API
    (``tests/alluxio_standin.py``).

    ``url`` is the proxy (``http://host:39999``). ``mount`` is a local directory where Alluxio
    FUSE shows Alluxio's ``/``; with it, :meth:`uri` gives local paths Spark reads like any
    file. Without it, :meth:`uri` gives ``alluxio://<master><root>/<name>``, and Spark needs the
    Alluxio client jar (``spark.jars``) to read that; ``master`` defaults to the proxy's host
    with port 19998. ``write_type`` is Alluxio's: the default ``CACHE_THROUGH`` also persists
    to the under storage, so :meth:`free` can drop a file from Alluxio memory without losing
    it; ``MUST_CACHE`` keeps files in Alluxio only (Alluxio then refuses to free them).

    Writes go to ``<root>/_tmp/`` and are renamed into place. Alluxio's rename never replaces
    an existing file, so overwriting a name deletes the old file first: a reader may briefly
    find the name missing, but never sees a partial file.
    """

    def __init__(
        self,
        name: str = "alluxio",
        url: str = f"http://localhost:{DEFAULT_PROXY_PORT}",
        root: str = "/criss/cache",
        mount: str | Path | None = None,
        capacity_bytes: int | None = None,
        *,
        master: str | None = None,
        write_type: str = "CACHE_THROUGH",
        timeout: float = 60.0,
    ) -> None:
        self.name = name
        self.capacity_bytes = capacity_bytes
        self.url = url
        host, port = _parse_proxy_url(url)
        self.root = _clean_root(root)
        self.mount = Path(mount) if mount is not None else None
        self.master = master or f"{host}:{DEFAULT_MASTER_PORT}"
        if write_type not in WRITE_TYPES:
            raise ConfigError(f"alluxio write_type {write_type!r} is not one of {WRITE_TYPES}")
        self.write_type = write_type
        self._temp = f"{self.root}/{TEMP_DIR}"
        module = load_client()
        self._option, self._wire, self._errors = module.option, module.wire, module.exceptions
        self._rest_errors = _rest_error_types(module)
        self._client = module.Client(host, port, timeout=timeout)
        with self._rest(f"create its directory {self._temp}"):
            self._make_dirs(self._temp)
        self._check_mount()

    # --- paths -------------------------------------------------------------------------------

    def _path(self, name: str) -> str:
        return f"{self.root}/{check_name(name)}"

    def _temp_path(self, name: str) -> str:
        return f"{self._temp}/{name.replace('/', '.')}.{uuid.uuid4().hex[:8]}"

    def _check_mount(self) -> None:
        if self.mount is None:
            return
        seen = self.mount / self._temp.lstrip("/")
        if not seen.is_dir():
            raise ConfigError(
                f"{self.name} tier: mount {self.mount} does not show Alluxio's {self._temp} "
                f"(expected {seen}); mount must be where Alluxio FUSE exposes Alluxio's /"
            )

    # --- the Tier contract -------------------------------------------------------------------

    def write(self, name: str, source: BinaryIO) -> int:
        final, temp = self._path(name), self._temp_path(name)
        feed = _Feed(source)
        try:
            written = self._upload(temp, feed)
            self._commit(temp, final)
        except BaseException as exc:
            self._discard(temp)
            self._raise_write_error(name, exc, feed.error)
            raise
        return written

    def open(self, name: str) -> BinaryIO:
        with self._rest(f"read {name}"):
            stream = self._client.open_file(self._path(name))
            raw = _StreamReader(self, stream, self._client.read(stream))
        return cast(BinaryIO, io.BufferedReader(raw, _CHUNK))

    def size(self, name: str) -> int | None:
        path = self._path(name)
        with self._rest(f"get the size of {name}"):
            try:
                status = self._client.get_status(path)
            except self._errors.NotFoundError:
                return None
        return None if status.folder else int(status.length)

    def delete(self, name: str) -> None:
        path = self._path(name)
        with self._rest(f"delete {name}"):
            self._remove(path)
            self._prune(posixpath.dirname(path))

    def list(self) -> dict[str, int]:
        found: dict[str, int] = {}
        with self._rest("list its files"):
            self._walk(self.root, "", found)
        return found

    def uri(self, name: str) -> str:
        path = self._path(name)
        if self.mount is not None:
            return file_uri(self.mount / path.lstrip("/"))
        return f"alluxio://{self.master}{path}"

    def local_path(self, name: str) -> Path | None:
        path = self._path(name)
        return None if self.mount is None else self.mount / path.lstrip("/")

    def local_root(self) -> Path | None:
        return None if self.mount is None else self.mount / self.root.lstrip("/")

    def clean_temp(self) -> int:
        removed = 0
        recursive = self._option.Delete(recursive=True)
        with self._rest(f"clean {self._temp}"):
            try:
                leftovers = self._client.list_status(self._temp)
            except self._errors.NotFoundError:
                leftovers = []
            for leftover in leftovers:
                try:
                    self._client.delete(f"{self._temp}/{leftover.name}", recursive)
                    removed += 1
                except self._errors.NotFoundError:
                    continue  # removed by someone else meanwhile
            self._make_dirs(self._temp)
        return removed

    def describe(self) -> dict[str, object]:
        return {
            **super().describe(),
            "url": self.url,
            "root": self.root,
            "mount": None if self.mount is None else str(self.mount),
            "write_type": self.write_type,
        }

    # --- Alluxio-specific --------------------------------------------------------------------

    def pin(self, name: str, pinned: bool = True) -> None:
        """Pin ``name`` in Alluxio memory (Alluxio will not evict it), or unpin it."""
        with self._rest(f"{'pin' if pinned else 'unpin'} {name}"):
            self._client.set_attribute(self._path(name), self._option.SetAttribute(pinned=pinned))

    def free(self, name: str) -> None:
        """Drop ``name`` from Alluxio memory; it stays readable from the under storage."""
        with self._rest(f"free {name}"):
            self._client.free(self._path(name), self._option.Free(recursive=False))

    # --- REST helpers ------------------------------------------------------------------------

    @contextmanager
    def _rest(self, doing: str) -> Iterator[None]:
        """Turn client and HTTP errors into StorageError naming the tier and the operation."""
        try:
            yield
        except self._rest_errors as exc:
            raise StorageError(f"{self.name} tier cannot {doing}: {self._explain(exc)}") from exc

    def _explain(self, exc: BaseException) -> str:
        if isinstance(exc, self._errors.AlluxioError):
            return f"Alluxio says {exc.status}: {exc.message}"
        cause = exc.__cause__ or exc.__context__
        detail = f"{exc} ({cause})" if cause is not None else str(exc)
        return f"{detail}; is the Alluxio proxy running at {self.url}?"

    def _make_dirs(self, path: str) -> None:
        options = self._option.CreateDirectory(recursive=True, allow_exists=True)
        self._client.create_directory(path, options)

    def _remove(self, path: str) -> None:
        try:
            self._client.delete(path, self._option.Delete(recursive=False))
        except self._errors.NotFoundError:
            pass  # a missing name is not an error

    def _prune(self, directory: str) -> None:
        """Delete now-empty directories from ``directory`` up to (not including) the root."""
        while directory != self.root and directory.startswith(self.root + "/"):
            try:
                self._client.delete(directory, self._option.Delete(recursive=False))
            except self._errors.AlluxioError:
                return  # not empty (or already gone): best effort, like LocalTier
            directory = posixpath.dirname(directory)

    def _walk(self, directory: str, prefix: str, found: dict[str, int]) -> None:
        try:
            statuses = self._client.list_status(directory)
        except self._errors.NotFoundError:
            return  # deleted while listing
        for status in statuses:
            if status.folder:
                if prefix or status.name != TEMP_DIR:
                    self._walk(f"{directory}/{status.name}", f"{prefix}{status.name}/", found)
            else:
                found[f"{prefix}{status.name}"] = int(status.length)

    def _upload(self, temp: str, feed: _Feed) -> int:
        """Stream ``feed`` into a new Alluxio file ``temp``; return the bytes Alluxio took."""
        write_type = self._wire.WriteType(self.write_type)
        options = self._option.CreateFile(recursive=True, write_type=write_type)
        stream = self._client.create_file(temp, options)
        try:
            writer = self._client.write(stream)
            try:
                written = int(writer.write(feed.chunks()))
            finally:
                writer.close()
        finally:
            self._client.close(stream)
        if written != feed.count:
            raise StorageError(
                f"{self.name} tier stored {written} of {feed.count} bytes of {temp}: short write"
            )
        return written

    def _commit(self, temp: str, final: str) -> None:
        """Rename ``temp`` to ``final``, replacing an older ``final``."""
        for attempt in range(_COMMIT_ATTEMPTS):
            try:
                self._make_dirs(posixpath.dirname(final))
                self._remove(final)  # Alluxio's rename never replaces an existing file
                self._client.rename(temp, final)
                return
            except (self._errors.NotFoundError, self._errors.AlreadyExistsError):
                # A concurrent delete pruned the directory, or a concurrent write took the name.
                if attempt == _COMMIT_ATTEMPTS - 1:
                    raise

    def _discard(self, temp: str) -> None:
        try:
            self._remove(temp)
        except self._rest_errors:
            pass  # left for clean_temp()

    def _raise_write_error(
        self, name: str, exc: BaseException, source_error: BaseException | None
    ) -> None:
        """Raise the error a failed write should surface (or return to re-raise ``exc``)."""
        if source_error is not None:
            # The client wraps a failing request body in its own HTTP error: report the source.
            if isinstance(source_error, OSError):
                raise StorageError(
                    f"{self.name} tier cannot store {name}: reading the source failed: "
                    f"{source_error}"
                ) from source_error
            raise source_error
        if isinstance(exc, self._rest_errors):
            raise StorageError(
                f"{self.name} tier cannot store {name}: {self._explain(exc)}"
            ) from exc


class _Feed:
    """A source's bytes as chunks for a streamed request, remembering why reading failed."""

    def __init__(self, source: BinaryIO) -> None:
        self.source = source
        self.count = 0
        self.error: Exception | None = None

    def chunks(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self.source.read(_CHUNK)
            except Exception as exc:
                self.error = exc
                raise
            if not chunk:
                return
            self.count += len(chunk)
            yield chunk


class _StreamReader(io.RawIOBase):
    """A read stream of the proxy as a raw binary file; closing it closes the stream."""

    def __init__(self, tier: AlluxioTier, stream: int, reader: object) -> None:
        self._tier = tier
        self._stream = stream
        self._reader = reader

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        with self._tier._rest("read from its stream"):
            data = self._reader.read(len(buffer))  # type: ignore[attr-defined]
        size = len(data)
        buffer[:size] = data
        return size

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._reader.close()  # type: ignore[attr-defined]
            self._tier._client.close(self._stream)
        except self._tier._rest_errors:
            pass  # the proxy expires abandoned streams; the bytes were already read
        finally:
            super().close()


def _rest_error_types(module: ModuleType) -> tuple[type[BaseException], ...]:
    import requests

    errors = module.exceptions
    return (errors.AlluxioError, errors.HTTPError, requests.RequestException)


def _parse_proxy_url(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
        raise ConfigError(
            f"alluxio url {url!r} must look like http://host:{DEFAULT_PROXY_PORT} "
            "(the Alluxio proxy; the REST client speaks plain HTTP)"
        )
    try:
        port = parts.port or DEFAULT_PROXY_PORT
    except ValueError as exc:
        raise ConfigError(f"alluxio url {url!r} has an invalid port") from exc
    return parts.hostname, port


def _clean_root(root: str) -> str:
    parts = [p for p in root.split("/") if p]
    if not root.startswith("/") or not parts or any(p in (".", "..") for p in parts):
        raise ConfigError(
            f"alluxio root {root!r} must be an absolute Alluxio directory other than /, "
            "such as /criss/cache"
        )
    return "/" + "/".join(parts)
