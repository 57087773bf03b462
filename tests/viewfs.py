"""A Hadoop file system that is not ``file:``, for tests: ViewFs over a local directory.

ViewFs is Hadoop's own client-side mount table (``viewfs://<table>/...``). Spark's tasks and
the driver reach its files only through Hadoop's FileSystem, never as local paths, as on
HDFS or S3, which cannot run on these machines. The mount table is set in the session's
Hadoop configuration, which Spark ships with every job (executors in other JVMs too).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any


def viewfs_root(spark: Any, backing: Path) -> str:
    """A ``viewfs://`` directory whose files lie in the local ``backing`` directory."""
    table = f"crisstest{uuid.uuid4().hex[:8]}"
    backing.mkdir(parents=True, exist_ok=True)
    spark._jsc.hadoopConfiguration().set(
        f"fs.viewfs.mounttable.{table}.link./cache", f"file://{backing}"
    )
    return f"viewfs://{table}/cache"
