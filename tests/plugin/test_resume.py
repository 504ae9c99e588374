"""``--groundeval-resume``: an interrupted run, resumed, gives the record an uninterrupted run gives.

Each interruption is real: a run whose agent hangs on its Nth call (it writes a flag file first) is
killed with SIGKILL (it leaves only its partial file) or stopped with SIGINT (it writes its record,
``complete: false``); the tests wait on the flag file and the partial file's lines, never on a
clock. The resumed run's cases and figures are compared with an uninterrupted run of the same
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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from groundeval.records.run_record import RunRecord
from groundeval.reporting.cases import load_record

RUN_FIELDS = {"run_id", "latency_s", "started_at", "worker", "conversation"}

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
    if hang_at is not None:
        env.update(GE_HANG_AT=str(hang_at), GE_HANG_FLAG=str(base / "hanging.flag"))
    return env


def _run(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", *_args(*args)], cwd=base, env=_env(base, None),
                          capture_output=True, text=True, check=False)


def _interrupt(base: Path, out: str, sig: int, hang_at: int, *args: str) -> None:
    """Start a run that hangs on call ``hang_at``; once it hangs with the cases before it recorded, send ``sig``."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *_args(f"--groundeval-out-dir={out}", *args)], cwd=base,
                            env=_env(base, hang_at), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        flag = base / "hanging.flag"
        while proc.poll() is None and not (flag.exists() and _partial_cases(base / out) >= hang_at - 1):
            proc_wait(proc)
        assert proc.poll() is None, "the run ended before its agent hung"
        proc.send_signal(sig)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    flag.unlink()


def proc_wait(proc: subprocess.Popen[bytes]) -> None:
    """Yield the CPU to the run (a bounded wait on the process itself, not a sleep the test relies on)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=0.05)


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
