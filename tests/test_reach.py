"""The multi-host rules (criss.storage.reach): which tiers executors on other hosts can use.

Pure decisions over a mount table and host names; the cluster tests (test_cluster.py) check
the same rules against a real standalone cluster.
"""

from __future__ import annotations

import pytest

from criss.errors import ConfigError
from criss.space import TierReach, driver_addresses
from criss.storage.reach import Mount, mount_of, parse_mounts, reach_problems
from criss.storage.tiers import LocalTier

MOUNTS = parse_mounts(
    "/dev/sda1 / ext4 rw,relatime 0 0\n"
    "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"
    "nas:/export /mnt/shared nfs4 rw,vers=4.2 0 0\n"
    "alluxio-fuse /mnt/alluxio fuse.alluxio-fuse rw 0 0\n"
    "/dev/sdb1 /mnt/with\\040space xfs rw 0 0\n"
)
TIERS = {"memory": "/dev/shm/criss-u/0123", "disk": "/home/u/.criss/disk"}


def test_the_longest_mount_point_holds_a_path() -> None:
    assert mount_of("/dev/shm/criss-u/x", MOUNTS) == Mount("/dev/shm", "tmpfs")
    assert mount_of("/dev/shmx/y", MOUNTS) == Mount("/", "ext4")
    assert mount_of("/mnt/with space/criss", MOUNTS) == Mount("/mnt/with space", "xfs")
    assert mount_of("relative/path", MOUNTS) is None


def test_on_the_drivers_host_alone_every_tier_is_fine() -> None:
    hosts = ["10.0.0.5", "myhost"]
    assert reach_problems(TIERS, ["myhost", "10.0.0.5"], hosts, MOUNTS) == []
    assert reach_problems(TIERS, ["MyHost"], ["myhost"], MOUNTS) == []
    assert reach_problems(TIERS, ["myhost"], [], MOUNTS) == []  # none registered yet


def test_executors_elsewhere_cannot_use_host_local_tiers() -> None:
    problems = reach_problems(TIERS, ["10.0.0.5"], ["10.0.0.5", "10.0.0.7"], MOUNTS)
    assert [(p.tier, p.fstype, p.hosts) for p in problems] == [
        ("memory", "tmpfs", ("10.0.0.7",)),
        ("disk", "ext4", ("10.0.0.7",)),
    ]
    memory, disk = map(str, problems)
    assert "/dev/shm/criss-u/0123" in memory and "spark.criss.media=disk" in memory
    assert "spark.criss.alluxio.url" in memory
    assert "spark.criss.home" in disk and "spark.criss.shared.tiers=true" in disk


def test_shared_mounts_remote_tiers_and_vouched_tiers_reach_every_host() -> None:
    tiers = {"alluxio": "/mnt/alluxio/criss/0123", "disk": "/mnt/shared/u/.criss/disk"}
    assert reach_problems(tiers, ["a"], ["b"], MOUNTS) == []
    assert reach_problems({"alluxio": None}, ["a"], ["b"], MOUNTS) == []  # alluxio://
    assert reach_problems(TIERS, ["a"], ["b"], MOUNTS, vouched_shared=True) == []


def test_a_path_no_mount_holds_counts_as_local() -> None:
    (problem,) = reach_problems({"disk": "/x"}, ["a"], ["b"], [])
    assert problem.fstype == "an unknown file system"


def test_the_drivers_addresses_include_its_names_not_other_loopbacks() -> None:
    addresses = driver_addresses("127.0.0.1")
    assert {"127.0.0.1", "localhost"} <= addresses
    assert "127.0.0.2" not in addresses


class TestTierReach:
    """The session's check: when it runs, and what it raises."""

    @staticmethod
    def tiers(tmp_path):
        return lambda: [LocalTier("disk", tmp_path / "disk")]

    def test_local_masters_are_never_checked(self, tmp_path) -> None:
        def hosts():
            raise AssertionError("a local master needs no executor list")

        TierReach("local[2]", hosts, False).check(self.tiers(tmp_path), force=True)
        TierReach("local-cluster[2,1,1024]", hosts, False).check(self.tiers(tmp_path))

    def test_executors_on_another_host_raise_a_config_error(self, tmp_path) -> None:
        elsewhere = ("127.0.0.1", ("127.0.0.1", "127.0.0.2"), 1)
        reach = TierReach("spark://127.0.0.1:7077", lambda: elsewhere, False)
        with pytest.raises(ConfigError, match=r"disk tier at .* executors run on 127\.0\.0\.2"):
            reach.check(self.tiers(tmp_path), force=True)

    def test_asked_every_time_until_an_executor_registers_then_per_interval(self, tmp_path) -> None:
        seen = [("127.0.0.1", ("127.0.0.1",), 0)]  # the driver alone: nothing registered
        calls = []

        def hosts():
            calls.append(1)
            return seen[-1]

        reach = TierReach("spark://127.0.0.1:7077", hosts, False, interval=3600)
        reach.check(self.tiers(tmp_path), force=True)
        reach.check(self.tiers(tmp_path))
        assert len(calls) == 2
        seen.append(("127.0.0.1", ("127.0.0.1",), 2))
        reach.check(self.tiers(tmp_path))
        seen.append(("127.0.0.1", ("127.0.0.1", "127.0.0.2"), 3))
        reach.check(self.tiers(tmp_path))  # within the interval: not asked again
        assert len(calls) == 3
        with pytest.raises(ConfigError):
            reach.check(self.tiers(tmp_path), force=True)
