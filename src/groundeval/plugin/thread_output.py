"""What an agent prints during a call made ahead, in a thread: kept for its own case, not the terminal.

pytest captures output per test phase by pointing ``sys.stdout``/``sys.stderr`` at a buffer while
the phase runs, and back at the terminal between phases. An agent call made ahead
(``plugin.prefetch``) runs in a thread at any time: what it prints would land in whichever item
is running (or, between items, on the terminal, unredacted). So while a task is active, the two
streams pytest swaps in are wrapped in a ``_Router``: a write from a thread that is capturing
(``captured``) goes to that thread's buffer, any other write goes on unchanged. When the item
whose call it was takes the call's result, ``replay`` writes the buffered text, redacted, into
the item's own capture, so it appears in that case's report (``-rA``, ``junit_logging=all``) as
if the item had printed it.

pytest has no public way to wrap its capture streams; ``install`` routes the ``_old`` and
``tmpfile`` streams of its ``SysCapture`` objects (``_pytest.capture``), checked defensively: its
own buffers get a routing ``write`` on the instance (pytest checks their type), the terminal
stream a ``_Router`` in its place; where capture is off (``-s``) ``sys.stdout``/``sys.stderr``
themselves are routed.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from groundeval.redaction import clean_text

__all__ = ["Printed", "captured", "install", "replay"]

_local = threading.local()
_STREAMS = ("stdout", "stderr")


class Printed:
    """What one thread printed while capturing: ``stdout`` and ``stderr`` text, in order."""

    __slots__ = ("stderr", "stdout")

    def __init__(self) -> None:
        self.stdout: list[str] = []
        self.stderr: list[str] = []


class _Router:
    """A text stream that sends a capturing thread's writes to its buffer and every other write on."""

    def __init__(self, stream: Any, name: str) -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        printed: Printed | None = getattr(_local, "printed", None)
        if printed is None:
            return int(self._stream.write(text))
        getattr(printed, self._name).append(str(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if getattr(_local, "printed", None) is None:
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def captured() -> Iterator[Printed]:
    """Within the block, what this thread writes to ``sys.stdout``/``sys.stderr`` is kept, not written."""
    printed = Printed()
    _local.printed = printed
    try:
        yield printed
    finally:
        _local.printed = None


def replay(printed: Printed) -> None:
    """Write what a thread printed to this thread's current streams, redacted (``clean_text``)."""
    for name in _STREAMS:
        text = "".join(getattr(printed, name))
        if text:
            getattr(sys, name).write(clean_text(text))


def _routed_write(write: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """``write`` that sends a capturing thread's text to its buffer instead."""

    def routed(text: str) -> Any:
        printed: Printed | None = getattr(_local, "printed", None)
        if printed is None:
            return write(text)
        getattr(printed, name).append(str(text))
        return len(text)

    routed.groundeval_routed = True  # type: ignore[attr-defined]
    return routed


def _wrap(owner: Any, attr: str, name: str, undo: list[Callable[[], None]]) -> None:
    """Route the writes of the stream ``owner.<attr>``.

    On the stream itself when it takes attributes (pytest's own capture buffers, whose type pytest
    checks), else by putting a ``_Router`` in its place (a built-in stream, the terminal's).
    """
    stream = getattr(owner, attr, None)
    write = getattr(stream, "write", None)
    if stream is None or isinstance(stream, _Router) or not callable(write) or hasattr(write, "groundeval_routed"):
        return
    try:
        stream.write = _routed_write(write, name)
    except AttributeError:  # a built-in stream (the terminal's): wrap it instead
        router = _Router(stream, name)
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
    for name in _STREAMS:
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
        for name in _STREAMS:
            current = getattr(sys, name)
            if isinstance(current, _Router):
                setattr(sys, name, current._stream)

    return restore
