"""The outcome matrix, and the one real ``-n 2`` run of it that several tests assert on.

A pytest-xdist sub-run costs two workers, each importing the stack and collecting every case
again (several CPU-seconds on these machines), so the properties that need a real ``-n 2`` run
share one: ``xdist_matrix`` runs the matrix agent once under ``-n 2`` over the matrix patients
plus three malformed case files, with a Decimal and a datetime in one case's usage, a regression
baseline and ``--groundeval-fail-on-regression``, ``--junitxml`` and ``-W error``. The tests that
read it: every outcome row under xdist (``test_outcomes``), junit and suite properties identical
to a serial run, the run record merged once by the controller, malformed files as collection
errors, non-primitive usage values (``test_plugin``), and the regression gate (``test_gate``).
Runs whose point is different (a worker crash, a signal, a run-stopping error) keep their own
``-n 2`` sub-runs.

The run's controller is in the test process (``tests._xdist.run_xdist``; its workers are real
processes, and every result the tests read crosses from a worker to it), and so are the serial run
of the ``baseline`` agent that records the regression baseline and the matrix's serial twin (the
same arguments without ``-n``: the serial outcome rows, and junit identical with and without
xdist): none of what the tests assert depends on the controller being a process of its own.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests._xdist import run_xdist

from .conftest import FIXTURES, junit_cases, run_records
from .shared_runs import Make, made_once

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
    if cid.startswith("Jayson808"):  # the answers' text only: a user's agent, not a rule-based one (no usage)
        return BASE.run(request).text
    if cid.startswith("Garrett_Thompson"):
        return NAIVE.run(request).text
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


@dataclass(frozen=True)
class SharedRun:
    """The shared ``-n 2`` run and its serial twin: their directory, results, run records, junit cases, and the baseline.

    Both runs are in ``path``: the ``-n 2`` run's record in ``runs/``, its junit in ``xdist.xml``;
    the serial twin's (the same arguments, without ``-n``) in ``serial-runs/`` and ``serial.xml``.
    """

    path: Path
    result: pytest.RunResult
    record: dict[str, Any]
    junit: dict[str, dict[str, str]]
    baseline: dict[str, Any]
    serial: pytest.RunResult
    serial_record: dict[str, Any]
    serial_junit: dict[str, dict[str, str]]


def make_shared_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Make:
    """Write the matrix directory, record the baseline (serial), run the matrix under ``-n 2``, then serially.

    Every run is in-process: the ``-n 2`` run's controller is the test process, its workers are
    real processes.
    """

    def make(base: Path) -> dict[str, pytest.RunResult]:
        from groundeval.tasks.extraction.task import ExtractionTask

        write_matrix_dir(base, malformed=True)
        # each run imports the agent module (the controller to check it), which patches ExtractionTask.truth:
        # put back before the serial twin, and after the test
        truth = ExtractionTask.truth
        monkeypatch.setattr(ExtractionTask, "truth", truth)
        first = pytester.runpytest(*matrix_args("baseline", "--groundeval-out-dir=base"))
        recorded = list((base / "base").glob("*.json"))
        assert len(recorded) == 1, first.stdout.str()
        recorded[0].rename(base / BASELINE)
        result = run_xdist(pytester, *shared_args("xdist.xml"))
        monkeypatch.setattr(ExtractionTask, "truth", truth)
        serial = pytester.runpytest(*shared_args("serial.xml"), "--groundeval-out-dir=serial-runs", "-o", "pythonpath=.")
        return {"n2": result, "serial": serial}

    return make


def shared_run(parent: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> SharedRun:
    """The shared run in ``parent / "xdist-matrix"``, made by the first test (of any process) to ask."""
    run, results = made_once(parent, "xdist-matrix", make_shared_run(pytester, monkeypatch), pytester, monkeypatch)
    (record,) = run_records(run)
    (serial_record,) = [json.loads(p.read_text()) for p in (run / "serial-runs").glob("*.json")]
    return SharedRun(run, results["n2"], record, junit_cases(run / "xdist.xml"), json.loads((run / BASELINE).read_text()),
                     results["serial"], serial_record, junit_cases(run / "serial.xml"))
