"""The entry store: atomic commits, integrity checks, never pulling files from under readers."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from storage import EntryStore


def _stage(store: EntryStore, key: str, values: list[int]):
    staged = store.staging_dir(key)
    staged.mkdir(parents=True)
    pq.write_table(pa.table({"c0": values}), staged / "part-00000.parquet")
    (staged / "_SUCCESS").write_text("")
    return staged


def test_commit_then_get_checks_size_and_content(tmp_path):
    store = EntryStore(tmp_path / "disk")
    entry = store.commit("k", _stage(store, "k", [1, 2, 3]), schema_json="{}", rows=3, texec=1.0)
    assert store.get("k") == entry and entry.rows == 3 and len(entry.files) == 1
    assert [name for name, _, _ in entry.files] == ["part-00000.parquet"]  # no bookkeeping files
    part = entry.file_paths[0]
    original = open(part, "rb").read()
    with open(part, "wb") as f:  # same size, different bytes
        f.write(bytes(len(original)))
    assert store.get("k") is None
    with open(part, "wb") as f:
        f.write(original[:10])
    assert store.get("k") is None


def test_second_commit_of_a_key_keeps_the_files_readers_use(tmp_path):
    store = EntryStore(tmp_path / "disk")
    first = store.commit("k", _stage(store, "k", [1]), schema_json="{}", rows=1, texec=1.0)
    second = store.commit("k", _stage(store, "k", [1]), schema_json="{}", rows=1, texec=2.0)
    assert second == first and all(os.path.exists(p) for p in first.file_paths)
    assert list((tmp_path / "disk" / "_tmp").iterdir()) == []  # the losing copy is gone


def test_damaged_entry_is_replaced_and_clear_keeps_pinned(tmp_path):
    store = EntryStore(tmp_path / "disk")
    first = store.commit("k", _stage(store, "k", [1]), schema_json="{}", rows=1, texec=1.0)
    open(first.file_paths[0], "wb").close()
    fresh = store.commit("k", _stage(store, "k", [1, 2]), schema_json="{}", rows=2, texec=1.0)
    assert store.get("k") == fresh and fresh.rows == 2
    store.commit("other", _stage(store, "other", [5]), schema_json="{}", rows=1, texec=1.0)
    store.clear(keep={"k"})
    assert store.keys() == ["k"]
