"""Executed physical operators placed on the optimized logical plan: AQE's re-planned links
are followed through every stage they wrap, and an operator this mapping cannot place does
not lend its row count or its time to the operator below it.

The physical nodes here are stand-ins written in Python (the walk reads a node's class
name, metrics, children and logical link, nothing else); the logical plans, the links and
the AQE stages they point at are Spark's own JVM objects from a query that ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import criss
from criss.bridge.metrics import operator_metrics

QUERY = """
    select o.k, count(*) as n from orders_t o join lines_t l on o.k = l.k
    where o.price > 10 group by o.k order by n desc limit 5
"""


@dataclass
class _Seq:
    items: list[Any]

    def size(self) -> int:
        return len(self.items)

    def apply(self, i: int) -> Any:
        return self.items[i]


@dataclass
class _Option:
    value: Any = None

    def isDefined(self) -> bool:  # noqa: N802 (Scala's Option)
        return self.value is not None

    def get(self) -> Any:
        return self.value


@dataclass
class _Shown:
    text: str

    def toString(self) -> str:  # noqa: N802
        return self.text


@dataclass
class _Class:
    name: str

    def getSimpleName(self) -> str:  # noqa: N802
        return self.name


@dataclass
class _Physical:
    """A physical operator as the walk sees it through py4j."""

    name: str
    link: Any = None
    rows: int | None = None
    pipeline_ms: int = 0
    kids: list[_Physical] = field(default_factory=list)

    def getClass(self) -> _Class:  # noqa: N802 (py4j's JVM method names)
        return _Class(self.name)

    def metrics(self) -> Any:
        shown = []
        if self.rows is not None:
            shown.append(f"numOutputRows -> SQLMetric(id: 1, name: None, value: {self.rows})")
        if self.pipeline_ms:
            shown.append(f"pipelineTime -> SQLMetric(id: 2, name: None, value: {self.pipeline_ms})")
        return _Shown("Map(" + ", ".join(shown) + ")")

    def children(self) -> _Seq:
        return _Seq(self.kids)

    def logicalLink(self) -> _Option:  # noqa: N802
        return _Option(self.link)


@pytest.fixture
def joined(spark, tmp_path):
    spark.range(4000).selectExpr("id % 1000 as k", "id as q").write.parquet(str(tmp_path / "l"))
    spark.range(1000).selectExpr("id as k", "id * 2 as price").write.parquet(str(tmp_path / "o"))
    spark.read.parquet(str(tmp_path / "l")).createOrReplaceTempView("lines_t")
    spark.read.parquet(str(tmp_path / "o")).createOrReplaceTempView("orders_t")
    df = spark.sql(QUERY)
    df.collect()
    with criss.session(spark, home=str(tmp_path / "home")) as cs:
        yield cs.bridge, df._jdf.queryExecution()


def _at(plan: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        plan = plan.children().apply(i)
    return plan


def _path_of(plan: Any, name: str, path: tuple[int, ...] = ()) -> tuple[int, ...] | None:
    """The path of the first operator called ``name`` in ``plan``."""
    if plan.nodeName() == name:
        return path
    kids = plan.children()
    for i in range(kids.size()):
        if (found := _path_of(kids.apply(i), name, (*path, i))) is not None:
            return found
    return None


def _stage(bridge: Any, logical: Any, physical: Any) -> Any:
    stages = bridge.jvm.org.apache.spark.sql.execution.adaptive
    return stages.LogicalQueryStage(logical, physical)


def test_a_link_over_a_stage_wrapping_another_stage_is_placed(joined):
    """AQE plans a broadcast over a finished shuffle stage (TPC-H Q18's reused subquery):
    the broadcast stage's logical plan is the shuffle stage's LogicalQueryStage. A join
    linked over it is the optimized plan's join, not an operator of its own."""
    bridge, qe = joined
    optimized, executed = qe.optimizedPlan(), qe.executedPlan()
    path = _path_of(optimized, "Join")
    join = _at(optimized, path)
    left, right = join.children().apply(0), join.children().apply(1)
    nested = _stage(bridge, _stage(bridge, left, executed), executed)
    relinked = bridge.with_children(join, [nested, _stage(bridge, right, executed)])
    scan = _Physical("FileSourceScanExec", link=left, rows=1000)
    plan = _Physical("BroadcastHashJoinExec", link=relinked, rows=3996, kids=[scan])

    found = operator_metrics(bridge, qe, plan)

    assert found[path].rows == 3996
    assert found[(*path, 0)].rows == 1000


def test_an_operator_linked_to_no_known_operator_lends_nothing_to_its_child(joined, spark):
    """Rows and time of a join that cannot be placed stay off the projection below it;
    its time is the aggregate's above it (computing the aggregate computed it), and counts
    for the whole plan (its root) where nothing above it is placed."""
    bridge, qe = joined
    optimized = qe.optimizedPlan()
    join, aggregate = _path_of(optimized, "Join"), _path_of(optimized, "Aggregate")
    foreign = spark.sql("select k from lines_t where q > 5")._jdf.queryExecution().optimizedPlan()

    def unplaced_join() -> _Physical:
        scan = _Physical(
            "FileSourceScanExec", link=_at(optimized, join).children().apply(0), rows=1000
        )
        return _Physical(
            "BroadcastHashJoinExec", link=foreign, rows=9, pipeline_ms=1500, kids=[scan]
        )

    alone = operator_metrics(bridge, qe, unplaced_join())
    placed = _Physical("HashAggregateExec", _at(optimized, aggregate), 12, 200, [unplaced_join()])
    under_aggregate = operator_metrics(bridge, qe, placed)

    for found in (alone, under_aggregate):
        assert found[(*join, 0)].rows == 1000
        assert found[(*join, 0)].task_seconds == 0.0
    assert alone[()].task_seconds == pytest.approx(1.5)
    assert under_aggregate[aggregate].task_seconds == pytest.approx(1.7)
    assert () not in under_aggregate


def test_links_over_stages_restore_each_node_of_the_replanned_layer_once(joined, monkeypatch):
    """AQE re-plans the layer above its finished stages, so every physical operator there
    links to a logical node over LogicalQueryStages. Placing them rebuilds that layer with
    each stage's logical plan in place, once per node: the optimized plan below the stages
    holds none, and a node restored for one link serves the next (rebuilding every subtree
    under every link cost TPC-DS q14a 220,000 JVM calls and 18 s after its action)."""
    bridge, qe = joined
    optimized = qe.optimizedPlan()
    join_path, aggregate_path = _path_of(optimized, "Join"), _path_of(optimized, "Aggregate")
    join = _at(optimized, join_path)
    stages = [_stage(bridge, join.children().apply(i), qe.executedPlan()) for i in (0, 1)]
    relinked = {join_path: bridge.with_children(join, stages)}
    for depth in range(len(join_path) - 1, len(aggregate_path) - 1, -1):
        above = join_path[:depth]
        relinked[above] = bridge.with_children(_at(optimized, above), [relinked[(*above, 0)]])
    scan = _Physical("FileSourceScanExec", link=join.children().apply(0), rows=1000)
    plan = _Physical("BroadcastHashJoinExec", link=relinked[join_path], rows=3996, kids=[scan])
    for depth in range(len(join_path) - 1, len(aggregate_path) - 1, -1):
        path = join_path[:depth]
        plan = _Physical(_at(optimized, path).nodeName() + "Exec", relinked[path], 7, 0, [plan])
    rebuilt = []
    with_children = bridge.with_children

    def counted(node: Any, kids: list[Any]) -> Any:
        rebuilt.append(node)
        return with_children(node, kids)

    monkeypatch.setattr(bridge, "with_children", counted)

    found = operator_metrics(bridge, qe, plan)

    assert found[join_path].rows == 3996
    assert found[(*join_path, 0)].rows == 1000
    assert found[aggregate_path].rows == 7
    assert len(relinked) >= 2
    assert len(rebuilt) == len(relinked)  # the replanned layer, each node once
