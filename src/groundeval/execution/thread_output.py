"""What an agent prints during a call made in another thread: kept for its own case, not the terminal.

A call made ahead (``execution.threaded``) runs in a thread at any time: what it prints would land
in whichever item is running (or, between items, on the terminal, unredacted). So the streams it
could write to are routed (``Router``, ``routed_write``): a write from a thread that is capturing
(``captured``) goes to that thread's buffer, any other write goes on unchanged. When the item
whose call it was takes the call's result, ``replay`` writes the buffered text, redacted, into the
item's own output, as if the item had printed it.

Which streams to route is the front end's business: the pytest plugin routes the ones pytest's
capture swaps in (``plugin.thread_output.install``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from groundeval.redaction import clean_text

__all__ = ["STREAMS", "Printed", "Router", "captured", "replay", "routed_write"]

_local = threading.local()
STREAMS = ("stdout", "stderr")
"""The names of the two routed streams (attributes of ``sys`` and of ``Printed``)."""


class Printed:
    """What one thread printed while capturing: ``stdout`` and ``stderr`` text, in order."""

    __slots__ = ("stderr", "stdout")

    def __init__(self) -> None:
        self.stdout: list[str] = []
        self.stderr: list[str] = []


class Router:
    """A text stream that sends a capturing thread's writes to its buffer and every other write on.

    Args:
        stream: The stream written to by threads that are not capturing.
        name: ``"stdout"`` or ``"stderr"``: the ``Printed`` buffer a capturing thread's text goes to.
    """

    def __init__(self, stream: Any, name: str) -> None:
        self._stream = stream
        self._name = name

    @property
    def wrapped(self) -> Any:
        """The stream written to by threads that are not capturing."""
        return self._stream

    def write(self, text: str) -> int:
        """Write ``text`` to the capturing thread's buffer, or on to the wrapped stream."""
        printed: Printed | None = getattr(_local, "printed", None)
        if printed is None:
            return int(self._stream.write(text))
        getattr(printed, self._name).append(str(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        """Write each of ``lines``."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush the wrapped stream (a capturing thread has nothing to flush)."""
        if getattr(_local, "printed", None) is None:
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def routed_write(write: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """``write`` that sends a capturing thread's text to its ``name`` buffer instead.

    The function returned has ``groundeval_routed = True``, so it is never routed twice.
    """

    def routed(text: str) -> Any:
        printed: Printed | None = getattr(_local, "printed", None)
        if printed is None:
            return write(text)
        getattr(printed, name).append(str(text))
        return len(text)

    routed.groundeval_routed = True  # type: ignore[attr-defined]
    return routed


@contextmanager
def captured() -> Iterator[Printed]:
    """Within the block, what this thread writes to a routed stream is kept, not written."""
    printed = Printed()
    _local.printed = printed
    try:
        yield printed
    finally:
        _local.printed = None


def replay(printed: Printed) -> None:
    """Write what a thread printed to this thread's current streams, redacted (``clean_text``)."""
    for name in STREAMS:
        text = "".join(getattr(printed, name))
        if text:
            getattr(sys, name).write(clean_text(text))
