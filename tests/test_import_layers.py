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
from pathlib import Path

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

    Shared truth and tables sit in ``groundeval.clinical`` (the medication list, the lab tables);
    the modules directly under ``groundeval.tasks`` are the task framework
    (``test_the_modules_beside_the_task_folders_are_the_task_framework``), so a task can be changed
    or dropped without touching another (issue 32).
    """
    folders = _task_folders()
    assert {"extraction", "write", "reconcile", "labs", "summary"} <= folders
    crossings: list[str] = []
    for folder in sorted(folders):
        for path in sorted((TASKS / folder).rglob("*.py")):
            for name in _task_imports(path):
                parts = name.split(".")
                if len(parts) > 2 and parts[2] in folders and parts[2] != folder:
                    crossings.append(f"{path.relative_to(SRC)} imports {name}")
    assert not crossings, crossings


TASKS = SRC / "tasks"

FRAMEWORK = {
    "__init__": "make_task, task_classes: the registry's tasks",
    "base": "the Task protocol, BaseTask, capabilities",
    "common": "helpers for task authors (patient lookup, case ids, wrong-task hints), re-exported at the top",
    "counterfactual": "the counterfactual twins' protocol and runner-side helpers",
    "fhir_mode": "FhirModeTask: any task's record served over FHIR REST",
    "fhir_only": "case sets that run only over FHIR REST",
    "fhir_record": "what a task says about its record served over FHIR",
    "prompt_reference": "rendering again a prompt a record kept by reference",
}
"""The modules directly under ``groundeval.tasks``: what every task is built on, none of one task's truth."""


def _task_folders() -> set[str]:
    return {p.name for p in TASKS.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def _task_imports(path: Path) -> list[str]:
    """Every ``groundeval.tasks.<x>...`` module the file imports (lazy imports too)."""
    found: list[str] = []
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
        found += [n for n in names if n.split(".")[:2] == ["groundeval", "tasks"] and len(n.split(".")) > 2]
    return found


def test_the_modules_beside_the_task_folders_are_the_task_framework() -> None:
    """No shared truth or table sits directly under ``groundeval.tasks`` (as ``tasks/medlist.py`` did).

    A module there that two tasks import is a way for one task's rules to reach another's: what
    tasks share of the domain (a truth reader, a threshold table, a value set) goes a floor down,
    to ``groundeval.clinical`` or ``groundeval.fhir``. Only the framework stays beside the task
    folders, and it imports no task folder (a task's classes are reached through the registry).
    """
    modules = {p.stem for p in TASKS.glob("*.py")}
    unknown = sorted(modules - set(FRAMEWORK))
    assert not unknown, (
        f"groundeval.tasks.{unknown[0]} sits beside the task folders: shared truth and tables belong in "
        "groundeval.clinical (or groundeval.fhir for FHIR rules); task framework is named in FRAMEWORK here"
    )
    assert set(FRAMEWORK) <= modules, sorted(set(FRAMEWORK) - modules)  # a module moved: update the list
    folders = _task_folders()
    reaching = [f"tasks/{p.name} imports {name}" for p in sorted(TASKS.glob("*.py")) for name in _task_imports(p)
                if name.split(".")[2] in folders]
    assert not reaching, reaching
