"""A local stand-in for the Alluxio proxy REST API (v1), used to test ``storage.alluxio``.

It is a stand-in, not Alluxio: no Alluxio server can be installed on the development
machines, so :class:`storage.alluxio.AlluxioTier` is tested against this small HTTP server
instead. It speaks the same wire protocol as the Alluxio proxy (``POST /api/v1/paths/<path>/
<action>`` and ``POST /api/v1/streams/<id>/<action>``, JSON options in, JSON out, errors as
HTTP 500 with ``{"statusCode": ..., "message": ...}`` like Alluxio's ``RestUtils``), and it
answers with URIStatus JSON in the shape the ``alluxio`` 0.1.x client parses.

The namespace lives in a local directory (``backing``): Alluxio path ``/a/b`` is the file
``<backing>/a/b``. That directory doubles as an "Alluxio FUSE mount", so Spark or pyarrow can
read written files at ``<backing>/<alluxio path>``.

What it models: directories and files, create/rename/delete semantics (rename never replaces,
a non-empty directory needs ``recursive``), pinning (recursive on directories, as in Alluxio),
persistence from the write type, ``inMemoryPercentage`` (100 after a caching write or read, 0
after ``free``), and ``free``'s refusals (pinned or not persisted files). What it does not:
blocks and workers, real memory, TTL expiry, mounts, authentication.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import parse_qs, unquote, urlsplit

API_PREFIX = "/api/v1"
_CHUNK = 1 << 20
_BLOCK_SIZE = 64 << 20
_THROUGH = {"CACHE_THROUGH", "THROUGH", "ASYNC_THROUGH"}
_CACHING = {"MUST_CACHE", "CACHE_THROUGH", "ASYNC_THROUGH"}
_WRITE_TYPES = _THROUGH | _CACHING

#: Option keys each action accepts, as the client's ``alluxio.option`` classes send them.
_OPTION_KEYS: dict[str, set[str]] = {
    "create-directory": {"allowExists", "mode", "recursive", "writeType"},
    "create-file": {
        "blockSizeBytes",
        "locationPolicyClass",
        "mode",
        "recursive",
        "ttl",
        "ttlAction",
        "writeType",
        "replicationDurable",
        "replicationMax",
        "replicationMin",
    },
    "delete": {"recursive"},
    "exists": set(),
    "free": {"recursive"},
    "get-status": {"loadMetadataType"},
    "list-status": {"loadMetadataType", "recursive"},
    "open-file": {
        "cacheLocationPolicyClass",
        "maxUfsReadConcurrency",
        "readType",
        "ufsReadLocationPolicyClass",
    },
    "rename": set(),
    "set-attribute": {"owner", "group", "mode", "pinned", "recursive", "ttl", "ttlAction"},
}


class RestError(Exception):
    """An Alluxio status error, sent back as HTTP 500 with a JSON ErrorResponse."""

    def __init__(self, status: str, message: str, http_status: int = 500) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.http_status = http_status


@dataclass
class _Meta:
    """What Alluxio keeps about a path beyond the bytes the backing directory holds."""

    file_id: int
    created_ms: int
    pinned: bool = False
    persisted: bool = True  # files found in the backing directory are "in the UFS"
    in_memory: int = 0
    completed: bool = True
    ttl: int = -1
    ttl_action: str = "DELETE"


@dataclass
class _Stream:
    path: str
    handle: BinaryIO
    writing: bool
    lock: threading.Lock = field(default_factory=threading.Lock)


class AlluxioStandin:
    """The stand-in server, running in a background thread until :meth:`close`.

    ``url`` is the proxy address to give ``AlluxioTier``; ``calls`` records every request
    as ``(action, path-or-stream-id)`` so tests can see what reached the "server".
    """

    def __init__(self, backing: str | Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.backing = Path(backing)
        self.backing.mkdir(parents=True, exist_ok=True)
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.RLock()
        self._meta: dict[str, _Meta] = {}
        self._streams: dict[int, _Stream] = {}
        self._next_id = 1
        self._connections: set[socket.socket] = set()
        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.daemon_threads = True
        self._server.standin = self  # type: ignore[attr-defined]
        self.host, self.port = self._server.server_address[:2]
        self.url = f"http://{self.host}:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="alluxio-standin",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    def close(self) -> None:
        """Stop serving, drop kept-alive connections and close streams clients left open."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        with self._lock:
            for connection in self._connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed by the client
            for stream in self._streams.values():
                stream.handle.close()
            self._streams.clear()

    def __enter__(self) -> AlluxioStandin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def status(self, path: str) -> dict[str, Any]:
        """The URIStatus JSON of ``path``, as ``get-status`` would answer."""
        with self._lock:
            return self._status(_normalize(path))

    # --- namespace helpers (callers hold self._lock) -----------------------------------------

    def _local(self, path: str) -> Path:
        return self.backing / path.lstrip("/")

    def _new_id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def _meta_of(self, path: str) -> _Meta:
        meta = self._meta.get(path)
        if meta is None:
            # First sight of a path created outside the API: load its metadata, as Alluxio does.
            meta = _Meta(file_id=self._new_id(), created_ms=_now_ms())
            self._meta[path] = meta
        return meta

    def _require(self, path: str) -> Path:
        local = self._local(path)
        if not local.exists():
            raise RestError("NOT_FOUND", f"Path {path} does not exist")
        return local

    def _status(self, path: str) -> dict[str, Any]:
        local = self._require(path)
        meta = self._meta_of(path)
        info = local.stat()
        folder = local.is_dir()
        return {
            "blockIds": [],
            "blockSizeBytes": 0 if folder else _BLOCK_SIZE,
            "cacheable": not folder,
            "completed": meta.completed,
            "creationTimeMs": meta.created_ms,
            "lastModificationTimeMs": int(info.st_mtime * 1000),
            "fileBlockInfos": [],
            "fileId": meta.file_id,
            "folder": folder,
            "owner": _user(),
            "group": _user(),
            "inMemoryPercentage": 0 if folder else meta.in_memory,
            "inAlluxioPercentage": 0 if folder else meta.in_memory,
            "length": 0 if folder else info.st_size,
            "name": posixpath.basename(path),
            "path": path,
            "ufsPath": local.as_uri(),
            "pinned": meta.pinned,
            "persisted": meta.persisted,
            "persistenceState": "PERSISTED" if meta.persisted else "NOT_PERSISTED",
            "mode": info.st_mode & 0o777,
            "mountPoint": path == "/",
            "ttl": meta.ttl,
            "ttlAction": meta.ttl_action,
        }

    def _subtree(self, path: str) -> Iterator[str]:
        """``path`` and every path below it."""
        yield path
        local = self._local(path)
        if local.is_dir():
            for below in sorted(local.rglob("*")):
                yield "/" + below.relative_to(self.backing).as_posix()

    def _forget(self, path: str) -> None:
        prefix = path.rstrip("/") + "/"
        for known in [p for p in self._meta if p == path or p.startswith(prefix)]:
            del self._meta[known]

    def _make_parents(self, path: str, recursive: bool) -> None:
        parent = posixpath.dirname(path)
        local = self._local(parent)
        if local.is_dir():
            return
        if local.exists():
            raise RestError("INVALID_ARGUMENT", f"Parent {parent} of {path} is a file")
        if not recursive:
            raise RestError("NOT_FOUND", f"Parent path {parent} of {path} does not exist")
        self._make_parents(parent, recursive)
        local.mkdir()
        self._meta_of(parent)

    # --- path actions --------------------------------------------------------------------------

    def create_directory(self, path: str, options: dict[str, Any], query: dict) -> None:
        local = self._local(path)
        if local.exists():
            if local.is_dir() and options.get("allowExists", False):
                return None
            raise RestError("ALREADY_EXISTS", f"Path {path} already exists")
        self._make_parents(path, options.get("recursive", False))
        local.mkdir()
        self._meta_of(path)
        return None

    def create_file(self, path: str, options: dict[str, Any], query: dict) -> int:
        write_type = options.get("writeType", "MUST_CACHE")  # Alluxio 1.x's default
        if write_type not in _WRITE_TYPES:
            raise RestError("INVALID_ARGUMENT", f"Unknown write type {write_type!r}")
        local = self._local(path)
        if local.exists():
            raise RestError("ALREADY_EXISTS", f"Path {path} already exists")
        self._make_parents(path, options.get("recursive", True))  # 1.x: recursive by default
        handle = open(local, "wb")
        self._meta[path] = _Meta(
            file_id=self._new_id(),
            created_ms=_now_ms(),
            persisted=write_type in _THROUGH,
            in_memory=100 if write_type in _CACHING else 0,
            completed=False,
            ttl=int(options.get("ttl", -1)),
            ttl_action=options.get("ttlAction", "DELETE"),
        )
        return self._open_stream(_Stream(path, handle, writing=True))

    def delete(self, path: str, options: dict[str, Any], query: dict) -> None:
        if path == "/":
            raise RestError("INVALID_ARGUMENT", "Cannot delete the root path")
        local = self._require(path)
        if local.is_dir():
            if any(local.iterdir()) and not options.get("recursive", False):
                raise RestError(
                    "FAILED_PRECONDITION",
                    f"Cannot delete non-empty directory {path} because recursive is set to false",
                )
            shutil.rmtree(local)
        else:
            local.unlink()
        self._forget(path)
        return None

    def exists(self, path: str, options: dict[str, Any], query: dict) -> bool:
        return self._local(path).exists()

    def free(self, path: str, options: dict[str, Any], query: dict) -> None:
        local = self._require(path)
        if local.is_dir() and any(local.iterdir()) and not options.get("recursive", False):
            raise RestError(
                "FAILED_PRECONDITION",
                f"Cannot free directory {path} which is not empty. Please set the recursive flag",
            )
        files = [p for p in self._subtree(path) if self._local(p).is_file()]
        for file in files:  # Alluxio checks everything before freeing anything
            meta = self._meta_of(file)
            if meta.pinned:
                raise RestError("FAILED_PRECONDITION", f"Cannot free pinned file {file}")
            if not meta.persisted:
                raise RestError(
                    "FAILED_PRECONDITION", f"Cannot free file {file} which is not persisted"
                )
        for file in files:
            self._meta_of(file).in_memory = 0
        return None

    def get_status(self, path: str, options: dict[str, Any], query: dict) -> dict[str, Any]:
        return self._status(path)

    def list_status(self, path: str, options: dict[str, Any], query: dict) -> list[dict]:
        local = self._require(path)
        if not local.is_dir():
            return [self._status(path)]
        if options.get("recursive", False):
            return [self._status(p) for p in self._subtree(path) if p != path]
        return [self._status(posixpath.join(path, child.name)) for child in local.iterdir()]

    def open_file(self, path: str, options: dict[str, Any], query: dict) -> int:
        local = self._require(path)
        if local.is_dir():
            raise RestError(
                "FAILED_PRECONDITION", f"Cannot read from {path} because it is a directory"
            )
        if options.get("readType", "CACHE") != "NO_CACHE":
            self._meta_of(path).in_memory = 100  # a caching read brings the file into Alluxio
        return self._open_stream(_Stream(path, open(local, "rb"), writing=False))

    def rename(self, path: str, options: dict[str, Any], query: dict) -> None:
        dst = query.get("dst", [None])[0]
        if not dst:
            raise RestError("INVALID_ARGUMENT", "required 'dst' parameter is missing")
        dst = _normalize(dst)
        source = self._require(path)
        target = self._local(dst)
        if target.exists():
            raise RestError(
                "ALREADY_EXISTS", f"Cannot rename because destination already exists: {dst}"
            )
        if dst.startswith(path.rstrip("/") + "/") or path == "/":
            raise RestError("INVALID_ARGUMENT", f"Cannot rename {path} into itself ({dst})")
        if not target.parent.is_dir():
            raise RestError("NOT_FOUND", f"Parent of the destination {dst} does not exist")
        moved = {p: self._meta_of(p) for p in self._subtree(path)}
        os.rename(source, target)
        self._forget(path)
        for old, meta in moved.items():
            self._meta[dst + old[len(path) :]] = meta
        return None

    def set_attribute(self, path: str, options: dict[str, Any], query: dict) -> None:
        self._require(path)
        if "pinned" in options:
            # Pinning a directory pins everything in it, as Alluxio's inode tree does.
            for below in self._subtree(path):
                self._meta_of(below).pinned = bool(options["pinned"])
        meta = self._meta_of(path)
        if "ttl" in options:
            meta.ttl = int(options["ttl"])
        if "ttlAction" in options:
            meta.ttl_action = options["ttlAction"]
        if "mode" in options or "recursive" in options:
            pass  # accepted; permissions are not modelled
        return None

    # --- streams ---------------------------------------------------------------------------------

    def _open_stream(self, stream: _Stream) -> int:
        stream_id = self._new_id()
        self._streams[stream_id] = stream
        return stream_id

    def stream(self, stream_id: int) -> _Stream:
        with self._lock:
            stream = self._streams.get(stream_id)
        if stream is None:
            raise RestError("INVALID_ARGUMENT", "stream does not exist")
        return stream

    def close_stream(self, stream_id: int) -> None:
        with self._lock:
            stream = self._streams.pop(stream_id, None)
            if stream is None:
                raise RestError("INVALID_ARGUMENT", "stream does not exist")
            with stream.lock:
                stream.handle.close()
            if stream.writing and stream.path in self._meta:
                self._meta[stream.path].completed = True


PathAction = Callable[[AlluxioStandin, str, dict[str, Any], dict], Any]

_PATH_ACTIONS: dict[str, PathAction] = {
    "create-directory": AlluxioStandin.create_directory,
    "create-file": AlluxioStandin.create_file,
    "delete": AlluxioStandin.delete,
    "exists": AlluxioStandin.exists,
    "free": AlluxioStandin.free,
    "get-status": AlluxioStandin.get_status,
    "list-status": AlluxioStandin.list_status,
    "open-file": AlluxioStandin.open_file,
    "rename": AlluxioStandin.rename,
    "set-attribute": AlluxioStandin.set_attribute,
}


class _Handler(BaseHTTPRequestHandler):
    """Routes POSTs to the stand-in, the way the proxy's Jersey handlers do."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the client's requests.Session expects
    server_version = "AlluxioStandin/0.1"
    disable_nagle_algorithm = True  # headers and body go out as separate small writes

    def setup(self) -> None:
        super().setup()
        with self.standin._lock:
            self.standin._connections.add(self.connection)

    def finish(self) -> None:
        with self.standin._lock:
            self.standin._connections.discard(self.connection)
        super().finish()

    @property
    def standin(self) -> AlluxioStandin:
        return self.server.standin  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read self.standin.calls instead of a request log on stderr

    def do_GET(self) -> None:
        self._drain()
        self._send_error(RestError("UNIMPLEMENTED", "the proxy REST API only accepts POST", 405))

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        route = unquote(url.path)
        try:
            if route.startswith(f"{API_PREFIX}/paths/"):
                self._paths(route[len(f"{API_PREFIX}/paths/") :], parse_qs(url.query))
            elif route.startswith(f"{API_PREFIX}/streams/"):
                self._streams(route[len(f"{API_PREFIX}/streams/") :])
            else:
                self._drain()
                raise RestError("UNIMPLEMENTED", f"no such endpoint: {route}", 404)
        except RestError as exc:
            self._send_error(exc)
        except (ConnectionError, EOFError):
            self.close_connection = True  # the client went away mid-request

    # --- /paths/<path>/<action> ------------------------------------------------------------

    def _paths(self, rest: str, query: dict) -> None:
        path, _, action = rest.rpartition("/")
        options = self._json_body()
        self.standin.calls.append((action, path))
        handler = _PATH_ACTIONS.get(action)
        if handler is None:
            raise RestError("UNIMPLEMENTED", f"no such path action: {action}", 404)
        unknown = set(options) - _OPTION_KEYS[action]
        if unknown:
            raise RestError("INVALID_ARGUMENT", f"unknown {action} options: {sorted(unknown)}")
        path = _normalize(path)
        with self.standin._lock:
            result = handler(self.standin, path, options, query)
        self._send_json(result)

    def _json_body(self) -> dict[str, Any]:
        body = b"".join(self._body())
        if not body.strip():
            return {}  # no options: the proxy uses the method's defaults
        try:
            options = json.loads(body)
        except ValueError as exc:
            raise RestError("INVALID_ARGUMENT", f"malformed options JSON: {exc}") from exc
        if not isinstance(options, dict):
            raise RestError("INVALID_ARGUMENT", "options must be a JSON object")
        return options

    # --- /streams/<id>/<action> ------------------------------------------------------------

    def _streams(self, rest: str) -> None:
        raw_id, _, action = rest.partition("/")
        self.standin.calls.append((action, raw_id))
        try:
            stream_id = int(raw_id)
        except ValueError:
            self._drain()
            raise RestError("INVALID_ARGUMENT", f"bad stream id {raw_id!r}") from None
        if action == "write":
            self._write(stream_id)
            return
        self._drain()
        if action == "read":
            self._read(stream_id)
        elif action == "close":
            self.standin.close_stream(stream_id)
            self._send_json(None)
        else:
            raise RestError("UNIMPLEMENTED", f"no such stream action: {action}", 404)

    def _write(self, stream_id: int) -> None:
        try:
            stream = self.standin.stream(stream_id)
        except RestError:
            self._drain()
            raise
        if not stream.writing:
            self._drain()
            raise RestError("INVALID_ARGUMENT", "stream does not exist")
        written = 0
        with stream.lock:
            for chunk in self._body():
                stream.handle.write(chunk)
                written += len(chunk)
            stream.handle.flush()
        self._send_json(written)

    def _read(self, stream_id: int) -> None:
        stream = self.standin.stream(stream_id)
        if stream.writing:
            raise RestError("INVALID_ARGUMENT", "stream does not exist")
        with stream.lock:
            position = stream.handle.tell()
            remaining = os.fstat(stream.handle.fileno()).st_size - position
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(remaining))
            self.end_headers()
            while remaining > 0:
                chunk = stream.handle.read(min(_CHUNK, remaining))
                if not chunk:
                    break
                self.wfile.write(chunk)
                remaining -= len(chunk)

    # --- HTTP plumbing ---------------------------------------------------------------------

    def _body(self) -> Iterator[bytes]:
        """The request body, from Content-Length or chunked transfer encoding."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            yield from self._chunked_body()
            return
        remaining = int(self.headers.get("Content-Length") or 0)
        while remaining > 0:
            chunk = self.rfile.read(min(_CHUNK, remaining))
            if not chunk:
                raise EOFError("request body ended early")
            remaining -= len(chunk)
            yield chunk

    def _chunked_body(self) -> Iterator[bytes]:
        while True:
            line = self.rfile.readline(1024)
            if not line:
                raise EOFError("chunked body ended early")
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return
            data = self.rfile.read(size)
            if len(data) < size:
                raise EOFError("chunked body ended early")
            self.rfile.readline(1024)
            yield data

    def _drain(self) -> None:
        for _ in self._body():
            pass

    def _send_json(self, value: Any) -> None:
        # Alluxio answers a Void method with an empty 200; the client does not read it.
        body = b"" if value is None else json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_error(self, error: RestError) -> None:
        body = json.dumps({"statusCode": error.status, "message": error.message}).encode()
        try:
            self.send_response(error.http_status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            self.close_connection = True


def start_standin(backing_dir: str | Path) -> tuple[str, Callable[[], None]]:
    """Start a stand-in over ``backing_dir``; return its URL and a function that stops it."""
    standin = AlluxioStandin(backing_dir)
    return standin.url, standin.close


def _normalize(path: str) -> str:
    if not path.startswith("/"):
        raise RestError("INVALID_ARGUMENT", f"Path {path!r} is invalid: it must be absolute")
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise RestError("INVALID_ARGUMENT", f"Path {path!r} is invalid")
    return "/" + "/".join(parts)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _user() -> str:
    return os.environ.get("USER") or str(os.getuid())
