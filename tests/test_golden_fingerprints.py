"""Golden fixtures pin the canonical form: TPC-H fingerprints and reformulations.

The stored fingerprints were computed in another JVM; matching them proves canonicalization
is stable across JVMs and runs. File listings (paths, mtimes) are replaced by the file name
so the fixture does not depend on where or when the data was generated. After an intended
change of the canonical form or of Spark, regenerate with ``CRISS_UPDATE_GOLDEN=1`` (that
run rewrites the fixture and skips the comparisons); a missing fixture is a failure.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from criss.bridge import CatalystBridge
from criss.qtree import canonicalize, fingerprint_tree
from criss.qtree.canonical import RULES, relation_identity
from criss.qtree.plan import PlanNode
from criss.workload.tpch import queries

FIXTURE = Path(__file__).parent / "fixtures" / "tpch_fingerprints.json"

#: Pairs of spellings of one computation: (name, reformulation of TPC-H query, its qid).
REFORMULATIONS = {
    "q6-reordered": (
        6,
        "select sum(l_extendedprice * l_discount) as rev from lineitem "
        "where l_quantity < 24 and l_discount between 0.06 - 0.01 and 0.06 + 0.01 "
        "and l_shipdate < date '1994-01-01' + interval '1' year "
        "and date '1994-01-01' <= l_shipdate",
    ),
    "q4-aliased": (
        4,
        "select o.o_orderpriority as o_orderpriority, count(*) as order_count from orders o "
        "where exists (select * from lineitem l where l.l_orderkey = o.o_orderkey "
        "and l.l_receiptdate > l.l_commitdate) "
        "and o.o_orderdate < date '1993-07-01' + interval '3' month "
        "and o.o_orderdate >= date '1993-07-01' "
        "group by o.o_orderpriority order by o_orderpriority",
    ),
}


def _file_names_only(node: PlanNode) -> PlanNode:
    if node.op == "LogicalRelation" and node.relation:
        files = sorted(Path(f[0]).name for f in node.relation["files"])
        node = node.with_(relation={"format": node.relation["format"], "files": files})
    return relation_identity(node)


def _subquery_inputs_named(node: PlanNode) -> PlanNode:
    """Relations read in subqueries carry their files' identity (paths, times): keep only
    that they have one."""
    text = json.dumps(node.args)
    if '"relation": {"key"' not in text:
        return node
    text = re.sub(r'"relation": \{"key": "\w+", "version": "\w+"\}', '"relation": "files"', text)
    return node.with_(args=json.loads(text))


GOLDEN_RULES = (_subquery_inputs_named,) + tuple(
    _file_names_only if r is relation_identity else r for r in RULES
)


def _fingerprints(bridge: CatalystBridge, sql: str) -> list[str]:
    tree = canonicalize(bridge.capture(bridge.spark.sql(sql)).tree, GOLDEN_RULES)
    return [n.fingerprint for n in fingerprint_tree(tree).walk()]


#: Set to 1 to rewrite the fixture from this run (the comparisons are then skipped).
UPDATE_ENV = "CRISS_UPDATE_GOLDEN"
#: Every key the fixture must hold.
GOLDEN_KEYS = {f"q{q}" for q in queries.QUERY_IDS} | set(REFORMULATIONS)


def load_golden(path: Path = FIXTURE) -> dict[str, list[str]]:
    """The committed fingerprints; missing or incomplete is a failure, never regenerated."""
    if not path.is_file():
        pytest.fail(
            f"golden fixture {path} is missing: restore it from git, or regenerate it on purpose "
            f"with {UPDATE_ENV}=1 and review the diff"
        )
    golden = json.loads(path.read_text())
    missing = GOLDEN_KEYS - set(golden)
    if missing:
        pytest.fail(
            f"golden fixture {path} lacks {sorted(missing)}; regenerate with {UPDATE_ENV}=1"
        )
    return golden


def test_the_golden_fixture_is_committed_and_complete():
    golden = load_golden()
    assert all(len(fps) >= 3 and all(len(fp) >= 16 for fp in fps) for fps in golden.values())


def test_a_missing_fixture_fails_instead_of_being_written(tmp_path, monkeypatch):
    monkeypatch.delenv(UPDATE_ENV, raising=False)
    with pytest.raises(pytest.fail.Exception, match="is missing"):
        load_golden(tmp_path / "absent.json")
    assert not (tmp_path / "absent.json").exists()


@pytest.fixture(scope="module")
def computed(tpch):
    bridge = CatalystBridge(tpch)
    out = {
        f"q{q}": _fingerprints(bridge, queries.statement(q, sf=0.01).sql) for q in queries.QUERY_IDS
    }
    out.update({name: _fingerprints(bridge, sql) for name, (_, sql) in REFORMULATIONS.items()})
    if os.environ.get(UPDATE_ENV) == "1":
        FIXTURE.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"{UPDATE_ENV}=1: rewrote {FIXTURE}; review the diff and run again without it")
    return out


@pytest.mark.spark
@pytest.mark.parametrize("qid", queries.QUERY_IDS)
def test_tpch_fingerprints_match_the_golden_fixture(computed, qid):
    golden = load_golden()
    assert computed[f"q{qid}"] == golden[f"q{qid}"]


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(REFORMULATIONS))
def test_reformulation_has_the_original_result_fingerprint(computed, name):
    qid = REFORMULATIONS[name][0]
    golden = load_golden()
    assert computed[name] == golden[name]
    # below the final Sort/Limit wrappers, the reformulation is the same computation
    assert set(computed[name]) & set(golden[f"q{qid}"]), name
    assert computed[name][-1] == golden[f"q{qid}"][-1]
