"""Tasks: what an agent is asked, the ground truth, and how its answer is parsed.

Tasks are looked up by name; each module is imported only when its task is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from groundeval.errors import ConfigError
from groundeval.tasks.base import Task

__all__ = ["TASKS", "Task", "make_task", "task_class"]

TASKS: dict[str, str] = {
    "extraction": "groundeval.tasks.extraction:ExtractionTask",
    "write": "groundeval.tasks.write:WriteTask",
}
"""Task name -> ``module:class``; the class is built by its ``from_options`` classmethod."""


def task_class(name: str) -> Any:
    """Import and return the class of the task called ``name``.

    Raises:
        ConfigError: ``name`` is not a known task.
    """
    try:
        target = TASKS[name]
    except KeyError:
        known = ", ".join(sorted(TASKS))
        raise ConfigError(f"unknown task {name!r}; choose one of: {known}") from None
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def make_task(name: str, options: Mapping[str, Any] | None = None) -> Task:
    """Build the task called ``name``.

    Args:
        name: A key of ``TASKS``.
        options: Task options (e.g. ``min_f1``); each task reads the ones it knows.

    Raises:
        ConfigError: ``name`` is not a known task.
    """
    task: Task = task_class(name).from_options(dict(options or {}))
    return task
