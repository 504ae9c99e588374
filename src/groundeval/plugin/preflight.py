"""Checks made once, on the controlling process, before any case runs."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

__all__ = ["check_data_dir_task", "check_out_dir"]


def check_out_dir(out_dir: Path) -> None:
    """Refuse an out-dir that is a file or cannot be written, before any case runs.

    Raises:
        pytest.UsageError: Naming the directory and the fix.
    """
    problem = None
    if out_dir.exists() and not out_dir.is_dir():
        problem = "is a file, not a directory"
    else:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".groundeval-probe-"):
                pass
        except OSError as exc:
            problem = f"cannot be written ({exc.strerror or exc})"
    if problem is not None:
        raise pytest.UsageError(
            f"--groundeval-out-dir={str(out_dir)!r} {problem}; give a writable directory for run records"
        )


def check_data_dir_task(task: Any, data_dir: Path) -> None:
    """Refuse a data directory whose case files are all another task's, as one usage error.

    Reads case files only until one is this task's (normally the first), so a good directory
    costs one JSON parse.

    Raises:
        pytest.UsageError: No file is this task's and the first is another task's; the message
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
        raise pytest.UsageError(
            f"the data directory {str(data_dir)!r}: none of its {len(files)} case files is a case of the "
            f"{task.name} task; "
            f"{first_other.problem}"
        )
