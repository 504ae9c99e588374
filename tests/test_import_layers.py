"""The package's parts import each other one way: no two parts import each other, directly or around a loop.

A part is a top-level module or folder of ``groundeval`` (``records``, ``tasks``, ``models``, ...).
Every import counts, a lazy one inside a function too: run records must not reach up into the tasks
that produce them, nor the model layer into the plugin. The package's own ``__init__`` (the public
API, resolved lazily) stands above every part and is left out.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from itertools import pairwise

from tests._paths import REPO

SRC = REPO / "src" / "groundeval"


def _part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "groundeval" and len(parts) > 1 else None


def _imports() -> dict[str, dict[str, set[str]]]:
    """part -> imported part -> the files (relative paths) whose imports draw that arrow."""
    graph: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts == ("__init__.py",):
            continue
        here = rel.parts[0].removesuffix(".py")
        package = ["groundeval", *rel.parts[:-1]]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolved against this file's package
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                names = [base] if base != "groundeval" else [f"groundeval.{a.name}" for a in node.names]
            for name in names:
                there = _part(name)
                if there is not None and there != here:
                    graph[here][there].add(str(rel))
    return graph


def _loop(graph: dict[str, dict[str, set[str]]]) -> list[str] | None:
    """One loop of parts, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_no_two_parts_of_the_package_import_each_other() -> None:
    graph = _imports()
    assert {"records", "tasks", "models", "plugin"} <= set(graph)  # the walk saw the package
    loop = _loop(graph)
    where = [f"{a} -> {b}: {', '.join(sorted(graph[a][b]))}" for a, b in pairwise(loop)] if loop else []
    assert loop is None, "parts that import each other around a loop:\n" + "\n".join(where)


def test_no_task_imports_another_task() -> None:
    """A task's folder (``tasks/<name>/``) imports no other task's folder; what tasks share lives a floor down.

    Shared truth and tables sit in ``groundeval.clinical`` or in the modules directly under
    ``groundeval.tasks`` (``common``, ``medlist``, ``bundle_cases``), so a task can be changed or
    dropped without touching another (issue 32).
    """
    tasks_dir = SRC / "tasks"
    folders = {p.name for p in tasks_dir.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {"extraction", "write", "reconcile", "labs", "summary"} <= folders
    crossings: list[str] = []
    for folder in sorted(folders):
        for path in sorted((tasks_dir / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                    if node.module == "groundeval.tasks":
                        names = [f"groundeval.tasks.{a.name}" for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level >= 2:  # ``from ..labs import x``
                    names = [f"groundeval.tasks.{node.module or ''}"]
                for name in names:
                    parts = name.split(".")
                    if parts[:2] == ["groundeval", "tasks"] and len(parts) > 2 and parts[2] in folders \
                            and parts[2] != folder:
                        crossings.append(f"{path.relative_to(SRC)} imports {name}")
    assert not crossings, crossings
