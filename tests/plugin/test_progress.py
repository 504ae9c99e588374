"""The status line: counts from the case records, tty redraws that leave pytest's output intact, plain lines."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from groundeval.plugin.progress import Progress
from groundeval.plugin.progress_line import Tally, status_text

from ._screen import render
from .conftest import FIXTURES

NAIVE = ("--groundeval-task=extraction", "--groundeval-agent=naive", "--groundeval-data-dir=data",
         "-p", "no:randomly", "-p", "no:cacheprovider")
THREE = ("Garrett_Thompson", "Clemente_Kreiger", "Johnie961_Connelly992")  # naive: partial, passed, failed


@pytest.fixture
def data(pytester: pytest.Pytester) -> Path:
    folder = pytester.mkdir("data")
    for prefix in THREE:
        (src,) = FIXTURES.glob(f"{prefix}*.json")
        (folder / src.name).write_bytes(src.read_bytes())
    return folder


def _record(outcome: str, counted: bool = True, cached: bool = False, cost: float | None = 0.01) -> dict[str, Any]:
    return {"outcome": outcome, "counted": counted, "cached": cached,
            "usage": {"input_tokens": 1000, "output_tokens": 200, "cost_usd": cost}}


def test_the_tally_counts_this_runs_spend_apart_from_cached_answers() -> None:
    tally = Tally()
    tally.add("a", _record("passed"))
    tally.add("a", _record("passed"))  # the same item reported twice counts once
    tally.add("b", _record("agent_error", counted=False, cost=None))
    tally.add("c", _record("passed", cached=True, cost=5.0))
    assert (tally.done, tally.passed, tally.excluded, tally.cached) == (3, 2, 1, 1)
    assert tally.tokens == 2400 and tally.spent_usd == pytest.approx(0.01) and tally.unpriced == 1


def test_the_status_line_says_when_rate_limiting_cut_the_limit() -> None:
    tally = Tally(done=12, passed=9, excluded=1, cached=3, tokens=12_300, spent_usd=0.42)
    live = {"in_flight": 2, "limit": 2, "ceiling": 8, "cuts": 1}
    text = status_text(tally, 48, live, elapsed_s=65, running_s=60)
    assert text == ("groundeval 12/48 done  9 passed  1 excluded  calls 2 in flight (limit cut to 2 of 8 by rate "
                    "limiting)  cached 3  12.3k tokens  $0.4200  elapsed 1m05s  ETA 3m00s")
    assert "ETA" not in status_text(tally, 12, None, 65, 60)  # nothing left
    assert "in flight" not in status_text(tally, 48, None, 65, 60)  # calls not concurrent
    assert "  $0.4200 of $5  " in status_text(tally, 48, None, 65, 60, limit_usd=5.0)  # --groundeval-max-cost


def test_a_slow_start_up_phase_is_announced() -> None:
    now = [100.0]
    gsession: Any = SimpleNamespace(selected=["x"] * 4, case_file_count=lambda: 4)
    progress = Progress(gsession, "plain", clock=lambda: now[0], ticker=False)
    progress.set_phase("collecting")
    assert progress._phase_text() is None  # not slow yet
    now[0] += 3
    assert progress.line() == "groundeval: collecting and checking 4 case files (3s)"
    progress.set_phase("warming up the agent (imports, clients)")
    now[0] += 2.5
    assert progress.line() == "groundeval: warming up the agent (imports, clients) (2s)"
    progress.set_phase(None)
    assert progress.line().startswith("groundeval 0/4 done")


@pytest.mark.parametrize("extra", [(), ("-q",), ("-v",)])
def test_plain_lines_count_the_cases_between_items(pytester: pytest.Pytester, data: Path, extra: tuple[str, ...]) -> None:
    result = pytester.runpytest(*NAIVE, "--groundeval-progress=plain", "--groundeval-progress-every=0", *extra)
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "partial": 1}
    lines = [ln for ln in result.outlines if ln.startswith("groundeval ") and " done " in ln]
    counts = [ln.split("  ")[0] for ln in lines]
    # Two workers' reports may reach the controller between two prints: the counts only grow, to 3/3.
    assert counts == sorted(set(counts)) and counts[-1] == "groundeval 3/3 done", counts
    assert lines[-1].startswith("groundeval 3/3 done  1 passed  0 excluded")
    assert "groundeval extraction" in result.stdout.str()  # the summary follows, whole


def _screen(result: pytest.RunResult) -> list[str]:
    rows = render(result.stdout.str())
    # times, run ids and the concurrency reached depend on the machine, not on the progress line
    return [re.sub(r"\d+(\.\d+)?s\b|run: \S+|run record: \S+|reached \d+ in flight", "", row) for row in rows]


def test_the_tty_line_leaves_pytests_output_exactly_as_without_it(pytester: pytest.Pytester, data: Path) -> None:
    for extra in ((), ("-v",), ("-q",)):
        shown = pytester.runpytest(*NAIVE, "--groundeval-progress=tty", "--groundeval-out-dir=a", *extra)
        plain = pytester.runpytest(*NAIVE, "--groundeval-progress=off", "--groundeval-out-dir=b", *extra)
        assert "\x1b[2K" in shown.stdout.str() and "groundeval 3/3 done" in shown.stdout.str()
        assert "\x1b[2K" not in plain.stdout.str()
        assert _screen(shown) == _screen(plain), extra


def test_no_terminal_no_line(pytester: pytest.Pytester, data: Path) -> None:
    result = pytester.runpytest(*NAIVE, "-p", "no:terminal", "--groundeval-progress=tty")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "done" not in result.stdout.str()


def test_under_xdist_the_controller_counts_every_workers_cases(xdist_printing: tuple[Path, pytest.RunResult]) -> None:
    """The shared ``-n 2`` run (``shared_runs.make_printing_run``): a thread-safe agent, four calls ahead per worker.

    It answers "[]" to five cases: Clemente Kreiger (no active medication) passes, the other four fail.
    """
    _, result = xdist_printing
    lines = [ln for ln in result.outlines if ln.startswith("groundeval ") and " done " in ln]
    counts = [ln.split("  ")[0] for ln in lines]
    # Two workers' reports may reach the controller between two prints (a count is skipped); an item
    # whose record was counted already prints no line of its own: each count at most once, rising to 5/5.
    done = [int(c.split()[1].split("/")[0]) for c in counts]
    assert done == sorted(set(done)) and counts[-1] == "groundeval 5/5 done", counts
    # The limit is the sum over the workers that have reported a case: 8 when both did, 4 when xdist
    # handed every case to one worker (it may, with five items and a slow-starting worker).
    assert re.match(r"groundeval 5/5 done  1 passed  0 excluded  calls 0 in flight \(limit (8|4)\)", lines[-1])


def test_the_tty_line_uses_the_terminals_real_width_while_pytest_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under capture pytest's width falls back to 80; the line is cut to the terminal it is drawn on."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    monkeypatch.delenv("COLUMNS", raising=False)
    leader, follower = pty.openpty()
    try:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
        gsession: Any = SimpleNamespace(selected=["x"] * 4, settings=None)
        progress = Progress(gsession, "tty", ticker=False)
        drawn: list[str] = []
        progress._tw = SimpleNamespace(fullwidth=80, width_of_current_line=0, flush=lambda: None)
        progress._write = lambda *a, **k: None
        progress._out = SimpleNamespace(write=drawn.append, flush=lambda: None)
        progress._dup_fd = follower
        assert progress.width() == 200
        progress._draw("x" * 300)
        assert drawn[-1] == "x" * 199
    finally:
        os.close(leader)
        os.close(follower)
