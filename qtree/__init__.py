"""Canonical operator trees, fingerprints, the QTree, and matching/rewrite rules.

Nothing in here knows about Spark objects: the bridge hands over plain Python trees.
"""

from qtree.canonical import canonicalize
from qtree.fingerprint import fingerprint_tree
from qtree.plan import PlanNode
from qtree.tree import QTree

__all__ = ["PlanNode", "QTree", "canonicalize", "fingerprint_tree"]
