"""The input a query reads (criss.qtree.scans, criss.tables.read_bytes): the bytes of the
columns it reads from a Parquet table, not the table's whole files. TPC-H Q20 reads 69 of
its tables' 275 MB at SF 1; counting whole files made its first-sight estimate 7.7 s for a
query that takes 0.8 s, and cached its result on that estimate."""

from __future__ import annotations

from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
import pytest

import criss
from criss.qtree import canonicalize, fingerprint_tree
from criss.qtree.plan import READ_BYTES, Expr, PlanNode
from criss.qtree.scans import read_positions, with_read_bytes
from criss.tables import read_bytes

ATTRIBUTE = "org.apache.spark.sql.catalyst.expressions.AttributeReference"
EXPR_ID = "org.apache.spark.sql.catalyst.expressions.ExprId"


def _attribute(ordinal: int) -> Expr:
    return Expr(ATTRIBUTE, (("exprId", (("id", ordinal), ("product-class", EXPR_ID))),), ())


def _call(cls: str, *children: Expr) -> Expr:
    return Expr(f"org.apache.spark.sql.catalyst.expressions.{cls}", (), tuple(children))


def _relation(path):
    output = [_attribute(i) for i in range(5)]
    return PlanNode(
        "LogicalRelation",
        {"output": output},
        path=path,
        relation={"bytes": 1000, "format": "Parquet", "fields": ["a", "b", "c", "d", "e"]},
    )


def _scan(path, projected, condition):
    """Project[projected](Filter[condition](relation)) at ``path``."""
    relation = _relation(path + (0, 0))
    filtered = PlanNode("Filter", {"condition": condition}, (relation,), path + (0,))
    return PlanNode("Project", {"projectList": projected}, (filtered,), path)


def test_a_projected_scan_reads_the_columns_its_project_and_filters_name():
    scan = _scan((0,), [_attribute(1), _call("Alias", _attribute(3))], _attribute(4))
    tree = PlanNode("Aggregate", {}, (scan,), ())
    assert read_positions(tree) == {(0, 0, 0): frozenset({1, 3, 4})}


def test_a_table_read_otherwise_counts_whole():
    """Under a join directly, or filtered by a subquery (whose attributes are another
    plan's): no positions, so its file bytes count."""
    joined = PlanNode("Join", {}, (_relation((0,)), _relation((1,))), ())
    assert read_positions(joined) == {}
    subquery = _call("ScalarSubquery", _attribute(0))
    tree = _scan((), [_attribute(1)], _call("GreaterThan", _attribute(2), subquery))
    assert read_positions(tree) == {}


def test_marked_leaves_price_the_input_and_unmarked_ones_their_files():
    left = _scan((0,), [_attribute(0)], _attribute(1))
    right = PlanNode("Filter", {"condition": _attribute(0)}, (_relation((1, 0)),), (1,))
    tree = PlanNode("Join", {}, (left, right), ())
    marked = with_read_bytes(tree, lambda leaf, positions: 10 * len(positions))
    assert marked.children[0].children[0].children[0].extra[READ_BYTES] == 20
    assert READ_BYTES not in marked.children[1].children[0].extra
    assert marked.scanned_bytes == 20 + 1000
    assert marked.children[1] is tree.children[1]  # a branch without marks is kept as it is
    unknown = with_read_bytes(tree, lambda leaf, positions: None)
    assert unknown.scanned_bytes == 2000


def test_read_bytes_from_footers_are_none_where_the_files_cannot_say():
    assert read_bytes({"format": "CSV", "fields": ["a"], "files": []}, {0}) is None
    assert read_bytes({"format": "Parquet", "files": []}, {0}) is None  # no field names
    assert read_bytes({"format": "Parquet", "fields": ["a"], "files": []}, {3}) is None
    remote = {"format": "Parquet", "fields": ["a"], "files": [["hdfs://h/f.parquet", 1, 1]]}
    assert read_bytes(remote, {0}) is None


def _footer_bytes(files, names):
    total = 0
    for path, _, _ in files:
        metadata = pq.read_metadata(unquote(urlparse(path).path))
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            for index in range(row_group.num_columns):
                chunk = row_group.column(index)
                if chunk.path_in_schema in names:
                    total += chunk.total_compressed_size
    return total


@pytest.mark.spark
def test_a_query_over_few_columns_is_priced_at_their_bytes(tpch, tmp_path):
    """On Spark: lineitem read for three of its columns is priced at their column chunks'
    bytes (a fraction of the file's); the first-seen result's estimate uses them; and the
    column names the pricing needs are no part of any fingerprint."""
    sql = (
        "select l_partkey, sum(l_quantity) as q from lineitem "
        "where l_shipdate > date '1995-01-01' group by l_partkey"
    )
    with criss.session(tpch, home=str(tmp_path / "h")) as cs:
        captured = cs.bridge.capture(tpch.sql(sql))
        tree = cs.canonical_tree(captured)
        (leaf,) = [n for n in tree.leaves() if n.relation]
        expected = _footer_bytes(leaf.relation["files"], {"l_partkey", "l_quantity", "l_shipdate"})
        assert 0 < leaf.extra[READ_BYTES] == expected < leaf.relation["bytes"] / 3
        assert tree.scanned_bytes == expected
        assert "fields" not in leaf.args["relation"]
        without_names = captured.tree.with_(
            children=tuple(_without_fields(c) for c in captured.tree.children)
        )
        assert fingerprint_tree(canonicalize(without_names)).fingerprint == tree.fingerprint

        cs.sql(sql).collect()
        (result,) = [o for o in cs.last_record.operators if o.path == ()]
        assert result.decision.numbers["scanned_bytes"] == expected


def _without_fields(node: PlanNode) -> PlanNode:
    relation = (
        None if node.relation is None else {k: v for k, v in node.relation.items() if k != "fields"}
    )
    return node.with_(relation=relation, children=tuple(_without_fields(c) for c in node.children))
