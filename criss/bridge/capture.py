"""Capture: a DataFrame's optimized plan as the plain-Python tree ``qtree`` works on.

Each py4j call costs about 0.1 ms, so a capture asks for whole strings (Catalyst's JSON,
``mkString`` of a file listing) rather than walking JVM objects call by call, and a
repeated plan's tree is remembered (``RememberedTrees``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import stat
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from criss.bridge.lossy import EXPAND, mark_settings, needs_restoring, restore_lossy_fields
from criss.bridge.subqueries import LOGICAL_RELATION, SubqueryRelations, relation_dicts
from criss.errors import BridgeError
from criss.qtree.plan import PlanNode, tree_from_catalyst_json
from criss.recent import RecentItems
from criss.storage.tiers import local_file

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
#: A relation of Spark's columnar cache (a user's ``cache()``, or a result Criss has the
#: user's action compute into Spark's cache).
IN_MEMORY_RELATION = "org.apache.spark.sql.execution.columnar.InMemoryRelation"
#: File relations whose fixed facts a bridge keeps (``KnownRelations``), and the most files
#: one may list to be kept: holding a relation holds its index's listing in the JVM (a
#: temp view's is held anyway; an index pruned to a query's partitions would not be).
REMEMBERED_RELATIONS = 64
REMEMBERED_FILES = 2_000
#: Why an operator whose subquery expressions read files Criss cannot pair is not cached.
UNIDENTIFIED_SUBQUERY_INPUTS = "a subquery's inputs could not be identified"
#: ANSI behaviour of arithmetic and casts, which Catalyst's JSON also writes as null (an
#: enumeration): the session's setting stands in for it.
_EVAL_MODE = re.compile(r'"(evalMode|evalContext)":null')


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


class PlanTree(NamedTuple):
    """The plain-Python tree of a canonicalized plan, as ``RememberedTrees`` gives it."""

    tree: PlanNode
    #: The serial number it is remembered under (None: not remembered).
    serial: int | None
    #: It holds a binary literal Criss did not name (see ``RememberedTrees``).
    unnamed_binary: bool
    #: A file relation may be read inside an expression (a subquery's plan): False only
    #: when the JSON names no more relations than the plan's own leaves and holds no
    #: Expand (whose projections, written as null, are restored from the JVM after the
    #: text is read), so that no walk over every operator's expressions looks for them.
    nested_relations: bool


#: How Catalyst's JSON names a file relation's class, wherever it is.
_RELATION_TEXT = json.dumps(LOGICAL_RELATION)


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
        self,
        canonical: Any,
        binary_names: dict[str, str],
        ansi: bool = False,
        jvm: Any = None,
        settings: str | None = None,
    ) -> PlanTree:
        """The tree of ``canonical`` (see PlanTree); an unnamed binary literal is one not
        in ``binary_names`` (``jvm``: the gateway's view, for restoring what the plan's
        JSON loses; ``settings``: the session's result settings off their defaults,
        ``lossy.settings_of``).

        The tree holds no file listing or determinism: ``CapturedPlan`` adds those fresh on
        every capture. A plan with an unnamed binary literal is never remembered.
        """
        code = int(canonical.hashCode())
        remembered = self._trees.get(code)
        if remembered is not None:
            jplan, found, marked = remembered
            if marked == settings and canonical.equals(jplan):
                self.hits += 1
                return found
        text = canonical.toJSON()
        if '"[B@' in text and binary_names:
            text = _BINARY_VALUE.sub(
                lambda m: '"value":"' + binary_names.get(m[1], m[1]) + '"', text
            )
        text = _EVAL_MODE.sub(rf'"\1":"{"ANSI" if ansi else "LEGACY"}"', text)
        nodes = json.loads(text)
        own_relations = sum(1 for node in nodes if node.get("class") == LOGICAL_RELATION)
        nested = text.count(_RELATION_TEXT) > own_relations or EXPAND in text
        if needs_restoring(text):
            restore_lossy_fields(PlanNodes(canonical).at, nodes, jvm)
        mark_settings(nodes, settings)
        tree = tree_from_catalyst_json(nodes)
        if '"[B@' in text:
            return PlanTree(tree, None, True, nested)
        if IN_MEMORY_RELATION in text:
            # a relation of Spark's cache holds the physical plan that filled it, with its
            # broadcast relations and shuffles: kept here, every executed plan Criss read
            # back would stay in the driver's memory (hundreds of MB after 22 TPC-H
            # queries at SF 1); and a plan over one such relation never recurs
            return PlanTree(tree, None, False, nested)
        found = PlanTree(tree, next(self._serial), False, nested)
        # an unequal plan of the same hash replaces the one kept: ``equals`` decides hits
        self._trees.put(code, (canonical, found, settings))
        return found


def _copied_to_relations(value: Any) -> Any:
    """``value`` with every file relation's JSON object, and each object or list holding
    one, copied (what an identity is written into); the rest shared, not copied: a TPC-DS
    operator's expressions run to thousands of objects, its relations to a few."""
    if isinstance(value, dict):
        if value.get("class") == LOGICAL_RELATION:
            return dict(value)
        copied = {
            k: _copied_to_relations(v)
            for k, v in value.items()
            if k != "originalRoot" and isinstance(v, (dict, list))
        }
        if all(copied[k] is value[k] for k in copied):
            return value
        return {k: copied.get(k, v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_copied_to_relations(v) if isinstance(v, (dict, list)) else v for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _subquery_relations(jnode: Any) -> list[Any]:
    """The LogicalRelations read by ``jnode``'s subquery expressions, in JSON order: each
    subquery plan pre-order, a node's own subqueries right after it."""
    found: list[Any] = []

    def plans_of(node: Any) -> None:
        subqueries = node.subqueries()
        for i in range(subqueries.size()):
            walk(subqueries.apply(i))

    def walk(plan: Any) -> None:
        if plan.subqueriesAll().isEmpty():
            # no subquery inside: its relations are its leaves, which ``collectLeaves``
            # gives pre-order in one call (three calls a node on the walk below)
            leaves = plan.collectLeaves()
            for i in range(leaves.size()):
                leaf = leaves.apply(i)
                if str(leaf.getClass().getName()) == LOGICAL_RELATION:
                    found.append(leaf)
            return
        children = plan.children()
        count = children.size()
        # a relation is a leaf: only leaves are asked their class (two calls a node)
        if count == 0 and str(plan.getClass().getName()) == LOGICAL_RELATION:
            found.append(plan)
        plans_of(plan)
        for i in range(count):
            walk(children.apply(i))

    plans_of(jnode)
    return found


class CapturedPlan:
    """An optimized logical plan held in the JVM, plus its plain-Python twin for ``qtree``."""

    def __init__(self, bridge: CatalystBridge, root: Any, refresh_listings: bool = True) -> None:
        """Capture ``root``, an optimized logical plan (see ``CatalystBridge.capture``);
        file relations are listed afresh unless ``refresh_listings`` is false."""
        self.bridge = bridge
        try:
            self._relations = RelationIdentities(bridge, refresh_listings)
            self.root = root
            self.nodes = PlanNodes(root)
            canonical = self.root.canonicalized()
            #: (path, key, version) of each file relation read inside a subquery expression.
            self.subquery_inputs: list[tuple[tuple[int, ...], str, str]] = []
            found = bridge.plan_tree(canonical)
            self.tree = self._annotate(found, PlanNodes(canonical))
            #: What ``tree`` is a function of (the remembered plan, its files' identities and
            #: determinism), for memoizing work on it; None when not remembered.
            self.memo_key = None if found.serial is None else self._memo_key(found.serial)
        except BridgeError:
            raise
        except Exception as exc:  # any error: py4j's carry the JVM exception text, and a
            # KeyError or TypeError here means Catalyst's JSON changed shape
            raise BridgeError(f"cannot capture the optimized plan: {exc}") from exc

    def refuse(self, reason: str) -> None:
        """Mark every operator uncacheable for ``reason``: the query is neither served from
        nor stored in the cache (its statistics are still recorded)."""

        def refused(node: PlanNode) -> PlanNode:
            return node.with_(
                children=tuple(refused(c) for c in node.children),
                uncacheable=node.uncacheable or reason,
            )

        self.tree = refused(self.tree)
        self.memo_key = None if self.memo_key is None else (*self.memo_key, reason)

    def _memo_key(self, serial: int) -> tuple:
        return (
            serial,
            tuple(
                (n.path, n.relation["key"], n.relation["version"])
                for n in self.tree.leaves()
                if n.relation is not None
            ),
            tuple(n.path for n in self.tree.walk() if not n.deterministic),
            tuple(self.subquery_inputs),
        )

    def _annotate(self, found: PlanTree, canonical: PlanNodes) -> PlanNode:
        """Add what canonical JSON lacks: determinism and the identity of file relations,
        those a subquery expression reads included (``canonical``: the canonicalized JVM
        plan, whose expressions are in the JSON's order).

        A binary literal Criss did not name by content serialises as "[B@<identity hash>":
        the same bytes differ between runs and different bytes may collide, so an operator
        holding one is never cached or matched.
        """
        tree, unnamed_binary = found.tree, found.unnamed_binary
        leaves = self.root.collectLeaves()
        jleaves = [leaves.apply(i) for i in range(leaves.size())]
        if len(jleaves) != sum(1 for _ in tree.leaves()):
            raise BridgeError("plan JSON and JVM plan disagree on their leaves")
        identities = {
            leaf.path: self._relations.identity(jleaf)
            for leaf, jleaf in zip(tree.leaves(), jleaves, strict=True)
            if leaf.op == "LogicalRelation"
        }
        # QueryPlan.deterministic covers the children too: one call settles a deterministic plan.
        nondeterministic = set() if self.root.deterministic() else self._nondeterministic_paths()

        # plan-level relations have no "class" in their args: these are in subqueries
        nested = found.nested_relations and any(
            True for _ in relation_dicts([n.args for n in tree.walk()])
        )

        def visit(node: PlanNode) -> PlanNode:
            children = tuple(visit(c) for c in node.children)
            binary = unnamed_binary and '"[B@' in json.dumps(node.args)
            if nested and node.children and any(relation_dicts(node.args)):
                node = self._identify_subquery_inputs(node, canonical.at(node.path))
            return node.with_(
                children=children,
                deterministic=node.path not in nondeterministic,
                relation=identities.get(node.path),
                uncacheable=(
                    "binary literal without a stable identity" if binary else node.uncacheable
                ),
            )

        return visit(tree)

    def _identify_subquery_inputs(self, node: PlanNode, jnode: Any) -> PlanNode:
        """``node`` with each file relation its subquery expressions read identified (key
        and version of its files) in its args, so that a change of those files changes its
        fingerprint; one that is not a file relation stays null (never cached). A second
        copy of a subquery's plan in the JSON (``criss.bridge.subqueries``) takes the
        identities of the first."""
        # the tree may be a remembered one: never mutate it
        args = _copied_to_relations(node.args)
        found = SubqueryRelations(args)
        relations = _subquery_relations(jnode)
        copies = found.copies()
        if len(found.holders) != len(relations) or copies is None:
            return node.with_(uncacheable=UNIDENTIFIED_SUBQUERY_INPUTS)
        for holder, relation in zip(found.holders, relations, strict=True):
            identity = self._relations.identity(relation)
            if identity is not None:
                holder["relation"] = {"key": identity["key"], "version": identity["version"]}
                self.subquery_inputs.append((node.path, identity["key"], identity["version"]))
        if copies and found.ambiguous():
            return node.with_(uncacheable=UNIDENTIFIED_SUBQUERY_INPUTS)
        for copy, first in copies:
            copy["relation"] = first["relation"]
        return node.with_(args=args)

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


class RelationIdentities:
    """File relation identities within one capture: a relation read several times (a
    table in several branches of a TPC-DS query) is listed once.

    A relation is told apart by the JVM object itself (``KnownRelations``): Spark's file
    indexes compare equal by root paths, and another index of the same paths holds its own
    listing, which must be refreshed on its own.
    """

    def __init__(self, bridge: CatalystBridge, refresh: bool) -> None:
        self._refresh = refresh
        self._known: KnownRelations = bridge.known_relations
        #: id of a relation's facts → (those facts, kept alive; its identity).
        self._identities: dict[int, tuple[RelationFacts | None, dict[str, Any] | None]] = {}

    def identity(self, jnode: Any) -> dict[str, Any] | None:
        """``file_relation_identity`` of ``jnode``, a LogicalRelation."""
        relation = jnode.relation()
        facts = self._known.facts(relation)
        found = self._identities.get(id(facts))
        if found is None:
            if facts is None:
                found = (None, None)
            else:
                look = self._refresh and facts.key not in self._known.large
                found = (facts, _listed(facts, self._refresh, look))
                if len(found[1]["files"]) > REMEMBERED_FILES:
                    self._known.forget(relation, facts.key)
            self._identities[id(facts)] = found
        return found[1]


@dataclass(eq=False)
class RelationFacts:
    """What never changes for one file relation object: its file index (whose listing
    does change) and what its identity's key is made of; and what its files looked like
    on disk when the index was last refreshed, with the identity that refresh gave."""

    location: Any
    format: str
    options: str
    roots: list[str]
    key: str
    #: The names of the relation's output columns, in order.
    fields: tuple[str, ...] = ()
    refreshed: tuple[tuple, dict[str, Any]] | None = None


class KnownRelations:
    """The fixed facts of the relations captured lately, fetched once per JVM relation
    object (a ``HadoopFsRelation`` is immutable: its format, options and its index's
    roots), so that a capture asks the JVM for little more than each index's fresh
    listing: two calls per relation whose local files are unchanged (``_listed``), five
    otherwise, against about seventeen, at ~0.1 ms each.

    Keyed by the JVM object itself, through an ``IdentityHashMap`` holding the last
    ``limit`` relations (beyond, all are forgotten at once; one listing more than
    ``REMEMBERED_FILES`` files is not kept); shared by the session's planning and its
    listener's thread.
    """

    def __init__(self, jvm: Any, limit: int = REMEMBERED_RELATIONS) -> None:
        self._jvm = jvm
        self._limit = limit
        self._lock = threading.Lock()
        self._index: Any = None
        self._facts: list[RelationFacts | None] = []
        #: Keys (roots) of relations with more than ``REMEMBERED_FILES`` files.
        self.large: set[str] = set()

    def facts(self, relation: Any) -> RelationFacts | None:
        """``relation``'s facts; None when it is not a file relation."""
        with self._lock:
            if self._index is None:
                self._index = self._jvm.java.util.IdentityHashMap()
            known = self._index.get(relation)
            if known is not None:
                return self._facts[int(known)]
            if len(self._facts) >= self._limit:
                self._index.clear()
                self._facts = []
            facts = _relation_facts(relation)
            self._index.put(relation, len(self._facts))
            self._facts.append(facts)
            return facts

    def forget(self, relation: Any, key: str) -> None:
        """Let go of ``relation`` (and its index's listing), whose files under roots
        ``key`` are too many to keep: a later relation over them is not looked at from
        Python either (it would be forgotten again, the look wasted)."""
        with self._lock:
            if len(self.large) >= self._limit:
                self.large.clear()
            self.large.add(key)
            if self._index is None:
                return
            known = self._index.remove(relation)
            if known is not None:
                self._facts[int(known)] = None

    def __len__(self) -> int:
        return 0 if self._index is None else int(self._index.size())


def file_relation_identity(jnode: Any, refresh: bool = True) -> dict[str, Any] | None:
    """Format, options and a (path, size, mtime) listing of a file-based relation, fresh
    unless ``refresh`` is false."""
    facts = _relation_facts(jnode.relation())
    return None if facts is None else _listed(facts, refresh)


def _relation_facts(relation: Any) -> RelationFacts | None:
    if relation.getClass().getSimpleName() != "HadoopFsRelation":
        return None
    location = relation.location()
    roots = sorted(str(location.rootPaths().mkString("\n")).split("\n"))
    fmt = str(relation.fileFormat().toString())
    key = hashlib.sha256(json.dumps([fmt, roots]).encode()).hexdigest()[:24]
    # LogicalRelation's output is its relation's schema, field by field
    fields = tuple(f["name"] for f in json.loads(str(relation.schema().json()))["fields"])
    return RelationFacts(location, fmt, str(relation.options().toString()), roots, key, fields)


def _listed(facts: RelationFacts, refresh: bool, look: bool = True) -> dict[str, Any]:
    """The identity of ``facts``' relation from its index's listing, refreshed first
    unless ``refresh`` is false; ``look``: whether to look at local files first.

    Refreshing an index asks the file system through the JVM (~1.5 ms a relation). Local
    files are looked at from here first (``local_snapshot``, every entry under the roots
    with size and times, taken before the refresh): when nothing under them has changed
    since this index's last refresh, that refresh's listing still stands.
    """
    location = facts.location
    snapshot = local_snapshot(facts.roots) if refresh and look else None
    if snapshot is not None and facts.refreshed is not None and facts.refreshed[0] == snapshot:
        return facts.refreshed[1]
    if refresh:
        location.refresh()  # a temp view keeps a stale listing after files change
    statuses = location.allFiles()
    text = str(statuses.mkString("\n"))
    files = sorted((p, int(n), int(t)) for p, n, t in _FILE_STATUS.findall(text))
    if len(files) != (text.count("\n") + 1 if text else 0):
        # an unexpected FileStatus format (or a line break in a path): file by file
        files = sorted(
            (str(s.getPath().toString()), int(s.getLen()), int(s.getModificationTime()))
            for s in (statuses.apply(i) for i in range(statuses.size()))
        )
    version = hashlib.sha256(json.dumps([facts.options, files]).encode()).hexdigest()[:24]
    identity = {
        "format": facts.format,
        "options": facts.options,
        "roots": facts.roots,
        "files": files,
        "key": facts.key,
        "version": version,
        "bytes": sum(size for _, size, _ in files),
        # not part of the identity (criss.qtree.canonical.relation_identity leaves it out)
        "fields": list(facts.fields),
    }
    if snapshot is not None:
        facts.refreshed = (snapshot, identity)
    return identity


def local_snapshot(roots: list[str]) -> tuple | None:
    """Every entry under ``roots`` (path, type, size, modification and change times in
    ns), when each root is a local (``file:``) directory or file; None otherwise, or when
    a symbolic link or an error is met: then only a listing through Spark can tell.

    Any write, rename or removal under a root changes some entry's times or the set of
    entries; nothing is filtered (Spark skips some names), so this sees at least every
    change Spark's listing would.
    """
    entries: list[tuple[str, int, int, int, int]] = []
    try:
        for root in roots:
            if not root.startswith("file:"):
                return None
            path = local_file(root)
            if path is None or not _snapshot_entry(path, entries):
                return None
    except OSError:
        return None
    return tuple(entries)


def _snapshot_entry(path: str, entries: list[tuple[str, int, int, int, int]]) -> bool:
    """Add ``path`` and, for a directory, everything under it, to ``entries``; False at a
    symbolic link (its target's changes would not show here)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return False
    entries.append((path, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
    if not stat.S_ISDIR(info.st_mode):
        return True
    with os.scandir(path) as listing:
        names = sorted(entry.path for entry in listing)
    return all(_snapshot_entry(name, entries) for name in names)
