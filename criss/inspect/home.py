"""One Criss home opened for reading only: its QTree, cache catalog and query log.

What the ``criss`` CLI and the dashboard read, through the library's own classes opened
read-only (``file:...?mode=ro``: safe while applications write, nothing created). A
catalog file not there yet reads as empty.

>>> with open_home("/data/criss") as home:          # doctest: +SKIP
...     len(home.qtree), len(home.cache.entries())
(41, 12)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from criss.errors import NotFoundError
from criss.history import QueryHistory
from criss.qtree.tree import NodeRecord, QTree
from criss.storage.catalog import CacheCatalog


@dataclass(frozen=True)
class HomeReaders:
    """The read-only catalogs of one home (``catalog.db``: QTree and log; ``cache.db``)."""

    path: Path
    qtree: QTree
    cache: CacheCatalog
    history: QueryHistory

    def meta(self) -> dict[str, Any]:
        """The QTree's ``meta`` keys: start time, measured bandwidths, recorded quotas."""
        return self.qtree.meta_items()

    def nodes(self) -> dict[str, NodeRecord]:
        """Every QTree operator by fingerprint."""
        return {node.stats.fingerprint: node for node in self.qtree.nodes()}


def home_path(home: str | Path) -> Path:
    """``home`` expanded, or NotFoundError when there is no such directory."""
    path = Path(home).expanduser()
    if not path.is_dir():
        raise NotFoundError(
            f"no Criss home at {path}: the directory does not exist. Pass the home "
            "your sessions use (criss.session(spark, home=...) or spark.criss.home)."
        )
    return path


@contextmanager
def open_home(home: str | Path) -> Iterator[HomeReaders]:
    """The catalogs of ``home`` opened read-only for the ``with`` block, closed after."""
    path = home_path(home)
    with ExitStack() as stack:
        yield HomeReaders(
            path=path,
            qtree=stack.enter_context(closing(QTree.read_only(path / "catalog.db"))),
            cache=stack.enter_context(closing(CacheCatalog.read_only(path / "cache.db"))),
            history=stack.enter_context(closing(QueryHistory.read_only(path / "catalog.db"))),
        )
