"""Canonical operator trees, fingerprints, the QTree, and matching/rewrite rules.

Nothing in here knows about Spark objects: the bridge hands over plain Python trees.
"""

from criss.qtree.canonical import canonicalize
from criss.qtree.fingerprint import fingerprint_tree
from criss.qtree.plan import PlanNode
from criss.qtree.tree import QTree

__all__ = ["PlanNode", "QTree", "canonicalize", "fingerprint_tree"]
