"""Sub-runs that several tests assert on, each made once per suite run (also under pytest-xdist).

A ``-n 2`` sub-run costs two worker processes, each importing the stack and collecting the cases
again (a few CPU-seconds), so where several tests check different properties of runs that can be
one, they read one: the first test to ask makes it, in a directory that every later test (in this
process, or in another worker of a suite run under pytest-xdist) reads it from. The runs are
in-process (their controller is the test process; ``tests._xdist.run_xdist``), so they are made
with the asking test's ``pytester`` and ``monkeypatch``, in the shared directory.

The runs shared here besides the outcome matrix (``matrix.py``):

* ``make_printing_run``: an agent that prints during calls made ahead, under ``-n 2`` with the
  plain progress lines on: its output lands in its own case's report (``test_prefetch_output``),
  and the controller's status line counts every worker's cases (``test_progress``).
* ``make_trials_run``: three trials per case with one failed trial, calls made ahead on each
  worker, under ``-n 2`` and serially: the controller applies the min pass rate
  (``test_trials_plugin``), and the record matches the serial run's (``test_concurrency``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from tests._xdist import run_xdist

from .conftest import FIXTURES

Make = Callable[[Path], dict[str, pytest.RunResult]]
"""Makes the runs in the directory given (the current directory meanwhile); returns their results by name."""


def shared_parent(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The temporary directory this process shares with the other workers of this suite run (if any).

    Args:
        tmp_path_factory: The session's factory.
        worker_id: ``"master"`` in a serial suite run, else this xdist worker's id.
    """
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent  # xdist: the workers' directories are its children


def made_once(
    parent: Path, name: str, make: Make, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, dict[str, pytest.RunResult]]:
    """The runs of ``make`` in ``parent / name``, made there by the first caller of any process.

    The first caller makes them, with the current directory ``parent / name`` meanwhile (then
    ``pytester.path`` again), and saves their results beside them; every later caller reads them
    back. A file lock makes the others wait while they are made. Runs that failed to be made leave
    nothing behind: the next caller makes them again, not on top of a half-made directory.

    Returns:
        The directory of the runs, and their results by name.
    """
    import fcntl  # POSIX; this suite's signal and process tests already assume it

    run = parent / name
    done = parent / f"{name}.json"
    with (parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            run.mkdir(parents=True, exist_ok=True)
            monkeypatch.chdir(run)
            try:
                results = make(run)
            except BaseException:
                shutil.rmtree(run, ignore_errors=True)  # the next caller makes the runs again from nothing
                raise
            finally:
                monkeypatch.chdir(pytester.path)
            done.write_text(json.dumps({key: {"ret": int(r.ret), "outlines": r.outlines, "errlines": r.errlines,
                                              "duration": r.duration} for key, r in results.items()}))
    saved = json.loads(done.read_text())
    return run, {key: pytest.RunResult(r["ret"], r["outlines"], r["errlines"], r["duration"])
                 for key, r in saved.items()}


def copy_cases(data: Path, prefixes: Iterable[str]) -> Path:
    """``data`` (created) with the extraction fixtures whose names start with each prefix."""
    data.mkdir(parents=True, exist_ok=True)
    for prefix in prefixes:
        (src,) = FIXTURES.glob(f"{prefix}_*.json")
        (data / src.name).write_bytes(src.read_bytes())
    return data


FIVE = ("Liz_Conn", "Clemente_Kreiger", "Garrett_Thompson", "Max_Kris", "Stephen_McLaughlin")

SECRET = "sk-printed-0123456789abcdef"
"""The printing agent's key (``PRINTING_AGENT_API_KEY``), which it prints; never shown unredacted."""

PRINTING_AGENT = f'''
import sys


class Printing:
    name = "printing"
    thread_safe = True

    def run(self, request):
        print("out from " + request.case_id + " key=" + "{SECRET}")
        print("err from " + request.case_id, file=sys.stderr)
        return "[]"


agent = Printing()
'''


def printing_args(capture: str) -> list[str]:
    """The printing agent's run: four calls ahead, ``-rA``, every case's output in junit."""
    return ["--groundeval-task=extraction", "--groundeval-agent=printing_agent:agent", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", "--groundeval-concurrency=4", "-rA", "-o", "junit_logging=all",
            "--junitxml=out.xml", "-p", "no:randomly", f"--capture={capture}"]


def make_printing_run(monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester) -> Make:
    """The printing agent over five cases under ``-n 2``, with the plain progress lines (result ``"n2"``)."""

    def make(base: Path) -> dict[str, pytest.RunResult]:
        import sys

        from groundeval.plugin.thread_output import _Router

        copy_cases(base / "data", FIVE)
        (base / "printing_agent.py").write_text(PRINTING_AGENT)
        monkeypatch.setenv("PRINTING_AGENT_API_KEY", SECRET)
        result = run_xdist(pytester, *printing_args("fd"), "--groundeval-progress=plain",
                           "--groundeval-progress-every=0")
        assert not isinstance(sys.stdout, _Router) and not isinstance(sys.stderr, _Router)  # the streams were put back
        return {"n2": result}

    return make


TRIALS_AGENT = '''
import random
import threading

from groundeval.agents.baselines.extraction import BaselineExtractionAgent

BASE = BaselineExtractionAgent()


def agent(request):
    """The baseline's answer after a random short wait, except a wrong "[]" on Liz_Conn's first trial."""
    threading.Event().wait(random.random() * 0.02)
    if request.case_id.startswith("Liz_Conn") and request.trial == 0:
        return "[]"  # Liz has active medications: a failed trial, one of three
    return BASE.run(request).text
'''


def trials_args(concurrency: int, junit: str) -> list[str]:
    """Three trials per case, a min pass rate of 0.6 (Liz's 2 of 3 meets it), ``concurrency`` calls ahead."""
    return ["--groundeval-task=extraction", "--groundeval-agent=trials_agent:agent", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", "--groundeval-trials=3", "--groundeval-min-pass-rate=0.6",
            f"--groundeval-concurrency={concurrency}", f"--junitxml={junit}"]


def make_trials_run(pytester: pytest.Pytester) -> Make:
    """The trials agent over five cases, serially one call at a time (``"serial"``), and under ``-n 2`` (``"n2"``).

    The serial run's record is in ``serial-runs/``, its junit in ``serial.xml``; the ``-n 2`` run's
    (eight calls ahead per worker) in ``runs/`` and ``xdist.xml``.
    """

    def make(base: Path) -> dict[str, pytest.RunResult]:
        copy_cases(base / "data", FIVE)
        (base / "trials_agent.py").write_text(TRIALS_AGENT)
        serial = pytester.runpytest(*trials_args(1, "serial.xml"), "--groundeval-out-dir=serial-runs",
                                    "-o", "pythonpath=.")
        return {"serial": serial, "n2": run_xdist(pytester, *trials_args(8, "xdist.xml"))}

    return make
