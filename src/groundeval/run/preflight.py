"""Checks made once, on the controlling process, before any case runs; each refusal is a ``ConfigError``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from groundeval.errors import ConfigError

__all__ = ["check_cache_dir", "check_data_dir_task", "check_out_dir", "check_writable_dir"]


def check_writable_dir(directory: Path, option: str, what: str) -> None:
    """Refuse a directory option that names a file or a directory that cannot be written.

    The directory is created if missing, and a probe file is created and removed in it.

    Args:
        directory: The directory given.
        option: The option's name, for the message (``--groundeval-out-dir``).
        what: What goes there, for the fix (``run records``).

    Raises:
        ConfigError: Naming the option, the directory, the reason and the fix.
    """
    problem = None
    if directory.exists() and not directory.is_dir():
        problem = "is a file, not a directory"
    else:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=directory, prefix=".groundeval-probe-"):
                pass
        except OSError as exc:
            problem = f"cannot be written ({exc.strerror or exc})"
    if problem is not None:
        raise ConfigError(f"{option}={str(directory)!r} {problem}; give a writable directory for {what}")


def check_out_dir(out_dir: Path) -> None:
    """Refuse an out-dir that is a file or cannot be written, before any case runs.

    Raises:
        ConfigError: Naming the directory and the fix.
    """
    check_writable_dir(out_dir, "--groundeval-out-dir", "run records")


def check_cache_dir(cache_dir: Path | None) -> None:
    """Refuse a ``--groundeval-cache`` that is a file or cannot be written, before any agent call.

    Raises:
        ConfigError: Naming the directory and the fix.
    """
    if cache_dir is not None:
        check_writable_dir(cache_dir, "--groundeval-cache", "the response cache")


def check_data_dir_task(task: Any, data_dir: Path) -> None:
    """Refuse a data directory whose case files are all another task's, as one usage error.

    Reads case files only until one is this task's (normally the first), so a good directory
    costs one JSON parse.

    Raises:
        ConfigError: No file is this task's and the first is another task's; the message
            names the directory, the other task and the fix.
    """
    from groundeval.datasets import load_json
    from groundeval.errors import DatasetError
    from groundeval.tasks.base import BaseTask
    from groundeval.tasks.common import wrong_task_error

    claims = getattr(task, "claims", None)
    files = task.case_files(data_dir)
    if not callable(claims) or getattr(type(task), "claims", None) is getattr(BaseTask, "claims", None) or not files:
        return  # a task that does not say what its files look like is never refused here
    first_other: DatasetError | None = None
    for path in files:
        try:
            data, _ = load_json(path)
        except DatasetError:
            continue
        if claims(data):
            return
        if first_other is None:
            first_other = wrong_task_error(data, path, task.name)
    if first_other is not None:
        raise ConfigError(
            f"the data directory {str(data_dir)!r}: none of its {len(files)} case files is a case of the "
            f"{task.name} task; "
            f"{first_other.problem}"
        )
