"""The outcome matrix, and the one real ``-n 2`` run of it that several tests assert on.

A pytest-xdist sub-run costs a controller and two workers, each importing the stack and
collecting every case again (several CPU-seconds on these machines), so the properties that need
a real ``-n 2`` run share one: ``xdist_matrix`` (session-scoped) runs the matrix agent once under
``-n 2`` over the matrix patients plus three malformed case files, with a Decimal and a datetime
in one case's usage, a regression baseline and ``--groundeval-fail-on-regression``, ``--junitxml``
and ``-W error``. The tests that read it: every outcome row under xdist (``test_outcomes``),
junit and suite properties identical to a serial run, the run record merged once by the
controller, malformed files as collection errors, non-primitive usage values (``test_plugin``),
and the regression gate (``test_gate``). Runs whose point is different (a worker crash, a
signal, a run-stopping error) keep their own ``-n 2`` sub-runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LEAN_ADDOPTS

from .conftest import FIXTURES, junit_cases, run_records

# patient prefix -> the outcome the matrix agent produces there
MATRIX = {
    "Liz_Conn": "passed",  # also reports a Decimal and a datetime in its usage (fault case 16)
    "Garrett_Thompson": "partial",
    "Max_Kris": "failed",
    "Stephen_McLaughlin": "no_answer",  # prose, no JSON
    "Clemente_Kreiger": "no_answer",  # prose on a patient with no medication: must still cost
    "Trey_Berge": "no_answer",  # the agent raised AgentError
    "Beatrice_Aufderhar": "truncated",
    "Bobbie849": "agent_loop",
    "Delores12": "refusal",
    "Demarcus108": "infra_error",
    "Emory494": "case_too_large",
    "Gordon377": "agent_error",  # RuntimeError
    "Herschel574": "agent_error",  # returned an int
    "Jayson808": "harness_error",  # the truth code raised
    "Johnie961": "passed",  # "[]" for a patient with no medication
}

MATRIX_AGENT = '''
import datetime
from decimal import Decimal

from groundeval.agent_io import AgentResult
from groundeval.agents.baselines.extraction import BaselineExtractionAgent, NaiveExtractionAgent
from groundeval.errors import (AgentError, AgentLoopError, CaseTooLargeError, InfraError, RefusalError,
                               TruncatedError)
from groundeval.tasks.extraction.task import ExtractionTask

BASE, NAIVE = BaselineExtractionAgent(), NaiveExtractionAgent()
_truth = ExtractionTask.truth


def _broken_truth(self, case):
    if case.case_id.startswith("Jayson808"):
        raise KeyError("truth bug")
    return _truth(self, case)


ExtractionTask.truth = _broken_truth  # a harness bug on one case


def agent(request):
    cid = request.case_id
    if cid.startswith("Liz_Conn"):
        answer = BASE.run(request)
        return AgentResult(text=answer.text, usage={"cost_usd": Decimal("0.25"),
                                                    "when": datetime.datetime(2026, 1, 1)})
    if cid.startswith("Jayson808"):
        return BASE.run(request)
    if cid.startswith("Garrett_Thompson"):
        return NAIVE.run(request)
    if cid.startswith(("Max_Kris", "Johnie961")):
        return "[]"
    if cid.startswith(("Stephen_McLaughlin", "Clemente_Kreiger")):
        return "I could not find a medication list."
    if cid.startswith("Trey_Berge"):
        raise AgentError(cid + ": cannot answer")
    if cid.startswith("Beatrice_Aufderhar"):
        raise TruncatedError(cid + ": stopped at max_tokens", attempts=1,
                             details={"partial_text": "[{", "usage": {"output_tokens": 7}})
    if cid.startswith("Bobbie849"):
        raise AgentLoopError(cid + ": recursion limit", details={"model_calls": 25, "last_tool": "lookup_rxnorm",
                                                                 "limit": 25})
    if cid.startswith("Delores12"):
        raise RefusalError(cid + ": the model declined")
    if cid.startswith("Demarcus108"):
        raise InfraError(cid + ": overloaded (529) after 3 attempts", attempts=3)
    if cid.startswith("Emory494"):
        raise CaseTooLargeError(cid + ": the case is too large for the model")
    if cid.startswith("Gordon377"):
        raise RuntimeError("agent bug on " + cid)
    return 42
'''

MALFORMED = {
    "broken.json": "{not json",
    "observation.json": '{"resourceType": "Observation"}',
    "nobody.json": '{"resourceType": "Bundle", "entry": []}',
}
"""Case files that are collection errors (with the matrix: 3 errors beside 15 cases)."""

MALFORMED_LINES = [
    "*broken.json: invalid JSON at line 1 column 2*",
    "*nobody.json: the Bundle has no Patient entry*",
    "*observation.json: resourceType is 'Observation', expected 'Bundle'*",
]

BASELINE = "base/baseline.json"
"""The regression baseline of the matrix runs: the ``baseline`` agent's run record, relative to the run directory."""


def matrix_args(agent: str, *extra: str) -> list[str]:
    return [f"--groundeval-agent={agent}", "--groundeval-task=extraction", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", "--junitxml=out.xml", *extra]


def shared_args(junit: str) -> list[str]:
    """The arguments of the shared run (and of its serial twin), apart from ``-n``."""
    return [*matrix_args("matrix_agent:agent", f"--junitxml={junit}"), f"--groundeval-baseline={BASELINE}",
            "--groundeval-fail-on-regression", "-W", "error"]


def prefix_of(case_id: str) -> str:
    return next(p for p in MATRIX if case_id.startswith(p))


def write_matrix_dir(base: Path, malformed: bool = False, prefixes: Iterable[str] = MATRIX) -> Path:
    """``base/data`` with the matrix patients' fixtures (and the malformed files), ``base/matrix_agent.py``."""
    data = base / "data"
    data.mkdir(parents=True, exist_ok=True)
    for prefix in prefixes:
        (src,) = FIXTURES.glob(f"{prefix}_*.json")
        shutil.copy(src, data / src.name)
    if malformed:
        for name, text in MALFORMED.items():
            (data / name).write_text(text)
    (base / "matrix_agent.py").write_text(MATRIX_AGENT)
    return base


def run_pytest(cwd: Path, *args: str, timeout: float = 300) -> pytest.RunResult:
    """``python -m pytest ARGS`` in ``cwd``, in a subprocess, isolated as pytester's subprocess runs are."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "LANGSMITH_", "LANGCHAIN_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTEST_ADDOPTS=LEAN_ADDOPTS, HOME=str(cwd), PY_COLORS="0")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    return pytest.RunResult(proc.returncode, proc.stdout.splitlines(), proc.stderr.splitlines(),
                            time.perf_counter() - start)


@dataclass(frozen=True)
class SharedRun:
    """The shared ``-n 2`` run: its directory, result, run record, junit cases and baseline record."""

    path: Path
    result: pytest.RunResult
    record: dict[str, Any]
    junit: dict[str, dict[str, str]]
    baseline: dict[str, Any]


def make_shared_run(base: Path) -> SharedRun:
    """Write the matrix directory, record the baseline (serial), then run the matrix under ``-n 2``."""
    write_matrix_dir(base, malformed=True)
    first = run_pytest(base, *matrix_args("baseline", "--groundeval-out-dir=base"))
    recorded = list((base / "base").glob("*.json"))
    assert len(recorded) == 1, first.stdout.str()
    recorded[0].rename(base / BASELINE)
    baseline = json.loads((base / BASELINE).read_text())
    result = run_pytest(base, *shared_args("xdist.xml"), "-n", "2")
    (record,) = run_records(base)
    return SharedRun(base, result, record, junit_cases(base / "xdist.xml"), baseline)


def load_or_make_shared_run(base: Path) -> SharedRun:
    """The shared run in ``base``, made there by the first of several processes to ask (a file lock).

    For a session fixture of a suite run under pytest-xdist, whose workers share the parent of
    their temporary directories; the other processes wait for it and read it back.
    """
    import fcntl  # POSIX; this suite's signal and process tests already assume it

    base.mkdir(parents=True, exist_ok=True)
    done = base / "result.json"
    with (base.parent / "xdist-matrix.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shared = make_shared_run(base / "run")
            result = shared.result
            done.write_text(json.dumps({"ret": int(result.ret), "outlines": result.outlines,
                                        "errlines": result.errlines, "duration": result.duration}))
    saved = json.loads(done.read_text())
    run = base / "run"
    result = pytest.RunResult(saved["ret"], saved["outlines"], saved["errlines"], saved["duration"])
    (record,) = run_records(run)
    return SharedRun(run, result, record, junit_cases(run / "xdist.xml"), json.loads((run / BASELINE).read_text()))
