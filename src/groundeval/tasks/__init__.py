"""Tasks: what an agent is asked, the ground truth, and how its answer is parsed.

A task is named, in ``--groundeval-task`` or ``make_task``, in one of three ways:

* a built-in name (``TASKS``: ``extraction``, ``write``, ``reconcile``);
* a name another installed package registers under the entry-point group ``groundeval.tasks``
  (``ENTRY_POINT_GROUP``), e.g. in its ``pyproject.toml``::

      [project.entry-points."groundeval.tasks"]
      conditions = "my_package.conditions:ConditionsTask"

* ``package.module:Class``; the current working directory is importable, as for agents, so
  ``examples.conditions_task:ConditionsTask`` works from the repository root (and in every
  pytest-xdist worker, which starts in the same directory).

Each module is imported only when its task is used. The class is built by its ``from_options``
classmethod (``BaseTask`` provides one that reads the options the task declares).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from groundeval.errors import ConfigError
from groundeval.loading import load_target
from groundeval.tasks.base import BaseTask, Scorer, Task, TaskOption

__all__ = [
    "ENTRY_POINT_GROUP",
    "TASKS",
    "BaseTask",
    "Scorer",
    "Task",
    "TaskOption",
    "available_tasks",
    "make_task",
    "task_class",
    "task_classes",
]

TASKS: dict[str, str] = {
    "extraction": "groundeval.tasks.extraction.task:ExtractionTask",
    "write": "groundeval.tasks.write.task:WriteTask",
    "reconcile": "groundeval.tasks.reconcile.task:ReconcileTask",
    "labs": "groundeval.tasks.labs:LabsTask",
    "summary": "groundeval.tasks.summary:SummaryTask",
}
"""Built-in task name -> ``module:Class``."""

ENTRY_POINT_GROUP = "groundeval.tasks"
"""Entry-point group under which other packages register tasks (name -> ``module:Class``)."""


def _registered() -> dict[str, str]:
    """Entry-point tasks (name -> ``module:Class``); a built-in name cannot be taken over."""
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return {name: value for name, value in found.items() if name not in TASKS}


def available_tasks() -> dict[str, str]:
    """Every task known by name: built-in and entry-point tasks, name -> ``module:Class``."""
    return {**TASKS, **_registered()}


def _import(spec: str, target: str) -> Any:
    found = load_target(spec, target, kind="task", builtin=target in TASKS.values())
    if not isinstance(found, type) or not callable(getattr(found, "from_options", None)):
        raise ConfigError(
            f"task {spec!r} is not a task class (a class with from_options, e.g. a groundeval.BaseTask subclass)"
        )
    if not isinstance(getattr(found, "name", None), str) or not getattr(found, "name", ""):
        raise ConfigError(f"task {spec!r}: the class has no name (set name = '<short name>' on it)")
    return found


def task_class(name: str) -> Any:
    """Import and return the task class ``name`` names (built-in, entry point or ``module:Class``).

    Raises:
        ConfigError: Unknown name, unimportable module, missing attribute, or not a task class.
    """
    known = available_tasks()
    if name in known:
        return _import(name, known[name])
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        names = ", ".join(sorted(known))
        raise ConfigError(
            f"unknown task {name!r}; choose one of: {names}, or 'package.module:Class' for your own task"
        )
    return _import(name, name)


def task_classes() -> dict[str, Any]:
    """Every task class known by name, imported (for hints about which task a file belongs to).

    A registered task that cannot be imported is left out rather than raising.
    """
    out: dict[str, Any] = {}
    for name in available_tasks():
        try:
            out[name] = task_class(name)
        except ConfigError:
            continue
    return out


def make_task(name: str, options: Mapping[str, Any] | None = None) -> Task:
    """Build a task.

    Args:
        name: A built-in name, an entry-point name or ``package.module:Class``.
        options: Option values keyed by option name (e.g. ``{"min_f1": 0.8}``; strings are
            converted); only the task's declared options are accepted.

    Raises:
        ConfigError: Unknown task, or an unknown option key or bad value (naming task and key).
    """
    task: Task = task_class(name).from_options(dict(options or {}))
    return task
