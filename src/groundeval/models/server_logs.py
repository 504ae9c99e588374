"""Where the model servers groundeval starts write their logs: the run's out-dir.

The session sets it (``use_directory(--groundeval-out-dir)``) before the task and the agent are
made, so a judge's server (``local/<gguf>`` as ``--groundeval-judge``) logs beside the run record
as the agent's does; ``groundeval calibrate`` sets the directory of its card. Outside both it is
``runs``. Standard library only: the plugin sets it on every run.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_DIRECTORY", "directory", "use_directory"]

DEFAULT_DIRECTORY = Path("runs")
"""The directory when no run set one (``--groundeval-out-dir``'s default)."""

_directory: Path | None = None


def use_directory(path: Path | None) -> None:
    """Send the logs of servers started from now on to ``path`` (None: back to ``DEFAULT_DIRECTORY``)."""
    global _directory
    _directory = path


def directory() -> Path:
    """The directory the next server's log goes to."""
    return _directory if _directory is not None else DEFAULT_DIRECTORY
