"""Every tier passes one conformance suite: memory (tmpfs), disk, and Alluxio.

The Alluxio tier runs against ``tests/alluxio_standin.py``, a local stand-in of the Alluxio
proxy REST API, because no Alluxio server can be installed on the development machines.
"""

from __future__ import annotations

import io
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from alluxio_standin import AlluxioStandin
from viewfs import viewfs_root

from criss.bridge.hadoopfs import HadoopFiles
from criss.errors import ConfigError, StorageError
from criss.storage.alluxio import AlluxioTier
from criss.storage.hadoop import HadoopTier, check_uri
from criss.storage.staging import Staging
from criss.storage.tiers import TEMP_DIR, LocalTier, Tier, file_uri, local_file, move_file

REPO = Path(__file__).resolve().parent.parent
NAME = "k1/00003-1a2b3c4d.parquet"
BAD_NAMES = ["/abs.parquet", "../x.parquet", "k/../../x.parquet", "_tmp/x.parquet", "", "."]

MakeLeftover = Callable[[], None]


def payload(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


class FailingReader:
    """A source that yields ``good`` bytes, then fails as a broken disk or socket would."""

    def __init__(self, good: bytes, error: Exception) -> None:
        self._data = io.BytesIO(good)
        self._error = error

    def read(self, size: int = -1) -> bytes:
        chunk = self._data.read(size if size and size > 0 else None)
        if chunk:
            return chunk
        raise self._error


def parquet_bytes() -> tuple[pa.Table, bytes]:
    table = pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)]})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return table, sink.getvalue()


@pytest.fixture
def other(tmp_path: Path) -> LocalTier:
    """A disk tier to move files to and from."""
    return LocalTier("other", tmp_path / "other")


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[AlluxioStandin]:
    with AlluxioStandin(tmp_path / "alluxio-fuse") as server:
        yield server


class TierConformance:
    """The Tier contract. Subclasses provide ``tier``, ``twin`` and ``make_leftover``."""

    def test_round_trip(self, tier: Tier) -> None:
        data = payload(5_000_001)  # more than one 4 MiB copy chunk
        assert tier.write(NAME, io.BytesIO(data)) == len(data)
        assert tier.size(NAME) == len(data)
        assert tier.list() == {NAME: len(data)}
        with tier.open(NAME) as reader:
            assert reader.read(10) == data[:10]
            assert reader.read() == data[10:]

    def test_empty_file(self, tier: Tier) -> None:
        assert tier.write(NAME, io.BytesIO(b"")) == 0
        assert tier.size(NAME) == 0
        with tier.open(NAME) as reader:
            assert reader.read() == b""

    def test_missing_name(self, tier: Tier) -> None:
        assert tier.size(NAME) is None
        with pytest.raises(StorageError):
            tier.open(NAME)

    def test_failed_write_commits_nothing(self, tier: Tier) -> None:
        with pytest.raises(StorageError, match="disk gone"):
            tier.write(NAME, FailingReader(payload(100_000), OSError("disk gone")))
        assert tier.size(NAME) is None
        assert tier.list() == {}
        assert tier.clean_temp() == 0  # a failed write removes its own temporary file

    def test_failed_overwrite_keeps_old_file(self, tier: Tier) -> None:
        tier.write(NAME, io.BytesIO(b"version one"))
        with pytest.raises(ValueError, match="bad row"):
            tier.write(NAME, FailingReader(payload(50_000), ValueError("bad row")))
        with tier.open(NAME) as reader:
            assert reader.read() == b"version one"
        assert tier.list() == {NAME: len(b"version one")}
        tier.clean_temp()
        assert tier.clean_temp() == 0

    def test_overwrite_replaces(self, tier: Tier) -> None:
        tier.write(NAME, io.BytesIO(payload(3000, seed=1)))
        second = payload(1234, seed=2)
        assert tier.write(NAME, io.BytesIO(second)) == len(second)
        with tier.open(NAME) as reader:
            assert reader.read() == second
        assert tier.list() == {NAME: len(second)}

    def test_delete(self, tier: Tier) -> None:
        tier.write(NAME, io.BytesIO(b"x" * 10))
        tier.write("k1/keep.parquet", io.BytesIO(b"y" * 5))
        tier.delete(NAME)
        tier.delete(NAME)  # a missing name is fine
        tier.delete("never/written.parquet")
        assert tier.size(NAME) is None
        assert tier.list() == {"k1/keep.parquet": 5}

    def test_delete_prunes_empty_entry_directory(self, tier: Tier) -> None:
        tier.write(NAME, io.BytesIO(b"x"))
        local = tier.local_path(NAME)
        tier.delete(NAME)
        if local is not None:
            assert not local.parent.exists()

    def test_nested_names(self, tier: Tier) -> None:
        tier.write("a/b/c.parquet", io.BytesIO(b"abc"))
        tier.write("top.parquet", io.BytesIO(b"t"))
        assert tier.list() == {"a/b/c.parquet": 3, "top.parquet": 1}

    def test_list_excludes_temp_files(self, tier: Tier, make_leftover: MakeLeftover) -> None:
        tier.write(NAME, io.BytesIO(b"abc"))
        make_leftover()
        assert tier.list() == {NAME: 3}
        assert tier.used_bytes() == 3

    def test_clean_temp_counts_leftovers(self, tier: Tier, make_leftover: MakeLeftover) -> None:
        tier.write(NAME, io.BytesIO(b"abc"))
        make_leftover()
        make_leftover()
        assert tier.clean_temp() == 2
        assert tier.clean_temp() == 0
        assert tier.list() == {NAME: 3}
        tier.write("k2/after.parquet", io.BytesIO(b"still writable"))
        assert tier.size("k2/after.parquet") == len(b"still writable")

    @pytest.mark.parametrize("bad", BAD_NAMES)
    def test_invalid_names_are_refused(self, tier: Tier, bad: str) -> None:
        with pytest.raises(StorageError):
            tier.write(bad, io.BytesIO(b"x"))
        for call in (tier.open, tier.size, tier.delete, tier.uri):
            with pytest.raises(StorageError):
                call(bad)
        assert tier.list() == {}

    def test_uri_is_readable_by_pyarrow(self, tier: Tier) -> None:
        table, data = parquet_bytes()
        tier.write(NAME, io.BytesIO(data))
        assert pq.read_table(tier.uri(NAME)).equals(table)

    def test_used_bytes_is_sum_of_sizes(self, tier: Tier) -> None:
        names = [f"k{i}/{j:05d}-00000000.parquet" for i in range(3) for j in range(2)]
        for n, name in enumerate(names):
            tier.write(name, io.BytesIO(payload(100 * (n + 1), seed=n)))
        assert tier.used_bytes() == sum(tier.size(name) or 0 for name in names)
        assert tier.used_bytes() == sum(100 * (n + 1) for n in range(len(names)))

    def test_move_to_disk_and_back(self, tier: Tier, other: LocalTier) -> None:
        self._move_there_and_back(tier, other)

    def test_move_to_same_kind_and_back(self, tier: Tier, twin: Tier) -> None:
        self._move_there_and_back(tier, twin)

    def test_adopt_moves_a_local_file_in(self, tier: Tier, tmp_path: Path) -> None:
        local = tmp_path / "staged.parquet"
        local.write_bytes(b"staged bytes")
        assert tier.adopt(local, NAME) == len(b"staged bytes")
        assert not local.exists()
        with tier.open(NAME) as reader:
            assert reader.read() == b"staged bytes"

    def test_describe(self, tier: Tier) -> None:
        described = tier.describe()
        assert described["name"] == tier.name
        assert "capacity_bytes" in described

    @staticmethod
    def _move_there_and_back(tier: Tier, target: Tier) -> None:
        data = payload(70_000)
        tier.write(NAME, io.BytesIO(data))
        assert move_file(tier, target, NAME) == len(data)
        assert tier.size(NAME) is None
        assert NAME not in tier.list()
        with target.open(NAME) as reader:
            assert reader.read() == data
        assert move_file(target, tier, NAME) == len(data)
        assert target.size(NAME) is None
        with tier.open(NAME) as reader:
            assert reader.read() == data


class LocalTierChecks(TierConformance):
    """What LocalTier promises beyond the contract."""

    def test_directories_are_private(self, tier: LocalTier) -> None:
        tier.write(NAME, io.BytesIO(b"x"))
        for directory in (tier.root, tier.root / TEMP_DIR, tier.root / "k1"):
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory

    def test_uri_is_a_file_uri_of_the_local_path(self, tier: LocalTier) -> None:
        # a bare path would resolve against fs.defaultFS (HDFS on many clusters)
        assert tier.uri(NAME) == f"file://{tier.root / NAME}"
        assert local_file(tier.uri(NAME)) == str(tier.root / NAME)
        assert tier.local_root() == tier.root


def _local_leftover(tier: LocalTier) -> MakeLeftover:
    def make() -> None:
        (tier.root / TEMP_DIR / f"k1.x.parquet.{uuid.uuid4().hex[:8]}").write_bytes(b"partial")

    return make


class TestDiskTier(LocalTierChecks):
    @pytest.fixture
    def tier(self, tmp_path: Path) -> LocalTier:
        # Two missing levels, so parents are created too (and must be private as well).
        return LocalTier("disk", tmp_path / "home" / "disk", capacity_bytes=1 << 30)

    @pytest.fixture
    def twin(self, tmp_path: Path) -> LocalTier:
        return LocalTier("disk2", tmp_path / "home" / "disk2")

    @pytest.fixture
    def make_leftover(self, tier: LocalTier) -> MakeLeftover:
        return _local_leftover(tier)

    def test_parents_are_private_too(self, tier: LocalTier) -> None:
        assert stat.S_IMODE(tier.root.parent.stat().st_mode) == 0o700


class TestMemoryTier(LocalTierChecks):
    @pytest.fixture
    def shm(self) -> Iterator[Path]:
        if not Path("/dev/shm").is_dir():
            pytest.skip("no /dev/shm on this machine")
        base = Path(tempfile.mkdtemp(prefix="criss-test-", dir="/dev/shm"))
        yield base
        shutil.rmtree(base, ignore_errors=True)

    @pytest.fixture
    def tier(self, shm: Path) -> LocalTier:
        return LocalTier("memory", shm / "memory", capacity_bytes=64 << 20)

    @pytest.fixture
    def twin(self, shm: Path) -> LocalTier:
        return LocalTier("memory2", shm / "memory2")

    @pytest.fixture
    def make_leftover(self, tier: LocalTier) -> MakeLeftover:
        return _local_leftover(tier)


class TestAlluxioTier(TierConformance):
    """AlluxioTier against the local stand-in of the proxy REST API (not a real Alluxio)."""

    ROOT = "/criss/test"

    @pytest.fixture
    def tier(self, standin: AlluxioStandin) -> AlluxioTier:
        return AlluxioTier("alluxio", url=standin.url, root=self.ROOT, mount=standin.backing)

    @pytest.fixture
    def twin(self, standin: AlluxioStandin) -> AlluxioTier:
        return AlluxioTier("alluxio2", url=standin.url, root="/criss/twin", mount=standin.backing)

    @pytest.fixture
    def make_leftover(self, standin: AlluxioStandin, tier: AlluxioTier) -> MakeLeftover:
        import alluxio

        client = alluxio.Client(standin.host, standin.port)

        def make() -> None:
            # What a writer killed before its rename leaves behind.
            with client.open(f"{self.ROOT}/_tmp/k1.x.parquet.{uuid.uuid4().hex[:8]}", "w") as w:
                w.write(b"partial")

        return make

    def _status(self, standin: AlluxioStandin, name: str) -> Any:
        """``get-status`` of ``name`` as the client parses it (an ``alluxio.wire.FileInfo``)."""
        import alluxio

        return alluxio.Client(standin.host, standin.port).get_status(f"{self.ROOT}/{name}")

    def test_writes_are_renamed_from_temp(self, tier: AlluxioTier, standin: AlluxioStandin) -> None:
        standin.calls.clear()
        tier.write(NAME, io.BytesIO(b"abc"))
        actions = [action for action, _ in standin.calls]
        assert actions[:3] == ["create-file", "write", "close"]
        assert standin.calls[0][1].startswith(f"/{self.ROOT.strip('/')}/_tmp/")
        assert ("rename", standin.calls[0][1]) in standin.calls
        assert self._status(standin, NAME).completed

    def test_moving_out_goes_through_the_proxy(
        self, tier: AlluxioTier, other: LocalTier, standin: AlluxioStandin
    ) -> None:
        # The FUSE mount is a view: renaming a file out of it would bypass Alluxio.
        tier.write(NAME, io.BytesIO(b"abc"))
        standin.calls.clear()
        move_file(tier, other, NAME)
        path = f"{self.ROOT}/{NAME}"
        assert ("open-file", path) in standin.calls
        assert ("delete", path) in standin.calls

    def test_pin_and_free_reach_the_server(
        self, tier: AlluxioTier, standin: AlluxioStandin
    ) -> None:
        tier.write(NAME, io.BytesIO(b"abc"))
        assert self._status(standin, NAME).in_memory_percentage == 100
        tier.pin(NAME)
        assert self._status(standin, NAME).pinned
        with pytest.raises(StorageError, match="pinned"):
            tier.free(NAME)  # Alluxio will not free a pinned file
        tier.pin(NAME, pinned=False)
        assert not self._status(standin, NAME).pinned
        tier.free(NAME)
        assert self._status(standin, NAME).in_memory_percentage == 0
        assert ("free", f"{self.ROOT}/{NAME}") in standin.calls
        with tier.open(NAME) as reader:  # still readable from the under storage
            assert reader.read() == b"abc"

    def test_must_cache_files_cannot_be_freed(self, standin: AlluxioStandin) -> None:
        tier = AlluxioTier(
            url=standin.url, root=self.ROOT, mount=standin.backing, write_type="MUST_CACHE"
        )
        tier.write(NAME, io.BytesIO(b"abc"))
        assert not self._status(standin, NAME).persisted
        with pytest.raises(StorageError, match="not persisted"):
            tier.free(NAME)

    def test_uri_without_mount_is_an_alluxio_uri(self, standin: AlluxioStandin) -> None:
        tier = AlluxioTier(url=standin.url, root=self.ROOT)
        assert tier.uri(NAME) == f"alluxio://{standin.host}:19998{self.ROOT}/{NAME}"
        assert tier.local_path(NAME) is None
        named = AlluxioTier(url=standin.url, root=self.ROOT, master="master.example:19998")
        assert named.uri(NAME) == f"alluxio://master.example:19998{self.ROOT}/{NAME}"

    def test_uri_with_mount_is_a_local_file_uri(
        self, tier: AlluxioTier, standin: AlluxioStandin
    ) -> None:
        root = standin.backing / self.ROOT.lstrip("/")
        assert tier.uri(NAME) == file_uri(root / NAME)
        assert tier.local_root() == root

    def test_missing_client_gives_install_hint(
        self, standin: AlluxioStandin, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setitem(sys.modules, "alluxio", None)
        with pytest.raises(ConfigError, match=r"pip install 'criss\[alluxio\]'"):
            AlluxioTier(url=standin.url, root=self.ROOT)

    def test_importing_the_module_does_not_import_the_client(self) -> None:
        code = "import sys, storage.alluxio; assert 'alluxio' not in sys.modules"
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True)
        assert proc.returncode == 0, proc.stderr.decode()

    @pytest.mark.parametrize(
        "options",
        [
            {"url": "https://proxy:39999"},
            {"url": "proxy:39999"},
            {"url": "http://proxy:notaport"},
            {"root": "/"},
            {"root": "relative/dir"},
            {"root": "/criss/../etc"},
            {"write_type": "SOMETIMES"},
        ],
    )
    def test_bad_configuration(self, standin: AlluxioStandin, options: dict[str, str]) -> None:
        settings = {"url": standin.url, "root": self.ROOT, **options}
        with pytest.raises(ConfigError):
            AlluxioTier(**settings)

    def test_mount_that_does_not_show_alluxio_is_refused(
        self, standin: AlluxioStandin, tmp_path: Path
    ) -> None:
        with pytest.raises(ConfigError, match="does not show"):
            AlluxioTier(url=standin.url, root=self.ROOT, mount=tmp_path / "elsewhere")

    def test_unreachable_proxy_is_a_storage_error(self, tmp_path: Path) -> None:
        server = AlluxioStandin(tmp_path / "gone")
        tier = AlluxioTier(url=server.url, root=self.ROOT)
        server.close()
        with pytest.raises(StorageError, match="is the Alluxio proxy running"):
            tier.size(NAME)
        with pytest.raises(StorageError):
            tier.write(NAME, io.BytesIO(b"abc"))


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("file:///tmp/a b/x.parquet", "/tmp/a b/x.parquet"),
        ("file:/tmp/x.parquet", "/tmp/x.parquet"),
        ("/tmp/x.parquet", "/tmp/x.parquet"),
        ("alluxio://master:19998/criss/x.parquet", None),
        ("hdfs://nn/criss/x.parquet", None),
    ],
)
def test_local_file_of_a_location(location: str, path: str | None) -> None:
    assert local_file(location) == path


def test_file_uri_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert file_uri("x/y.parquet") == f"file://{tmp_path}/x/y.parquet"


class TestHadoopTier(TierConformance):
    """HadoopTier on ``viewfs://`` (Hadoop's mount table over a local directory), managed
    through Spark's JVM: the real Hadoop FileSystem API that ``hdfs://`` and ``s3a://`` share.
    No HDFS can run on these machines."""

    @pytest.fixture
    def backing(self, tmp_path: Path) -> Path:
        return tmp_path / "viewfs-backing"

    @pytest.fixture
    def tier(self, spark: Any, backing: Path) -> HadoopTier:
        return HadoopTier("disk", HadoopFiles(spark, viewfs_root(spark, backing)), 1 << 30)

    @pytest.fixture
    def twin(self, spark: Any, tmp_path: Path) -> HadoopTier:
        root = viewfs_root(spark, tmp_path / "viewfs-twin")
        return HadoopTier("disk2", HadoopFiles(spark, root))

    @pytest.fixture
    def make_leftover(self, backing: Path) -> MakeLeftover:
        def make() -> None:
            (backing / TEMP_DIR / f"k1.x.parquet.{uuid.uuid4().hex[:8]}").write_bytes(b"partial")

        return make

    def test_uri_is_readable_by_pyarrow(self, tier: Tier) -> None:
        pytest.skip("a viewfs:// URI is Spark's to read (test_uri_is_readable_by_spark)")

    def test_uri_is_readable_by_spark(self, tier: HadoopTier, spark: Any) -> None:
        table, data = parquet_bytes()
        tier.write(NAME, io.BytesIO(data))
        assert tier.uri(NAME).startswith("viewfs://")
        assert local_file(tier.uri(NAME)) is None  # never read as a local path
        rows = spark.read.parquet(tier.uri(NAME)).orderBy("id").collect()
        assert [tuple(r) for r in rows] == list(zip(*table.to_pydict().values(), strict=True))

    def test_a_staged_result_is_adopted_by_a_rename(self, tier: HadoopTier, backing: Path) -> None:
        staged = tier.staging_uri("k1")
        tier.files.write(f"{staged}/part-00000.parquet", io.BytesIO(b"from spark"))
        assert tier.adopt(f"{staged}/part-00000.parquet", NAME) == len(b"from spark")
        assert tier.files.list(staged) == {}
        assert (backing / NAME).read_bytes() == b"from spark"
        with pytest.raises(StorageError, match="_tmp"):
            tier.adopt("viewfs://elsewhere/x.parquet", NAME)

    def test_a_parquet_footer_is_read_through_the_file_system(self, tier: HadoopTier) -> None:
        table, data = parquet_bytes()
        tier.write(NAME, io.BytesIO(data))
        with tier.open(NAME) as reader:
            assert pq.ParquetFile(reader).metadata.num_rows == table.num_rows

    @pytest.mark.parametrize(
        "bad", ["/local/path", "hdfs://namenode", "no scheme/cache", "s3a://bucket/"]
    )
    def test_a_bad_uri_is_refused_with_the_fix(self, bad: str) -> None:
        with pytest.raises(ConfigError, match="disk_uri"):
            check_uri(bad)


def test_staging_falls_back_to_a_readable_tiers_scratch_directory(tmp_path: Path) -> None:
    """A tier taking writes without a local scratch directory (Alluxio without a FUSE
    mount) stages Spark's output on a tier that only holds data (the disk)."""

    class NoScratch(LocalTier):
        def scratch_dir(self) -> None:
            return None

    disk = LocalTier("disk", tmp_path / "disk")
    staged = Staging([NoScratch("alluxio", tmp_path / "alluxio")], [disk]).new("k1")
    assert isinstance(staged, Path) and staged.parent == disk.scratch_dir()
    with pytest.raises(StorageError, match="stage"):
        Staging([NoScratch("alluxio", tmp_path / "alluxio")], [])
