"""The house plan of STYLE.md, checked on the source text (no Spark, well under a second).

- py4j and Catalyst are reached through ``criss/bridge/`` only;
- modules and functions stay small enough to read top-down;
- ``qtree``, ``storage`` and ``policies`` are imported as ``criss.qtree`` etc. (their install
  names), and depend on nothing of Criss beyond each other and a few shared helpers.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Folders holding Criss's code and the scripts built on it.
FOLDERS = ("criss", "qtree", "storage", "policies", "workload", "experiments")
#: The only folder allowed to speak py4j.
BRIDGE = REPO / "criss" / "bridge"
#: py4j handles (PySpark's private JVM attributes) and Catalyst calls that only the bridge
#: makes. Word-bounded, so ``is_jvm_error`` or ``fast_gateway`` are not flagged.
PY4J = re.compile(
    r"\b(_jdf|_jvm|_jsparkSession|_jsc|_gateway)\b|withNewChildren|queryExecution|py4j"
)
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
#: Modules allowed to be long: TPC-H query text and its reformulations, not logic.
LONG_MODULES = {"workload/tpch/queries.py"}
#: The layers that must not depend on the engine, the bridge or the public API.
LAYERS = ("qtree", "storage", "policies")
#: What the layers may import from ``criss``: each other, the error root, and helpers that
#: use nothing but the standard library and third-party packages (no Spark, no engine).
LAYER_IMPORTS = (
    "criss.qtree",
    "criss.storage",
    "criss.policies",
    "criss.errors",  # one error root for everything Criss raises
    "criss.sqlite",  # opening a shared SQLite catalog (QTree and partition catalogs)
    "criss.recent",  # a bounded, thread-safe LRU map
)


def _sources(folders: tuple[str, ...] = FOLDERS) -> list[Path]:
    found = [
        path
        for folder in folders
        for path in sorted((REPO / folder).rglob("*.py"))
        if "__pycache__" not in path.parts
    ]
    assert found, f"no Python files under {folders}: is REPO {REPO} right?"
    return found


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


#: An import statement's module(s): ``import a.b, c`` or ``from a.b import c`` (any indent).
_IMPORT = re.compile(r"^\s*(?:import\s+([\w.]+(?:\s*,\s*[\w.]+)*)|from\s+([\w.]+)\s+import)\b")


@cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _imports(path: Path, flagged) -> list[tuple[int, str]]:
    """(line, module) of the absolute imports (inside functions too) that ``flagged``
    accepts. Lines are scanned first; a file with a candidate is confirmed by parsing it,
    so an import inside a string (a subprocess's script) is not counted."""
    candidates = []
    for number, line in enumerate(_text(path).splitlines(), 1):
        match = _IMPORT.match(line)
        if match is not None:
            modules = match[1].split(",") if match[1] else [match[2]]
            candidates.extend((number, m.strip()) for m in modules)
    if not any(flagged(module) for _, module in candidates):
        return []
    found = []
    for node in ast.walk(ast.parse(_text(path), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return sorted(item for item in found if flagged(item[1]))


def _functions(node: ast.AST):
    """Every function definition under ``node``, walking statements only (fast)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield child
        if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
            yield from _functions(child)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_only_the_bridge_speaks_py4j():
    found = [
        f"{_name(path)}:{number}: {line.strip()}"
        for path in _sources()
        if BRIDGE not in path.parents
        for number, line in enumerate(_text(path).splitlines(), 1)
        if PY4J.search(line)
    ]
    assert not found, "py4j access outside criss/bridge/ (add a bridge function):\n" + "\n".join(
        found
    )


def test_modules_are_short():
    found = []
    for path in _sources():
        lines = _text(path).count("\n")
        if lines > MAX_MODULE_LINES and _name(path) not in LONG_MODULES:
            found.append(f"{_name(path)}: {lines} lines")
    assert not found, f"modules over {MAX_MODULE_LINES} lines (split them):\n" + "\n".join(found)


def test_functions_are_short():
    found = []
    for path in _sources():
        for node in _functions(ast.parse(_text(path), filename=str(path))):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append(f"{_name(path)}:{node.lineno} {node.name}: {lines} lines")
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(found)


def test_layers_are_imported_by_their_install_names():
    found = [
        f"{_name(path)}:{line}: import {module}"
        for path in _sources((*FOLDERS, "tests"))
        for line, module in _imports(path, lambda m: _within(m, LAYERS))
    ]
    assert not found, "import criss.qtree, criss.storage, criss.policies instead:\n" + "\n".join(
        found
    )


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_depend_only_on_layers_and_shared_helpers(layer):
    found = [
        f"{_name(path)}:{line}: import {module}"
        for path in _sources((layer,))
        for line, module in _imports(
            path, lambda m: _within(m, ("criss",)) and not _within(m, LAYER_IMPORTS)
        )
    ]
    assert not found, f"{layer}/ reaches into Criss beyond {LAYER_IMPORTS}:\n" + "\n".join(found)


def test_the_py4j_pattern_catches_what_it_should():
    assert PY4J.search("df._jdf.queryExecution()")
    assert PY4J.search("spark._jvm.org")
    assert PY4J.search("# a py4j walk each")
    assert PY4J.search("node.withNewChildren(seq)")
    assert not PY4J.search("from criss.bridge import is_jvm_error")
    assert not PY4J.search("self._fast_gateway()")
