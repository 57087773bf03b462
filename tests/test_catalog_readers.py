"""The read-only catalog readers the CLI and the dashboard use: they read what the library
wrote, refuse every write, never change a byte of a home, and ``criss.inspect`` has no SQL
of its own."""

from __future__ import annotations

import hashlib
import re
from contextlib import closing
from pathlib import Path

import pytest
from pyroaring import BitMap

from criss.errors import CatalogError
from criss.history import QueryHistory
from criss.policies.decisions import Decision
from criss.qtree.plan import PlanNode
from criss.qtree.tree import QTree
from criss.records import OperatorRecord, QueryRecord, Served, operators_from_json
from criss.storage.catalog import CacheCatalog, PartitionRecord

REPO = Path(__file__).resolve().parent.parent
#: Every module ``criss.inspect`` reads a home through (one per thing it shows).
INSPECT_MODULES = tuple(sorted((REPO / "criss" / "inspect").glob("*.py")))


def snapshot(home: Path) -> dict[str, str]:
    """SHA-256 of every file under ``home`` but SQLite's own ``-wal``/``-shm`` sidecars."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def node(op: str, *children: PlanNode) -> PlanNode:
    fingerprint = hashlib.sha256(
        (op + "".join(c.fingerprint for c in children)).encode()
    ).hexdigest()[:32]
    return PlanNode(op, {}, children, fingerprint=fingerprint, extra={"label": f"{op} label"})


@pytest.fixture
def written(tmp_path) -> dict:
    """A home the library's writable classes filled: two operators, an entry, a query."""
    root = node("Aggregate", node("Relation"))
    with closing(QTree(tmp_path / "catalog.db")) as qtree:
        qtree.observe(root)
        qtree.record_stats(root.fingerprint, texec=2.0, size_bytes=100, rows=5)
        qtree.set_meta("bandwidth:disk:/x", 1e8)
    with closing(CacheCatalog(tmp_path / "cache.db")) as cache:
        cache.put_entry(
            root.fingerprint,
            op="Aggregate",
            schema_json="{}",
            num_partitions=2,
            layout="l",
            texec=2.0,
            total_bytes=100,
        )
        cache.add_partition(PartitionRecord(root.fingerprint, 1, "disk", "p1", 100, 5, 0))
    cached = OperatorRecord((), "Aggregate", root.fingerprint, Decision("cache", "benefit"))
    reused = OperatorRecord(
        (),
        "Aggregate",
        root.fingerprint,
        Decision("reuse", "cached"),
        matched=True,
        entry=root.fingerprint,
        rule="exact",
        served=Served(reused=1, recomputed=1, total=2, bytes_read=100),
    )
    with closing(QueryHistory(tmp_path / "catalog.db")) as history:
        for operator, counters in ((cached, "operators_cached"), (reused, "operators_reused")):
            history.record(
                sql="select 1",
                planning_seconds=0.1,
                materialize_seconds=0.2,
                counters={counters: 1},
                fallback=None,
                explain="",
                decisions=QueryRecord("select 1", operators=[operator]).dumps(),
            )
    return {"home": tmp_path, "root": root}


def test_read_only_readers_see_what_the_library_wrote(written):
    home, root = written["home"], written["root"]
    leaf = root.children[0].fingerprint
    with closing(QTree.read_only(home / "catalog.db")) as qtree:
        assert len(qtree) == 2
        nodes = {n.stats.fingerprint: n for n in qtree.nodes()}
        assert nodes[root.fingerprint].label == "Aggregate label"
        assert nodes[root.fingerprint].stats.texec == 2.0
        assert nodes[root.fingerprint].to_json()["size_bytes"] == 100
        assert qtree.edges() == [{"parent": root.fingerprint, "position": 0, "child": leaf}]
        assert qtree.children(root.fingerprint) == [leaf]
        assert qtree.parents(leaf) == [root.fingerprint]
        meta = qtree.meta_items()
        assert meta["bandwidth:disk:/x"] == 1e8 and meta["start_time"] == qtree.start_time
        assert qtree.get(root.fingerprint).ref == 1
    with closing(CacheCatalog.read_only(home / "cache.db")) as cache:
        [entry] = cache.entries()
        assert entry.key == root.fingerprint and entry.bitmap == BitMap([1])
        assert entry.partitions[1].name == "p1" and cache.used_bytes() == {"disk": 100}
    with closing(QueryHistory.read_only(home / "catalog.db")) as history:
        newest, oldest = history.recent(None)
        assert oldest["counters"] == {"operators_cached": 1}
        assert operators_from_json(newest["decisions"])[0].served.reused == 1
        assert history.recent(1) == [newest]


def test_the_log_keeps_explain_and_decisions_compressed_and_reads_old_rows(tmp_path):
    explain = "Aggregate [l_returnflag]: cached (benefit 3.2 s)\n" * 60
    decisions = QueryRecord("select 1", operators=[]).dumps() + " " * 2000
    with closing(QueryHistory(tmp_path / "catalog.db")) as history:
        history.record(
            sql="select 1",
            planning_seconds=0.1,
            materialize_seconds=0.0,
            counters={},
            fallback=None,
            explain=explain,
            decisions=decisions,
        )
        # a row written by a Criss that logged plain text
        history.db.execute(
            "insert into queries (at, pid, sql, counters, explain, decisions) "
            "values (0, 1, 'old', '{}', 'plain explain', '{\"operators\": []}')"
        )
        history.db.conn.commit()
        stored = history.db.execute("select explain, decisions from queries where id = 1")
        raw_explain, raw_decisions = stored.fetchone()
    assert isinstance(raw_explain, bytes) and len(raw_explain) < len(explain) / 10
    assert isinstance(raw_decisions, bytes) and len(raw_decisions) < len(decisions) / 2
    with closing(QueryHistory.read_only(tmp_path / "catalog.db")) as history:
        old, new = history.recent(None)
    assert (new["explain"], new["decisions"]) == (explain, decisions)
    assert (old["explain"], old["decisions"]) == ("plain explain", '{"operators": []}')


def test_a_text_the_log_cannot_encode_costs_the_log_entry_only(tmp_path):
    with closing(QueryHistory(tmp_path / "catalog.db")) as history:
        logged = history.record(
            sql="select 1",
            planning_seconds=0.1,
            materialize_seconds=0.0,
            counters={},
            fallback=None,
            explain="a lone surrogate \ud800",
            decisions=None,
        )
        assert logged is None and history.recent() == []


def test_read_only_readers_refuse_every_write(written):
    home, root = written["home"], written["root"]
    before = snapshot(home)
    with closing(QTree.read_only(home / "catalog.db")) as qtree:
        for write in (
            lambda: qtree.observe(node("Project", root)),
            lambda: qtree.record_stats(root.fingerprint, texec=1.0, size_bytes=1, rows=1),
            lambda: qtree.record_executions({root.fingerprint: (1.0, 1, 1)}),
            lambda: qtree.set_meta("start_time", 0),
            lambda: qtree.invalidate([root.fingerprint]),
            qtree.clear,
        ):
            with pytest.raises(CatalogError, match="read-only"):
                write()
        assert len(qtree) == 2
    with closing(CacheCatalog.read_only(home / "cache.db")) as cache:
        record = PartitionRecord(root.fingerprint, 0, "disk", "p0", 1, 1, 0)
        for write in (
            lambda: cache.put_entry(
                "ab" * 8,
                op="x",
                schema_json="{}",
                num_partitions=1,
                layout="l",
                texec=1.0,
                total_bytes=1,
            ),
            lambda: cache.add_partition(record),
            lambda: cache.drop_partition(root.fingerprint, 1),
            lambda: cache.move_partition(root.fingerprint, 1, "memory"),
            lambda: cache.set_measurements(root.fingerprint, texec=1.0, total_bytes=1),
            lambda: cache.delete_entry(root.fingerprint),
            lambda: cache.publish_pins("me", {root.fingerprint}),
            lambda: cache.forget_owner("me"),
            cache.clear,
        ):
            with pytest.raises(CatalogError, match="read-only"):
                write()
        assert len(cache.entries()) == 1
    with closing(QueryHistory.read_only(home / "catalog.db")) as history:
        with pytest.raises(CatalogError, match="read-only"):
            history.record(
                sql=None,
                planning_seconds=0,
                materialize_seconds=0,
                counters={},
                fallback=None,
                explain="",
            )
    assert snapshot(home) == before


def test_missing_files_and_tables_read_as_empty(tmp_path):
    with closing(QTree.read_only(tmp_path / "catalog.db")) as qtree:
        assert (len(qtree), qtree.nodes(), qtree.edges(), qtree.meta_items()) == (0, [], [], {})
        assert qtree.children("ab" * 8) == [] and qtree.get("ab" * 8) is None
    with closing(CacheCatalog.read_only(tmp_path / "cache.db")) as cache:
        assert cache.entries() == [] and cache.entry("ab" * 8) is None
    with closing(QueryHistory.read_only(tmp_path / "catalog.db")) as history:
        assert history.recent() == []
    assert list(tmp_path.iterdir()) == []  # nothing created
    # a QTree catalog no query log was written to yet
    QTree(tmp_path / "catalog.db").close()
    with closing(QueryHistory.read_only(tmp_path / "catalog.db")) as history:
        assert history.recent(None) == []


def test_a_file_that_is_no_catalog_is_a_clean_error(tmp_path):
    bad = tmp_path / "cache.db"
    bad.write_bytes(b"not a database, " * 64)
    with pytest.raises(CatalogError, match=re.escape(str(bad))):
        CacheCatalog.read_only(bad).entries()
    assert bad.read_bytes() == b"not a database, " * 64


def test_load_functions_never_change_the_home(replayed_home):
    from criss.inspect import (
        load_entries,
        load_entry,
        load_overview,
        load_qtree,
        load_queries,
    )

    home = replayed_home.home
    before = snapshot(home)
    assert any(name.endswith(".db") for name in before)
    entries = load_entries(home)
    assert entries
    for entry in entries:
        assert load_entry(home, entry["key"])["key"] == entry["key"]
    assert load_overview(home)["entries"] == len(entries)
    assert load_qtree(home)["operators"] and load_qtree(home, query="aggregate")["nodes"]
    assert load_queries(home, limit=3)
    assert snapshot(home) == before


def test_load_functions_on_a_home_with_no_catalog_yet(tmp_path):
    from criss.inspect import load_entries, load_overview, load_qtree, load_queries

    assert load_overview(tmp_path)["entries"] == 0
    assert load_entries(tmp_path) == [] and load_queries(tmp_path) == []
    assert load_qtree(tmp_path)["nodes"] == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("module", INSPECT_MODULES)
def test_inspect_has_no_sql_of_its_own(module):
    source = module.read_text()
    for needle in ("select ", "execute(", "sqlite3", "sqlite_utils"):
        assert needle not in source.lower(), f"{module.relative_to(REPO)} holds {needle!r}"
