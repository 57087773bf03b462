"""Capture: a DataFrame's optimized plan as the plain-Python tree ``qtree`` works on.

Each py4j call costs about 0.1 ms, so a capture asks for whole strings (Catalyst's JSON,
``mkString`` of a file listing) rather than walking JVM objects call by call, and a
repeated plan's tree is remembered (``RememberedTrees``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from typing import TYPE_CHECKING, Any

from criss.errors import BridgeError
from criss.qtree.plan import PlanNode, tree_from_catalyst_json
from criss.recent import RecentItems

if TYPE_CHECKING:
    from criss.bridge.catalyst import CatalystBridge

#: Canonicalized plans whose plain-Python trees are kept for repeated captures.
REMEMBERED_PLANS = 128
#: Hadoop's FileStatus.toString:
#: "...{path=P; isDirectory=false; length=N; ... modification_time=T; ...}"
_FILE_STATUS = re.compile(
    r"\{path=(.*?); isDirectory=false; length=(\d+);.*?modification_time=(\d+);"
)
#: A byte array's value in Catalyst JSON: "[B@" + identity hash.
_BINARY_VALUE = re.compile(r'"value":"(\[B@[0-9a-f]+)"')


class PlanNodes:
    """The JVM nodes of one (immutable) plan by path, each fetched once: a walk starts from
    the deepest node already fetched on the way (two py4j calls per step otherwise)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self._nodes: dict[tuple[int, ...], Any] = {(): root}

    def at(self, path: tuple[int, ...]) -> Any:
        depth = len(path)
        while path[:depth] not in self._nodes:
            depth -= 1
        node = self._nodes[path[:depth]]
        for end in range(depth + 1, len(path) + 1):
            node = node.children().apply(path[end - 1])
            self._nodes[path[:end]] = node
        return node

    def remember(self, path: tuple[int, ...], node: Any) -> None:
        self._nodes[path] = node


class RememberedTrees:
    """Plain-Python trees of recently captured canonicalized plans, by case-class equality.

    Catalyst's ``toJSON`` is the dearest step of a capture; a repeated query's
    canonicalized plan equals (case-class equality, what ``sameResult`` uses) the one
    captured last time, so its tree is reused.
    """

    def __init__(self, limit: int = REMEMBERED_PLANS) -> None:
        #: canonicalized plan's hashCode → (that JVM plan, its plain-Python tree, serial).
        self._trees = RecentItems(limit)
        self._serial = itertools.count(1)
        #: Captures answered from a remembered tree.
        self.hits = 0

    def tree(
        self, canonical: Any, binary_names: dict[str, str]
    ) -> tuple[PlanNode, int | None, bool]:
        """The tree of ``canonical``, the serial number it is remembered under (None if it
        is not), and whether it holds a binary literal not named in ``binary_names``.

        The tree holds no file listing or determinism: ``CapturedPlan`` adds those fresh on
        every capture. A plan with an unnamed binary literal is never remembered.
        """
        code = int(canonical.hashCode())
        remembered = self._trees.get(code)
        if remembered is not None:
            jplan, tree, serial = remembered
            if canonical.equals(jplan):
                self.hits += 1
                return tree, serial, False
        text = canonical.toJSON()
        if '"[B@' in text and binary_names:
            text = _BINARY_VALUE.sub(
                lambda m: '"value":"' + binary_names.get(m[1], m[1]) + '"', text
            )
        tree = tree_from_catalyst_json(json.loads(text))
        if '"[B@' in text:
            return tree, None, True
        serial = next(self._serial)
        # an unequal plan of the same hash replaces the one kept: ``equals`` decides hits
        self._trees.put(code, (canonical, tree, serial))
        return tree, serial, False


class CapturedPlan:
    """An optimized logical plan held in the JVM, plus its plain-Python twin for ``qtree``."""

    def __init__(self, bridge: CatalystBridge, root: Any, refresh_listings: bool = True) -> None:
        """Capture ``root``, an optimized logical plan (see ``CatalystBridge.capture``);
        file relations are listed afresh unless ``refresh_listings`` is false."""
        self.bridge = bridge
        self._refresh = refresh_listings
        try:
            self.root = root
            self.nodes = PlanNodes(root)
            tree, serial, unnamed_binary = bridge.plan_tree(self.root.canonicalized())
            self.tree = self._annotate(tree, unnamed_binary=unnamed_binary)
            #: What ``tree`` is a function of (the remembered plan, its files' identities and
            #: determinism), for memoizing work on it; None when not remembered.
            self.memo_key = None if serial is None else self._memo_key(serial)
        except BridgeError:
            raise
        except Exception as exc:  # any error: py4j's carry the JVM exception text, and a
            # KeyError or TypeError here means Catalyst's JSON changed shape
            raise BridgeError(f"cannot capture the optimized plan: {exc}") from exc

    def _memo_key(self, serial: int) -> tuple:
        return (
            serial,
            tuple(
                (n.path, n.relation["key"], n.relation["version"])
                for n in self.tree.leaves()
                if n.relation is not None
            ),
            tuple(n.path for n in self.tree.walk() if not n.deterministic),
        )

    def _annotate(self, tree: PlanNode, unnamed_binary: bool = False) -> PlanNode:
        """Add what canonical JSON lacks: determinism and the identity of file relations.

        A binary literal Criss did not name by content serialises as "[B@<identity hash>":
        the same bytes differ between runs and different bytes may collide, so an operator
        holding one is never cached or matched.
        """
        leaves = self.root.collectLeaves()
        jleaves = [leaves.apply(i) for i in range(leaves.size())]
        if len(jleaves) != sum(1 for _ in tree.leaves()):
            raise BridgeError("plan JSON and JVM plan disagree on their leaves")
        identities = {
            leaf.path: file_relation_identity(jleaf, self._refresh)
            for leaf, jleaf in zip(tree.leaves(), jleaves, strict=True)
            if leaf.op == "LogicalRelation"
        }
        # QueryPlan.deterministic covers the children too: one call settles a deterministic plan.
        nondeterministic = set() if self.root.deterministic() else self._nondeterministic_paths()

        def visit(node: PlanNode) -> PlanNode:
            children = tuple(visit(c) for c in node.children)
            binary = unnamed_binary and '"[B@' in json.dumps(node.args)
            return node.with_(
                children=children,
                deterministic=node.path not in nondeterministic,
                relation=identities.get(node.path),
                uncacheable=(
                    "binary literal without a stable identity" if binary else node.uncacheable
                ),
            )

        return visit(tree)

    def _nondeterministic_paths(self) -> set[tuple[int, ...]]:
        found: set[tuple[int, ...]] = set()
        stack = [((), self.root)]
        while stack:
            path, node = stack.pop()
            if not node.deterministic():
                found.add(path)
                kids = node.children()
                stack.extend((path + (i,), kids.apply(i)) for i in range(kids.size()))
        return found

    def node_at(self, path: tuple[int, ...]) -> Any:
        return self.nodes.at(path)

    def label_at(self, path: tuple[int, ...], width: int = 120) -> str:
        return str(self.node_at(path).simpleString(width))


def file_relation_identity(jnode: Any, refresh: bool = True) -> dict[str, Any] | None:
    """Format, options and a (path, size, mtime) listing of a file-based relation, fresh
    unless ``refresh`` is false."""
    relation = jnode.relation()
    if relation.getClass().getSimpleName() != "HadoopFsRelation":
        return None
    location = relation.location()
    if refresh:
        location.refresh()  # a temp view keeps a stale listing after files change
    statuses = location.allFiles()
    files = sorted((p, int(n), int(t)) for p, n, t in _FILE_STATUS.findall(statuses.mkString("\n")))
    if len(files) != statuses.size():  # an unexpected FileStatus format: ask file by file
        files = sorted(
            (str(s.getPath().toString()), int(s.getLen()), int(s.getModificationTime()))
            for s in (statuses.apply(i) for i in range(statuses.size()))
        )
    root_paths = sorted(str(location.rootPaths().mkString("\n")).split("\n"))
    fmt = str(relation.fileFormat().toString())
    options = str(relation.options().toString())
    key = hashlib.sha256(json.dumps([fmt, root_paths]).encode()).hexdigest()[:24]
    version = hashlib.sha256(json.dumps([options, files]).encode()).hexdigest()[:24]
    return {
        "format": fmt,
        "options": options,
        "roots": root_paths,
        "files": files,
        "key": key,
        "version": version,
        "bytes": sum(size for _, size, _ in files),
    }
