"""The one place where Criss talks to Spark's JVM (Catalyst) through py4j.

Everything else in Criss works on plain Python values handed out from here.
Spark-version differences are absorbed in this module only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.errors import BridgeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PHASES = ("analyzed", "optimized")


def _plan(df: DataFrame, phase: str) -> Any:
    qe = df._jdf.queryExecution()
    if phase == "analyzed":
        return qe.analyzed()
    if phase == "optimized":
        return qe.optimizedPlan()
    raise BridgeError(f"unknown plan phase {phase!r}; use one of {PHASES}")


def subtree_semantic_hashes(df: DataFrame, phase: str = "analyzed") -> list[int]:
    """Catalyst's semantic hash of every operator subtree of ``df``'s plan, in pre-order.

    Equal hashes mean "same result" inside one JVM only: never persist them.
    """
    hashes: list[int] = []
    stack = [_plan(df, phase)]
    while stack:
        node = stack.pop()
        hashes.append(int(node.semanticHash()))
        children = node.children()
        stack.extend(children.apply(i) for i in reversed(range(children.size())))
    return hashes


def plan_overlap(original: DataFrame, variant: DataFrame, phase: str = "analyzed") -> float:
    """Share of ``variant``'s operators whose whole subtree also occurs in ``original``'s plan."""
    seen = set(subtree_semantic_hashes(original, phase))
    mine = subtree_semantic_hashes(variant, phase)
    return sum(h in seen for h in mine) / len(mine)


# --- capture ------------------------------------------------------------------------------------

def _seq(jvm: Any, items: list[Any]) -> Any:
    return jvm.org.apache.spark.api.python.PythonUtils.toSeq(items)


def _children(node: Any) -> list[Any]:
    kids = node.children()
    return [kids.apply(i) for i in range(kids.size())]


class CapturedPlan:
    """An optimized logical plan held in the JVM, plus its plain-Python twin for ``qtree``."""

    def __init__(self, spark: Any, df: DataFrame) -> None:
        import json

        from qtree.plan import tree_from_catalyst_json

        self.spark = spark
        self.jvm = spark._jvm
        try:
            self.root = df._jdf.queryExecution().optimizedPlan()
            raw = json.loads(self.root.canonicalized().toJSON())
        except Exception as exc:  # py4j errors carry the JVM exception text
            raise BridgeError(f"cannot capture the optimized plan: {exc}") from exc
        tree = tree_from_catalyst_json(raw)
        self.tree = self._annotate(tree, self.root)

    def _annotate(self, node: Any, jnode: Any) -> Any:
        """Add what canonical JSON lacks: determinism and the identity of file relations."""
        jkids = _children(jnode)
        if len(jkids) != len(node.children):
            raise BridgeError(f"plan JSON and JVM plan disagree at {node.op} {node.path}")
        children = tuple(self._annotate(c, j) for c, j in zip(node.children, jkids))
        relation = file_relation_identity(jnode) if node.op == "LogicalRelation" else None
        label = str(jnode.simpleString(120))
        return node.with_(children=children, deterministic=bool(jnode.deterministic()),
                          relation=relation, extra={"label": label})

    def node_at(self, path: tuple[int, ...]) -> Any:
        node = self.root
        for index in path:
            node = node.children().apply(index)
        return node

    def schema_json_at(self, path: tuple[int, ...]) -> str:
        return str(self.node_at(path).schema().json())

    def describe_at(self, path: tuple[int, ...]) -> str:
        return str(self.node_at(path).simpleString(200))


def file_relation_identity(jnode: Any) -> dict[str, Any] | None:
    """Format, options and a fresh (path, size, mtime) listing of a file-based relation."""
    import hashlib
    import json

    relation = jnode.relation()
    if relation.getClass().getSimpleName() != "HadoopFsRelation":
        return None
    location = relation.location()
    location.refresh()  # a temp view keeps a stale listing after files change
    statuses = location.allFiles()
    files = sorted(
        (str(s.getPath().toString()), int(s.getLen()), int(s.getModificationTime()))
        for s in (statuses.apply(i) for i in range(statuses.size()))
    )
    roots = location.rootPaths()
    root_paths = sorted(str(roots.apply(i).toString()) for i in range(roots.size()))
    fmt = str(relation.fileFormat().toString())
    options = str(relation.options().toString())
    key = hashlib.sha256(json.dumps([fmt, root_paths]).encode()).hexdigest()[:24]
    version = hashlib.sha256(json.dumps([options, files]).encode()).hexdigest()[:24]
    return {"format": fmt, "options": options, "roots": root_paths, "files": files,
            "key": key, "version": version}


# --- rewrite ------------------------------------------------------------------------------------

def cached_read_plan(spark: Any, original: Any, files: list[str], schema_json: str) -> Any:
    """A plan reading cached files that outputs exactly ``original``'s attributes (same exprIds).

    Files hold positional columns ``c0..cN``; a Project of Aliases restores each
    original attribute's name and exprId so every ancestor still resolves.
    """
    from pyspark.sql.types import StructType

    jvm = spark._jvm
    schema = StructType.fromJson(__import__("json").loads(schema_json))
    if files:
        reader = spark.read.schema(schema).parquet(*files)
    else:
        reader = spark.createDataFrame([], schema)
    read_plan = reader._jdf.queryExecution().analyzed()
    new_attrs = read_plan.output()
    old_attrs = original.output()
    if new_attrs.size() != old_attrs.size():
        raise BridgeError(
            f"cached entry has {new_attrs.size()} columns, operator outputs {old_attrs.size()}")
    empty = _seq(jvm, [])
    none = jvm.scala.Option.empty()
    aliases = []
    for i in range(old_attrs.size()):
        old = old_attrs.apply(i)
        aliases.append(jvm.org.apache.spark.sql.catalyst.expressions.Alias(
            new_attrs.apply(i), old.name(), old.exprId(), old.qualifier(), none, empty))
    return jvm.org.apache.spark.sql.catalyst.plans.logical.Project(_seq(jvm, aliases), read_plan)


def substitute(captured: CapturedPlan, replacements: dict[tuple[int, ...], Any],
               at: tuple[int, ...] = ()) -> Any:
    """The plan under ``at`` with every subtree at a path in ``replacements`` swapped."""
    if at in replacements:
        return replacements[at]
    node = captured.node_at(at)
    if not any(p[:len(at)] == at and len(p) > len(at) for p in replacements):
        return node
    kids = [substitute(captured, replacements, at + (i,)) for i in range(node.children().size())]
    return node.withNewChildren(_seq(captured.jvm, kids))


def dataframe_of(spark: Any, plan: Any) -> DataFrame:
    """Wrap a JVM logical plan as a PySpark DataFrame (Spark re-analyzes and re-optimizes)."""
    from pyspark.sql import DataFrame

    jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, plan)
    return DataFrame(jdf, spark)
