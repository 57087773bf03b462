"""Whether every executor can reach every tier: the multi-host rules, as one pure decision.

On one machine (``local[*]``, or a standalone cluster whose workers all run on the driver's
host) any directory will do. Once an executor runs on another host, each tier must be a
location that host sees at the same path: a shared mount (NFS, CIFS, Lustre, CephFS, an
Alluxio FUSE mount or another FUSE file system) or a remote store Spark reads by URI
(Alluxio without a mount). A tmpfs under ``/dev/shm`` or a directory on a local disk is
the driver's alone: executors elsewhere would write partitions the driver never sees and
fail to read what the driver placed. The check cannot tell a shared file system it does
not know from a local one, so ``spark.criss.shared.tiers=true`` vouches for the tiers.

Nothing here touches Spark or the file system: callers pass the mount table and the hosts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

#: File system types every host of a cluster may mount at one path (``fuse.*`` also counts).
SHARED_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "lustre",
        "ceph",
        "glusterfs",
        "gpfs",
        "beegfs",
        "ocfs2",
        "gfs2",
        "9p",
    }
)


@dataclass(frozen=True)
class Mount:
    """One line of the mount table: where a file system is mounted and its type."""

    point: str
    fstype: str


@dataclass(frozen=True)
class ReachProblem:
    """A tier that executors on other hosts cannot use, with the way out."""

    tier: str
    location: str
    fstype: str
    hosts: tuple[str, ...]
    fix: str

    def __str__(self) -> str:
        return (
            f"the {self.tier} tier at {self.location} is on {self.fstype}, local to the "
            f"driver's host, but executors run on {', '.join(self.hosts)}: {self.fix}"
        )


def parse_mounts(text: str) -> list[Mount]:
    """``/proc/mounts`` as :class:`Mount` records (octal escapes such as ``\\040`` decoded)."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            point = fields[1].encode().decode("unicode_escape")
            mounts.append(Mount(point, fields[2]))
    return mounts


def mount_of(location: str, mounts: Iterable[Mount]) -> Mount | None:
    """The mount holding ``location`` (the longest mount point that contains it)."""
    path = PurePosixPath(location)
    best: Mount | None = None
    for mount in mounts:
        point = PurePosixPath(mount.point)
        if (path == point or point in path.parents) and (
            best is None or len(point.parts) >= len(PurePosixPath(best.point).parts)
        ):
            best = mount
    return best


def is_shared(fstype: str) -> bool:
    return fstype in SHARED_FILESYSTEMS or fstype.startswith("fuse.") or fstype == "fuse"


def other_hosts(driver_hosts: Iterable[str], executor_hosts: Iterable[str]) -> tuple[str, ...]:
    """Executor hosts that are not the driver's (each compared by name or address as given)."""
    driver = {h.lower() for h in driver_hosts}
    return tuple(sorted({h for h in executor_hosts if h.lower() not in driver}))


def reach_problems(
    tiers: Mapping[str, str | None],
    driver_hosts: Iterable[str],
    executor_hosts: Iterable[str],
    mounts: Iterable[Mount],
    *,
    vouched_shared: bool = False,
) -> list[ReachProblem]:
    """Tiers that executors on other hosts could not use.

    ``tiers`` maps each tier's name to its local directory, or None for a tier Spark reads
    by a remote URI (reachable from anywhere). Empty when every executor runs on the
    driver's host, or the user vouched that the tiers are shared.
    """
    elsewhere = other_hosts(driver_hosts, executor_hosts)
    if not elsewhere or vouched_shared:
        return []
    mounts = list(mounts)
    problems = []
    for name, location in tiers.items():
        if location is None:
            continue
        mount = mount_of(location, mounts)
        fstype = mount.fstype if mount is not None else "an unknown file system"
        if mount is not None and is_shared(mount.fstype):
            continue
        problems.append(ReachProblem(name, location, fstype, elsewhere, _fix(name, fstype)))
    return problems


def _fix(tier: str, fstype: str) -> str:
    if tier == "memory":
        return (
            "a RAM tier cannot be shared between hosts; set spark.criss.media=disk, or "
            "spark.criss.alluxio.url to use Alluxio's memory as the fast tier"
        )
    return (
        "put spark.criss.home (and so this tier) on a file system every host mounts at the "
        "same path (NFS, an Alluxio FUSE mount, ...); if it already is one that Criss does "
        f"not recognise ({fstype}), set spark.criss.shared.tiers=true"
    )
