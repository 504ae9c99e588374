"""Agents that tell a counterfactual twin from its original without the record score no record sensitivity.

Each cheating agent answers from memory (the ``priors`` control's remembered list for the patient)
unless something other than the record makes it suspect a twin, and then reads the record (the
``baseline`` agent's answer). A channel that tells a twin apart would give it the baseline's
record_sensitivity while it never reads most originals; closed, it scores what the memorising
control does. The channels: the environment (``PYTEST_CURRENT_TEST`` names the running item),
call order (a case id or a patient seen before, in this process or, through files, in any), and
the reverse rule (read only the first call of a case: twins that come first are tracked, those
that come later are not). Each runs serially, at ``--groundeval-concurrency 4`` and, where a
process boundary matters, under ``-n 2``, through the plugin on packaged cases of four patients
(nine case files, their variants included) and their twins.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests._paths import REPO
from tests._xdist import run_xdist

FIXTURES = REPO / "fixtures" / "extraction"
PATIENTS = ("Trey_Berge", "Max_Kris", "Liz_Conn", "Beatrice_Aufderhar")
SEED = "--groundeval-twin-seed=2"
"""An order in which some patients' first call is a twin whose truth changed, and others' is an original."""

CHEATS = '''
import hashlib
import os
import threading
from pathlib import Path

from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agents.baselines.priors import PriorsExtractionAgent, _patient_id

SEEN = Path(__file__).resolve().parent / "seen"


class _Cheat:
    """Answers from memory unless ``suspects(request)``; then reads the record."""

    tasks = frozenset({"extraction"})
    model = None
    thread_safe = True

    def __init__(self, config=None):
        self.reader, self.memory = BaselineExtractionAgent(), PriorsExtractionAgent()
        self.lock, self.seen = threading.Lock(), set()

    def warmup(self):
        self.reader.warmup()
        self.memory.warmup()

    def first_time(self, key):
        with self.lock:
            new = key not in self.seen
            self.seen.add(key)
            return new

    def run(self, request):
        return (self.reader if self.suspects(request) else self.memory).run(request)


class EnvCheat(_Cheat):
    name = "env-cheat"

    def suspects(self, request):
        return "[cf-" in os.environ.get("PYTEST_CURRENT_TEST", "")


class SeenCaseCheat(_Cheat):
    name = "seen-case-cheat"

    def suspects(self, request):
        return not self.first_time(request.case_id)


class SeenPatientCheat(_Cheat):
    name = "seen-patient-cheat"

    def suspects(self, request):
        return not self.first_time(_patient_id(request))


class SeenAnywhereCheat(_Cheat):
    """A case id or a patient seen before by any process of the run (a file per key, created atomically)."""

    name = "seen-anywhere-cheat"

    def suspects(self, request):
        SEEN.mkdir(exist_ok=True)
        seen = False
        for key in (request.case_id, _patient_id(request)):
            try:
                (SEEN / hashlib.sha256(str(key).encode()).hexdigest()).open("x").close()
            except FileExistsError:
                seen = True
        return seen or "[cf-" in os.environ.get("PYTEST_CURRENT_TEST", "")


class FirstOnlyCheat(_Cheat):
    """The reverse rule: read the first call of a case, answer later ones from memory."""

    name = "first-only-cheat"

    def suspects(self, request):
        return self.first_time(request.case_id)
'''


@pytest.fixture
def data(pytester: pytest.Pytester) -> Path:
    dest = pytester.path / "data"
    dest.mkdir()
    for patient in PATIENTS:
        for src in FIXTURES.glob(f"*{patient}_*.json"):
            shutil.copy(src, dest / src.name)
    pytester.makepyfile(cheats=CHEATS)
    return dest


def _sensitivity(pytester: pytest.Pytester, agent: str, *extra: str, xdist: bool = False) -> dict[str, Any]:
    """The run's aggregate metrics (record_sensitivity and its two orders) for ``agent``."""
    out = f"runs-{agent.replace(':', '-')}-{len(list(pytester.path.glob('runs-*')))}"
    args = ("--groundeval-task=extraction", f"--groundeval-agent={agent}", "--groundeval-data-dir=data",
            "--groundeval-counterfactual", f"--groundeval-out-dir={out}", "-p", "no:cacheprovider", "-p",
            "no:randomly", SEED, *extra)
    shutil.rmtree(pytester.path / "seen", ignore_errors=True)
    result = run_xdist(pytester, *args) if xdist else pytester.runpytest(*args)
    (path,) = (pytester.path / out).glob("*.json")
    record = json.loads(path.read_text())
    assert record["aggregate"]["counted"] == 9 and not record["collection_errors"], result.stdout.str()[-2000:]
    metrics: dict[str, Any] = record["aggregate"]["metrics"]
    assert metrics.get("record_sensitivity") is not None, record["aggregate"]["statements"]
    return metrics


_CONTROL: list[float] = []  # the same cases and seed in every test: measured once


@pytest.fixture
def control(pytester: pytest.Pytester, data: Path) -> float:
    """The memorising control's record sensitivity (it never reads the record); the honest agent scores 1.000."""
    if not _CONTROL:
        assert _sensitivity(pytester, "baseline", "--groundeval-concurrency=1")["record_sensitivity"] == 1.0
        _CONTROL.append(_sensitivity(pytester, "priors", "--groundeval-concurrency=1")["record_sensitivity"])
    assert _CONTROL[0] == 0.0
    return _CONTROL[0]


@pytest.mark.parametrize("cheat", ["EnvCheat", "SeenCaseCheat", "SeenPatientCheat", "FirstOnlyCheat"])
def test_a_cheat_scores_no_more_than_the_memorising_control_serially(
    pytester: pytest.Pytester, control: float, cheat: str,
) -> None:
    got = _sensitivity(pytester, f"cheats:{cheat}", "--groundeval-concurrency=1")
    assert got["record_sensitivity"] <= control, got
    if cheat != "EnvCheat":  # the order is what it cheats by: the figure of the other order shows it reading
        assert max(got["record_sensitivity_first_call"], got["record_sensitivity_later_call"]) == 1.0, got


@pytest.mark.parametrize("cheat", ["EnvCheat", "SeenCaseCheat", "SeenPatientCheat"])
def test_a_cheat_scores_no_more_than_the_memorising_control_with_calls_made_ahead_in_threads(
    pytester: pytest.Pytester, control: float, cheat: str,
) -> None:
    got = _sensitivity(pytester, f"cheats:{cheat}", "--groundeval-concurrency=4")
    assert got["record_sensitivity"] <= control, got


def test_a_cheat_across_xdist_workers_scores_no_more_than_the_memorising_control(
    pytester: pytest.Pytester, control: float,
) -> None:
    """The environment, and a case id or patient seen by either worker (through files), under ``-n 2``."""
    got = _sensitivity(pytester, "cheats:SeenAnywhereCheat", "--groundeval-concurrency=1", xdist=True)
    assert got["record_sensitivity"] <= control, got
    assert got["record_sensitivity_later_call"] == 1.0, got
