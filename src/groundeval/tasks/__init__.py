"""Tasks: what an agent is asked, the ground truth, and how its answer is parsed.

A task is named, in ``--groundeval-task`` or ``make_task``, in one of two ways:

* a name registered under the entry-point group ``groundeval.tasks`` (``ENTRY_POINT_GROUP``): the
  built-ins (``extraction``, ``write``, ``reconcile``, ``labs``, declared in
  ``groundeval.registry.builtins``) and any other installed package's, e.g. in its
  ``pyproject.toml``::

      [project.entry-points."groundeval.tasks"]
      conditions = "my_package.conditions:ConditionsTask"

* ``package.module:Class``; the current working directory is importable, as for agents, so
  ``examples.conditions_task:ConditionsTask`` works from the repository root (and in every
  pytest-xdist worker, which starts in the same directory).

Each module is imported only when its task is used (``groundeval.registry``). The class is built
by its ``from_options`` classmethod (``BaseTask`` provides one that reads the options the task
declares).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from groundeval.errors import ConfigError
from groundeval.registry import TASK_GROUP, Targets, builtin_tasks, load_target, registered
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

ENTRY_POINT_GROUP = TASK_GROUP
"""Entry-point group under which packages, groundeval included, register tasks (name -> ``module:Class``)."""

TASKS: Mapping[str, str] = Targets(TASK_GROUP)
"""Every registered task: name -> ``module:Class`` (read lazily from the registry)."""


def available_tasks() -> dict[str, str]:
    """Every task known by name, groundeval's own first: name -> entry-point value."""
    return registered(TASK_GROUP)


def _import(spec: str, target: str) -> Any:
    found = load_target(spec, target, kind="task", builtin=spec in builtin_tasks())
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


def make_task(
    name: str, options: Mapping[str, Any] | None = None, *, call_options: Mapping[str, Any] | None = None,
) -> Task:
    """Build a task.

    Args:
        name: A built-in name, an entry-point name or ``package.module:Class``.
        options: Option values keyed by option name (e.g. ``{"min_f1": 0.8}``; strings are
            converted); only the task's declared options are accepted.
        call_options: The run's model-call policy (``models.retry.call_policy_options`` of the run's
            options: ``max_retries``, ``timeout`` seconds), for a task whose ``from_options`` takes
            ``call_options`` (a task that calls a model itself, as the summary task's judge does);
            other tasks are built without it.

    Raises:
        ConfigError: Unknown task, or an unknown option key or bad value (naming task and key).
    """
    cls = task_class(name)
    if call_options is not None and "call_options" in inspect.signature(cls.from_options).parameters:
        built: Task = cls.from_options(dict(options or {}), call_options=call_options)
        return built
    task: Task = cls.from_options(dict(options or {}))
    return task
