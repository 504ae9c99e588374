"""A status line while a run goes: cases done, passed, excluded, calls in flight, spend, ETA.

Written through pytest's own terminal reporter (its ``TerminalWriter``), never around it:

* on a terminal (``tty`` mode) one line below pytest's output is redrawn in place (about twice a
  second, and after each case). Every write pytest makes goes through a guard that first erases
  the line and puts the cursor back where pytest left it (ANSI: erase line, cursor up, column),
  so the per-item letters, ``-v`` lines and the summary come out exactly as without it;
* elsewhere (``plain`` mode: CI logs, a pipe) a plain line every ``--groundeval-progress-every``
  seconds (30 by default), between items, on a line of its own.

A maintained progress library was considered and not used: tqdm, rich's ``Live`` and enlighten
each own the terminal or expect every write to go through them, while pytest's reporter holds its
own stream; wrapping its writer is the smallest thing that keeps both intact.

Only the controlling process shows it (a serial run, or the pytest-xdist controller, which
counts the case records on the reports its workers send). Workers add their calls in flight and
their current concurrency limit to each report (``LiveOnReports``). With ``-p no:terminal``
there is no reporter and nothing is shown.

Start-up says what it is doing when a phase takes more than ``SLOW_PHASE_S``: collecting the
case files, warming up the agent (imports, clients), waiting for the first answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from groundeval.models import throttle
from groundeval.plugin.progress_line import Tally, duration, status_text

if TYPE_CHECKING:
    from groundeval.plugin.controller import RunController

__all__ = ["LIVE_KEY", "LiveOnReports", "Progress"]

LIVE_KEY = "groundeval_live"
"""Report attribute: ``{"in_flight", "limit", "ceiling", "cuts"}`` of the process that ran the item."""

TICK_S = 0.5
"""How often the terminal line is redrawn (and a slow phase noticed), seconds."""

SLOW_PHASE_S = 2.0
"""A start-up phase that lasts longer than this is shown on the terminal line, seconds."""

SLOW_PHASE_PLAIN_S = 10.0
"""A start-up phase that lasts longer than this gets a plain line of its own (CI logs), seconds."""

ERASE = "\x1b[2K\x1b[1G"
"""Erase the whole line, cursor to its first column (ECMA-48 EL 2, CHA 1; no carriage return, which
line-splitting readers of the output would take for a line break)."""


def _live_now() -> dict[str, int] | None:
    """This process's call slots now (``throttle.current()``), or None when calls are not concurrent."""
    limit = throttle.current()
    if limit is None:
        return None
    return {"in_flight": limit.in_flight, "limit": limit.limit, "ceiling": limit.ceiling, "cuts": limit.cuts}


class LiveOnReports:
    """On a pytest-xdist worker: put this process's call slots on each report (the controller sums them)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """Attach ``LIVE_KEY`` to the report that carries the case record."""
        report = yield
        live = _live_now()
        if live is not None and getattr(report, "groundeval", None) is not None:
            setattr(report, LIVE_KEY, live)
        return report


class Progress:
    """The status line (registered as ``groundeval-progress`` on the controlling process).

    Args:
        gsession: The run (its ``selected`` items, its ``phase``).
        mode: ``"tty"`` (redraw one line in place), ``"plain"`` (a line every ``every_s``) or
            ``"auto"`` (``tty`` when pytest's output is a terminal and output is not captured off).
        every_s: Seconds between plain lines.
        clock: Monotonic clock, seconds (a test seam).
        ticker: Start the redraw thread (tests drive ``tick`` themselves).
    """

    def __init__(self, gsession: RunController, mode: str = "auto", every_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, ticker: bool = True) -> None:
        self.gsession = gsession
        self.mode = mode
        self.every_s = every_s
        self.clock = clock
        self.ticker = ticker
        self.tally = Tally()
        self.t0 = clock()
        self.first_start: float | None = None
        self.workers: dict[str, dict[str, int]] = {}
        self._tr: Any = None
        self._tw: Any = None
        self._write: Callable[..., None] | None = None
        self._lock = threading.RLock()
        self._drawn: str | None = None  # the line on screen (tty), or None
        self._col = 0  # pytest's column when the line was drawn below it
        self._below = False  # the line was drawn on a row of its own below pytest's
        self._last_plain = clock()
        self._last_plain_done = 0  # cases done when the last plain line was printed
        self._phase: tuple[str, float] | None = None  # (phase, since)
        self._announced: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._running = False
        self._out: Any = None
        self._dup_fd: int | None = None

    # -- wiring -------------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Find pytest's terminal reporter and guard its writer; start the redraw thread."""
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        self._tr, self._tw = tr, tr._tw
        if self.mode == "auto":
            capture_off = session.config.getoption("capture", default="fd") == "no"
            self.mode = "tty" if tr.isatty() and tr.hasmarkup and not capture_off else "plain"
        original = self._tw.write
        self._write = original
        self._out = self._terminal_stream()

        def guarded(msg: str, **markup: bool) -> None:
            with self._lock:
                self._erase()
                original(msg, **markup)

        self._tw.write = guarded
        self._running = True
        self.set_phase("collecting")
        if self.ticker:
            self._thread = threading.Thread(target=self._loop, name="groundeval-progress", daemon=True)
            self._thread.start()

    def _terminal_stream(self) -> Any:
        """Where the terminal line goes: a duplicate of pytest's stdout descriptor, taken now.

        pytest captures a test's output by pointing descriptor 1 elsewhere while the test runs;
        the duplicate still reaches the terminal then, so a redraw during a test never lands in
        the test's captured output. A stream without a descriptor (pytest run in-process by
        ``pytester``) is written directly.
        """
        import io
        import os

        file = self._tw._file
        try:
            fd = os.dup(file.fileno())
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            return file
        self._dup_fd = fd
        return open(fd, "w", encoding=getattr(file, "encoding", None) or "utf-8", errors="replace", closefd=True)

    def _loop(self) -> None:
        while not self._stop.wait(TICK_S):
            self.tick()

    def _close(self) -> None:
        """Stop the thread, take the line off the screen, give pytest its writer back."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        with self._lock:
            self._running = False
            self._erase()
            if self._tw is not None and self._write is not None:
                self._tw.write = self._write
            if self._dup_fd is not None and self._out is not None:
                self._out.close()
                self._dup_fd = None

    # -- phases --------------------------------------------------------------------------------
    def set_phase(self, phase: str | None) -> None:
        """Start-up phase now (``collecting``, ``warming up the agent``), or None once cases run."""
        with self._lock:
            if phase is None and self._phase is not None and self._phase[0].startswith("warming up"):
                self.first_start = self.clock()  # the ETA's clock: the warm-up is not a case's time
            self._phase = (phase, self.clock()) if phase else None

    def _phase_text(self) -> str | None:
        if self._phase is None:
            return None
        phase, since = self._phase
        waited = self.clock() - since
        if waited < SLOW_PHASE_S:
            return None
        if phase == "collecting":
            files = self.gsession.case_file_count()
            what = f"collecting and checking {files} case files" if files else "collecting case files"
        else:
            what = phase
        return f"groundeval: {what} ({duration(waited)})"

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Collection is over; until the first item starts nothing is slow on our side."""
        self.set_phase(None)

    # -- counting ------------------------------------------------------------------------------
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        """The first item's start is when the ETA's clock starts."""
        if self.first_start is None:
            self.first_start = self.clock()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count the case record the report carries; note the worker's call slots.

        Runs first: the session then keeps the record and leaves only its outcome on the report
        (pytest keeps every report to the end of the run).
        """
        record = getattr(report, "groundeval", None)
        if isinstance(record, dict):
            with self._lock:
                if self._phase is not None and self.first_start is not None:
                    self._phase = None  # the first answer is in: the workers are up
                self.tally.add(report.nodeid, record)
                live = getattr(report, LIVE_KEY, None)
                worker = record.get("worker")
                if isinstance(live, dict) and isinstance(worker, str):
                    self.workers[worker] = live

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        """After pytest has written the item's letter or line: redraw (tty) or a plain line when due."""
        self.tick(after_item=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Cases are about to run (under xdist: the workers start, collect and warm up first)."""
        distributed = not getattr(self.gsession, "runs_cases", True)
        self.set_phase("starting the workers (each collects the cases and warms up the agent)" if distributed
                       else None)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Any:
        """Take the line away before pytest's summary."""
        self._close()
        return (yield)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Stop the thread whatever happened (a usage error after start-up, an internal error)."""
        self._close()

    # -- drawing -------------------------------------------------------------------------------
    def live(self) -> dict[str, int] | None:
        """Calls in flight and limits, summed over the processes running cases (this one when serial)."""
        if self.workers:
            keys = ("in_flight", "limit", "ceiling", "cuts")
            return {k: sum(w[k] for w in self.workers.values()) for k in keys}
        return _live_now()

    def line(self) -> str:
        """The status line now (or the start-up phase, when one is slow)."""
        phase = self._phase_text()
        if phase is not None:
            return phase
        now = self.clock()
        running = None if self.first_start is None else now - self.first_start
        limit = getattr(getattr(self.gsession, "settings", None), "max_cost", None)
        return status_text(self.tally, len(self.gsession.selected), self.live(), now - self.t0, running, limit)

    def tick(self, after_item: bool = False) -> None:
        """Redraw the terminal line, or write a plain line when one is due."""
        with self._lock:
            if not self._running or self._tw is None:
                return
            if self.mode == "tty":
                if self.first_start is None and self._phase_text() is None:
                    return  # nothing to say yet: pytest's own "collecting ..." line is on screen
                self._draw(self.line())
                return
            self._plain(after_item)

    def _plain(self, after_item: bool) -> None:
        phase = self._phase_text()
        slow = self._phase is not None and self.clock() - self._phase[1] >= SLOW_PHASE_PLAIN_S
        if phase is not None and slow and self._phase is not None and self._phase[0] not in self._announced:
            self._announced.add(self._phase[0])
            self._plain_line(phase)
            return
        if not after_item or self.clock() - self._last_plain < self.every_s or not self.tally.done:
            return
        if self.tally.done == self._last_plain_done:
            # an item finished whose record was already counted (under xdist two workers' reports
            # can reach the controller before either item's end): the line would say nothing new
            return
        self._last_plain = self.clock()
        self._last_plain_done = self.tally.done
        self._plain_line(self.line())

    def _plain_line(self, text: str) -> None:
        """A line of its own; pytest's next letter starts the next line."""
        self._tw.flush()  # pytest's own pending output first
        self._out.write(("\n" if self._tw.width_of_current_line else "") + text + "\n")
        self._out.flush()
        self._tw._current_line = ""  # pytest's column count (for its [ 50%] markers) starts again

    def _draw(self, text: str) -> None:
        """Put ``text`` on the row below pytest's current one (or on it, when pytest's row is empty)."""
        assert self._write is not None
        self._erase()
        width = max(10, self.width() - 1)
        text = text[:width]
        self._tw.flush()  # pytest's own pending output first
        file = self._out
        self._col = self._tw.width_of_current_line
        self._below = self._col > 0
        file.write(("\n" if self._below else "") + text)
        file.flush()
        self._drawn = text

    def width(self) -> int:
        """The terminal's columns: ``COLUMNS`` if set, else the size of the terminal the line is drawn on.

        pytest's own width (``TerminalWriter.fullwidth``) asks descriptor 1, which points at a capture
        file while a test runs, and so falls back to 80 columns; the duplicate taken at start
        (``_terminal_stream``) still is the terminal.
        """
        import os

        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        if self._dup_fd is not None:
            try:
                return os.get_terminal_size(self._dup_fd).columns
            except OSError:
                pass
        return int(self._tw.fullwidth)

    def _erase(self) -> None:
        """Take the line off the screen and put the cursor back at pytest's column."""
        if self._drawn is None or self._tw is None:
            return
        file = self._out
        file.write(ERASE + (f"\x1b[1A\x1b[{self._col + 1}G" if self._below else ""))
        file.flush()
        self._drawn = None
