"""Route the streams pytest's capture swaps in, so a call made in a thread keeps its output.

``execution.thread_output`` keeps what a capturing thread writes for its own case; this module
points it at pytest's streams. pytest captures output per test phase by pointing
``sys.stdout``/``sys.stderr`` at a buffer while the phase runs, and back at the terminal between
phases, so while a task is active both the buffers and the terminal streams are routed.

pytest has no public way to wrap its capture streams; ``install`` routes the ``_old`` and
``tmpfile`` streams of its ``SysCapture`` objects (``_pytest.capture``), checked defensively: its
own buffers get a routing ``write`` on the instance (pytest checks their type), the terminal
stream a ``Router`` in its place; where capture is off (``-s``) ``sys.stdout``/``sys.stderr``
themselves are routed.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

from groundeval.execution.thread_output import STREAMS, Router, routed_write

__all__ = ["install"]

_Router = Router  # the name the plugin's tests check the streams against


def _wrap(owner: Any, attr: str, name: str, undo: list[Callable[[], None]]) -> None:
    """Route the writes of the stream ``owner.<attr>``.

    On the stream itself when it takes attributes (pytest's own capture buffers, whose type pytest
    checks), else by putting a ``Router`` in its place (a built-in stream, the terminal's).
    """
    stream = getattr(owner, attr, None)
    write = getattr(stream, "write", None)
    if stream is None or isinstance(stream, Router) or not callable(write) or hasattr(write, "groundeval_routed"):
        return
    try:
        stream.write = routed_write(write, name)
    except AttributeError:  # a built-in stream (the terminal's): wrap it instead
        router = Router(stream, name)
        setattr(owner, attr, router)
        undo.append(lambda: setattr(owner, attr, stream) if getattr(owner, attr, None) is router else None)
        if getattr(sys, name) is stream:
            setattr(sys, name, router)
        return

    def unpatch() -> None:
        with contextlib.suppress(AttributeError):
            del stream.write

    undo.append(unpatch)


def install(config: Any) -> Callable[[], None]:
    """Wrap the streams pytest swaps in, so ``captured`` works in any thread; returns the undo."""
    undo: list[Callable[[], None]] = []
    capman = config.pluginmanager.getplugin("capturemanager")
    multi = getattr(capman, "_global_capturing", None)
    for name in STREAMS:
        capture = getattr(multi, "out" if name == "stdout" else "err", None)
        capture = getattr(capture, "syscapture", capture)  # fd capture holds a sys capture
        if capture is not None and hasattr(capture, "_old") and hasattr(capture, "tmpfile"):
            _wrap(capture, "_old", name, undo)
            _wrap(capture, "tmpfile", name, undo)
        else:  # capture is off (-s): nothing swaps the stream, so wrap it where it is
            _wrap(sys, name, name, undo)

    def restore() -> None:
        for step in reversed(undo):
            step()
        for name in STREAMS:
            current = getattr(sys, name)
            if isinstance(current, Router):
                setattr(sys, name, current.wrapped)

    return restore
