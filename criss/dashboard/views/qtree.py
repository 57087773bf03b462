"""``/qtree``: the operator tree, coloured by cache state, collapsible and searchable.

The QTree is a DAG (queries share subtrees). It is drawn as a nested list from the
operators no other operator uses (query roots, most recent first); a subtree shown once
is shown again only as a link to its first occurrence, so the page grows with the number
of operators and edges, not with the number of paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.inspect import load_qtree

if TYPE_CHECKING:
    from werkzeug.datastructures import MultiDict

    from criss.dashboard import Settings

#: Levels shown expanded when the page opens (``?depth=N`` changes it).
DEFAULT_DEPTH = 4


def data(settings: Settings, args: MultiDict) -> dict[str, Any]:
    return load_qtree(settings.home, query=args.get("q") or None)


def extra(data: dict[str, Any], args: MultiDict) -> dict[str, Any]:
    depth = args.get("depth", DEFAULT_DEPTH, type=int)
    return {"forest": forest(data["nodes"], data["edges"]), "open_depth": depth}


def forest(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nested ``{"node", "children", "repeat", "cached_below"}`` items, roots first."""
    by_fp = {n["fingerprint"]: n for n in nodes}
    children: dict[str, list[tuple[int, str]]] = {}
    has_parent: set[str] = set()
    for edge in edges:
        if edge["parent"] in by_fp and edge["child"] in by_fp:
            children.setdefault(edge["parent"], []).append((edge["position"], edge["child"]))
            has_parent.add(edge["child"])
    shown: set[str] = set()

    def build(fp: str) -> dict[str, Any]:
        if fp in shown:
            return {"node": by_fp[fp], "children": [], "repeat": True, "cached_below": 0}
        shown.add(fp)
        kids = [build(child) for _, child in sorted(children.get(fp, []))]
        below = sum(k["cached_below"] + (not k["repeat"] and _cached(k["node"])) for k in kids)
        return {"node": by_fp[fp], "children": kids, "repeat": False, "cached_below": below}

    roots = [n["fingerprint"] for n in nodes if n["fingerprint"] not in has_parent]
    items = [build(fp) for fp in roots]
    # anything left is only reachable through a cycle, which a Merkle DAG cannot have
    items += [build(n["fingerprint"]) for n in nodes if n["fingerprint"] not in shown]
    return items


def _cached(node: dict[str, Any]) -> bool:
    return node["state"] not in ("seen",)
