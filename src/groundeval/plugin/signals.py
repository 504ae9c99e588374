"""SIGTERM and SIGINT on the controlling process: stop the run so that its record is still written.

The first SIGTERM/SIGINT (a CI timeout, ``kill``, Ctrl-C) stops the run: a serial run as Ctrl-C
does; under pytest-xdist, workers start no further case (they see the stop file,
``GroundevalSession.stop_file``) and their finished results still arrive. After a SIGTERM their
calls in flight finish; after a SIGINT the stop file says ``INTERRUPT`` and each worker cuts its
call in flight, whose case is then not run (``plugin.worker_stop``). A second signal is
absorbed, so the record is still written (``uv run`` forwards a Ctrl-C the process group already
got); a third aborts at once. Handlers are installed only where none was set (the defaults).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groundeval.plugin.worker_stop import INTERRUPT

__all__ = ["SignalStop"]


class SignalStop:
    """The run's signal handlers (installed at session start, restored at unconfigure).

    Args:
        config: The run's pytest config (its ``dsession`` plugin is there under xdist).
        stop_file: The file that tells workers to start no further case.
        stopped: Called with the reason when the first signal stops the run.
    """

    def __init__(self, config: pytest.Config, stop_file: Path, stopped: Callable[[str], None]) -> None:
        self.config = config
        self.stop_file = stop_file
        self.stopped = stopped
        self.signals = 0
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Take SIGTERM and SIGINT where their handlers are the defaults (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGINT):
            current = signal.getsignal(signum)
            if current in (signal.SIG_DFL, signal.default_int_handler):
                self._previous[signum] = signal.signal(signum, self._on_signal)

    def restore(self) -> None:
        """Put the previous handlers back."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        """First signal: stop (serial: as Ctrl-C; xdist: gracefully). Second: absorbed. Third: abort."""
        self.signals += 1
        reason = f"interrupted by signal {signal.Signals(signum).name}"
        if self.signals >= 3:
            raise KeyboardInterrupt(reason)
        if self.signals == 2:
            return  # `uv run` forwards Ctrl-C that the process group also got: let the record be written
        self.stopped(reason)
        dsession = self.config.pluginmanager.getplugin("dsession")
        if dsession is None:
            raise KeyboardInterrupt(reason)
        with contextlib.suppress(OSError):  # a read-only out-dir: workers then finish their cases
            # SIGINT (Ctrl-C): workers also cut their calls in flight (plugin.worker_stop); SIGTERM: they finish them
            self.stop_file.write_text(INTERRUPT if signum == signal.SIGINT else "", encoding="utf-8")
        dsession.shouldstop = reason
