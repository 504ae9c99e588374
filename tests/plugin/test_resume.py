"""``--groundeval-resume``: an interrupted run, resumed, gives the record an uninterrupted run gives.

Each interruption is real: a run whose agent hangs on its Nth call (it writes a flag file first) is
killed with SIGKILL (it leaves only its partial file) or stopped with SIGINT (it writes its record,
``complete: false``); the tests wait on the flag file and the partial file's lines, never on a
clock. Each run is a new interpreter that takes the default SIGINT handler first (a suite started
with SIGINT ignored, as a background job of a script is, would hand that on, and the run would
rightly ignore the signal), in a process group of its own, and is killed, failing the test, if it
has not ended after ``RUN_TIMEOUT_S``. The resumed run's cases and figures are compared with an uninterrupted run of the same
cases, field by field, but for what differs between any two runs (when a case ran, its run id,
worker and conversation timings).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from groundeval.records.run_record import RunRecord
from groundeval.reporting.cases import load_record

RUN_FIELDS = {"run_id", "latency_s", "started_at", "worker", "conversation"}

RUN_TIMEOUT_S = 240
"""The longest a run may take before it is killed and the test fails (a safety net, not a timing assertion)."""

PYTEST_DEFAULT_SIGINT = (
    "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.exit(pytest.console_main())"
)
"""``python -m pytest`` with the default SIGINT handler, whatever the suite's own disposition was."""

HANGING_AGENT = '''
import os
import pathlib
import threading

from groundeval.agents.baselines.extraction import BaselineExtractionAgent

BASE = BaselineExtractionAgent()
CALLS = []


def agent(request):
    """The baseline's answer ("[]" for Max_Kris: a failure); hangs on call GE_HANG_AT after writing GE_HANG_FLAG."""
    CALLS.append(request.case_id)
    hang_at = os.environ.get("GE_HANG_AT")
    if hang_at and len(CALLS) == int(hang_at):
        pathlib.Path(os.environ["GE_HANG_FLAG"]).write_text(request.case_id)
        threading.Event().wait()  # until the test kills or interrupts the run
    if request.case_id.startswith("Max_Kris"):
        return "[]"
    return BASE.run(request).text
'''

PICK = ("Liz_Conn", "Clemente_Kreiger", "Garrett_Thompson", "Max_Kris", "Stephen_McLaughlin", "Beatrice")


@pytest.fixture
def resume_dir(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    copy_fixtures(pytester.path / "data", PICK)
    pytester.makepyfile(hanging_agent=HANGING_AGENT)
    return pytester.path


def _args(*extra: str) -> list[str]:
    return ["-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:langsmith_plugin", "-p", "no:anyio", "-q",
            "--groundeval-task=extraction", "--groundeval-agent=hanging_agent:agent", "--groundeval-data-dir=data",
            "--groundeval-concurrency=1", *extra]


def _env(base: Path, hang_at: int | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(base), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_ADDOPTS", None)
    for name in [n for n in env if n.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))]:
        del env[name]  # this suite's own worker and test, not the run's
    if hang_at is not None:
        env.update(GE_HANG_AT=str(hang_at), GE_HANG_FLAG=str(base / "hanging.flag"))
    return env


class _Run:
    """``pytest ARGS`` in a new interpreter with the default SIGINT handler, in a process group of its own.

    Its output goes to files (a pipe nobody reads while the test waits could fill up and stall it).
    """

    def __init__(self, base: Path, args: list[str], hang_at: int | None) -> None:
        self.out = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish
        self.err = tempfile.TemporaryFile()  # noqa: SIM115
        self.deadline = time.monotonic() + RUN_TIMEOUT_S  # a safety net for a broken run, not a timing assertion
        self.proc = subprocess.Popen([sys.executable, "-c", PYTEST_DEFAULT_SIGINT, *_args(*args)], cwd=base,
                                     env=_env(base, hang_at), stdout=self.out, stderr=self.err,
                                     start_new_session=True)

    def kill(self) -> None:
        """SIGKILL the run and its xdist workers (its process group), and reap it."""
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.kill()
        self.proc.wait()

    def output(self) -> tuple[str, str]:
        """What the run wrote so far to stdout and stderr."""
        texts = []
        for stream in (self.out, self.err):
            stream.seek(0)
            texts.append(stream.read().decode(errors="replace"))
        return texts[0], texts[1]

    def hung(self, what: str) -> None:
        """Kill the run and fail the test: ``what`` did not happen before the deadline."""
        self.kill()
        out, err = self.output()
        pytest.fail(f"{what} within {RUN_TIMEOUT_S} s: the run was killed\n{out}\n{err}")

    def tick(self) -> None:
        """Yield the CPU to the run (a bounded wait on the process itself); past the deadline, ``hung``."""
        if time.monotonic() > self.deadline:
            self.hung("the run never reached the state the test waits for")
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=0.05)

    def finish(self, what: str) -> subprocess.CompletedProcess[str]:
        """Wait for the run to end (until the deadline; past it, ``hung``); its exit status and output."""
        try:
            self.proc.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.hung(f"{what} did not end")
        finally:
            if self.proc.poll() is None:
                self.kill()
        out, err = self.output()
        self.out.close()
        self.err.close()
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)


def _run(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _Run(base, list(args), None).finish(f"the run {' '.join(args)}")


def _interrupt(base: Path, out: str, sig: int, hang_at: int, *args: str) -> None:
    """Start a run that hangs on call ``hang_at``; once it hangs with the cases before it recorded, send ``sig``."""
    run = _Run(base, [f"--groundeval-out-dir={out}", *args], hang_at)
    flag = base / "hanging.flag"
    try:
        while run.proc.poll() is None and not (flag.exists() and _partial_cases(base / out) >= hang_at - 1):
            run.tick()
        if run.proc.poll() is not None:
            stdout, stderr = run.output()
            pytest.fail(f"the run ended before its agent hung\n{stdout}\n{stderr}")
        run.proc.send_signal(sig)
        run.finish(f"the run sent {signal.Signals(sig).name} while its agent hung")
    finally:
        if run.proc.poll() is None:
            run.kill()
    flag.unlink()


def _partial_cases(out: Path) -> int:
    found = list(out.glob("*.partial.jsonl"))
    if not found:
        return 0
    return max(0, found[0].read_bytes().count(b"\n") - 1)  # the header line is not a case


def _view(record: RunRecord) -> list[dict[str, Any]]:
    return sorted((c.model_dump(mode="json", exclude=RUN_FIELDS) for c in record.cases), key=lambda c: c["nodeid"])


def _only(folder: Path, pattern: str = "*.json") -> Path:
    (path,) = folder.glob(pattern)
    return path


def _same_run(resumed: RunRecord, whole: RunRecord) -> None:
    assert _view(resumed) == _view(whole)
    assert resumed.aggregate == whole.aggregate
    assert resumed.complete and resumed.exit_status == whole.exit_status
    assert {k: v for k, v in resumed.settings.items() if k != "workers"} == \
        {k: v for k, v in whole.settings.items() if k != "workers"}
    assert {c.run_id for c in resumed.cases} == {resumed.run_id}


def test_a_killed_run_resumed_from_its_partial_file_gives_the_uninterrupted_record(resume_dir: Path) -> None:
    whole = _run(resume_dir, "--groundeval-out-dir=whole")
    assert whole.returncode == 1, whole.stdout
    _interrupt(resume_dir, "killed", signal.SIGKILL, 4)
    partial = _only(resume_dir / "killed", "*.partial.jsonl")
    assert not list((resume_dir / "killed").glob("*.json"))  # a killed run leaves only its partial file
    header = json.loads(partial.read_text().splitlines()[0])
    run_id = header["run"]["run_id"]
    resumed = _run(resume_dir, "--groundeval-out-dir=killed", f"--groundeval-resume={partial}")
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "3 deselected" in resumed.stdout  # the three cases finished before the kill did not run again
    record = load_record(_only(resume_dir / "killed"))
    assert record.run_id == run_id and not partial.exists()
    _same_run(record, load_record(_only(resume_dir / "whole")))


def test_an_interrupted_run_resumed_from_its_record_under_xdist_gives_the_uninterrupted_record(
    resume_dir: Path,
) -> None:
    pytest.importorskip("xdist")
    whole = _run(resume_dir, "--groundeval-out-dir=whole")
    _interrupt(resume_dir, "stopped", signal.SIGINT, 3)
    stopped = _only(resume_dir / "stopped")
    first = load_record(stopped)
    assert not first.complete and any(c.outcome == "not_run" for c in first.cases)
    resumed = _run(resume_dir, "--groundeval-out-dir=stopped", f"--groundeval-resume={stopped}", "-n", "2")
    assert resumed.returncode == whole.returncode, resumed.stdout + resumed.stderr
    record = load_record(_only(resume_dir / "stopped"))
    assert record.run_id == first.run_id
    _same_run(record, load_record(_only(resume_dir / "whole")))


def test_trials_and_twins_resume_under_the_interrupted_runs_twin_order(resume_dir: Path) -> None:
    """No --groundeval-twin-seed: the seed is drawn from the run id, which the resumed run takes over."""
    args = ("--groundeval-trials=2", "--groundeval-counterfactual")
    _interrupt(resume_dir, "killed", signal.SIGKILL, 7, *args)
    partial = _only(resume_dir / "killed", "*.partial.jsonl")
    seed = json.loads(partial.read_text().splitlines()[0])["run"]["settings"]["twin_seed"]
    resumed = _run(resume_dir, "--groundeval-out-dir=killed", f"--groundeval-resume={partial}", *args)
    assert resumed.returncode in (0, 1), resumed.stdout + resumed.stderr
    record = load_record(_only(resume_dir / "killed"))
    whole = _run(resume_dir, "--groundeval-out-dir=whole", f"--groundeval-twin-seed={seed}", *args)
    assert whole.returncode == resumed.returncode
    reference = load_record(_only(resume_dir / "whole"))
    assert record.settings["twin_seed"] == seed
    assert _view(record) == _view(reference)
    assert record.aggregate == reference.aggregate


def test_a_different_setting_is_refused_by_name_with_the_fix(resume_dir: Path) -> None:
    _interrupt(resume_dir, "killed", signal.SIGKILL, 2)
    partial = _only(resume_dir / "killed", "*.partial.jsonl")
    result = _run(resume_dir, "--groundeval-out-dir=killed", f"--groundeval-resume={partial}", "--groundeval-trials=2")
    assert result.returncode == 4  # a usage error
    assert "--groundeval-trials: 1 then, 2 now" in result.stderr
    assert "resume it with the same options it had" in result.stderr
    assert partial.exists() and not list((resume_dir / "killed").glob("*.json"))  # nothing was touched


def test_a_file_that_is_not_an_interrupted_run_is_refused(resume_dir: Path) -> None:
    (resume_dir / "notes.json").write_text('{"hello": 1}')
    result = _run(resume_dir, "--groundeval-resume=notes.json")
    assert result.returncode == 4 and "not a groundeval run record" in result.stderr
    whole = _run(resume_dir, "--groundeval-out-dir=whole")
    assert whole.returncode == 1
    result = _run(resume_dir, f"--groundeval-resume={_only(resume_dir / 'whole')}")
    assert result.returncode == 4 and "that run is complete" in result.stderr


def test_a_stop_file_left_by_the_killed_run_does_not_stop_its_resumed_workers(resume_dir: Path) -> None:
    """Workers start no case once ``<run id>.stop`` exists; the resumed run takes the run id, so it clears it first."""
    pytest.importorskip("xdist")
    _interrupt(resume_dir, "killed", signal.SIGKILL, 2)
    partial = _only(resume_dir / "killed", "*.partial.jsonl")
    run_id = json.loads(partial.read_text().splitlines()[0])["run"]["run_id"]
    (resume_dir / "killed" / f"{run_id}.stop").touch()  # as a signal the killed controller got would leave it
    resumed = _run(resume_dir, "--groundeval-out-dir=killed", f"--groundeval-resume={partial}", "-n", "2")
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    record = load_record(_only(resume_dir / "killed"))
    assert record.complete and not any(c.outcome == "not_run" for c in record.cases)
