"""The ``groundeval`` console script: run, flush every output, and leave without tearing down.

A Python process that returns from ``main`` spends a noticeable share of a short run (about 0.15 s
of a 1-second run, measured by ``bench/fixed_cost.py``) finalising modules and collecting objects
that the operating system frees at once anyway. Once ``main`` has returned, every output of the run
is written (the run record, junit, Markdown and HTML reports are written and closed inside
``pytest.main``), so the console script runs the interpreter's exit handlers itself (a judge's or
a local model's server is stopped there, the logging streams flushed), flushes standard output and
error, and ends the process with ``os._exit``.

This is only the console script's way out: ``groundeval.cli.main`` (and so a user's own pytest
session, or a test calling it) returns normally. When a thread that is not a daemon is still
running (a library's uploader, say), the process leaves the ordinary way, which waits for it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn

from groundeval.cli import main

__all__ = ["console_main", "exit_after_flush"]


def exit_after_flush(code: int) -> NoReturn:
    """End the process with ``code`` once exit handlers have run and the standard streams are flushed.

    Args:
        code: The exit status (pytest's: 0 passed, 1 failed, 2 interrupted, 4 usage error, ...).

    Raises:
        SystemExit: Instead of ending at once, when a non-daemon thread other than the main one is
            still alive: the ordinary exit then joins it.
    """
    main_thread = threading.main_thread()
    if any(t is not main_thread and t.is_alive() and not t.daemon for t in threading.enumerate()):
        raise SystemExit(code)
    atexit._run_exitfuncs()  # registered handlers: servers stopped, logging flushed
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing can reach it
            stream.flush()
    os._exit(code)


def console_main() -> NoReturn:
    """Entry point of the ``groundeval`` console script and of ``python -m groundeval.cli``."""
    exit_after_flush(main())
