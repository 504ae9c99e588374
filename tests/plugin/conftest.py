"""Helpers for running the plugin under pytester on real fixtures with a scripted agent."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from groundeval.testing.junit import junit_cases as junit_cases  # re-exported for the tests here
from tests._paths import REPO

if TYPE_CHECKING:
    from .matrix import SharedRun

FIXTURES = REPO / "fixtures" / "extraction"
PICK = ("Liz_Conn", "Clemente_Kreiger", "Garrett_Thompson", "Max_Kris", "Stephen_McLaughlin")

# Scripted agent module written into each pytester directory. Its behaviour per patient:
# Liz: baseline (pass); Clemente: fenced "[]" (pass, format_ok False); Garrett: naive (partial);
# Max_Kris: empty list (fail); Stephen: raises (pytest error).
AGENT_MODULE = '''
from groundeval.agents.baselines.extraction import BaselineExtractionAgent, NaiveExtractionAgent

BASE, NAIVE = BaselineExtractionAgent(), NaiveExtractionAgent()
PREFIXES = ("Liz_Conn", "Clemente_Kreiger", "Garrett_Thompson", "Max_Kris", "Stephen_McLaughlin")


def agent(request):
    name = next(p for p in PREFIXES if request.case_id.startswith(p))
    if name == "Liz_Conn":  # the answers' text only: this is a user's agent, not a rule-based one (no usage)
        return BASE.run(request).text
    if name == "Clemente_Kreiger":
        return "Here you are:\\n```json\\n[]\\n```"
    if name == "Garrett_Thompson":
        return NAIVE.run(request).text
    if name == "Max_Kris":
        return "[]"
    raise RuntimeError("scripted agent crashed on " + request.case_id)
'''


@pytest.fixture
def eval_dir(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    """A pytester directory with five real fixtures in ``data/`` and ``scripted_agent.py``."""
    data = copy_fixtures(pytester.path / "data", PICK)
    pytester.makepyfile(scripted_agent=AGENT_MODULE)
    pytester.syspathinsert()
    return data


def eval_args(*extra: str) -> list[str]:
    return ["--groundeval-task=extraction", "--groundeval-agent=scripted_agent:agent",
            "--groundeval-data-dir=data", "-p", "no:cacheprovider", *extra]


def run_records(base: Path) -> list[dict[str, Any]]:
    found = [json.loads(p.read_text()) for p in (base / "runs").glob("*.json")]
    return sorted(found, key=lambda r: r["started_at"])  # oldest first (run ids of one second are not)


@pytest.fixture
def xdist_matrix(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> SharedRun:
    """The one shared ``-n 2`` run of the outcome matrix and its serial twin (``matrix.SharedRun``; see ``matrix.py``).

    Made once per suite run, by the first test that asks (``shared_runs.made_once``); when this
    suite itself runs under xdist, the tests that read it land on both workers, and the first to
    ask makes it in a directory the workers share.
    """
    from .matrix import shared_run
    from .shared_runs import shared_parent

    return shared_run(shared_parent(tmp_path_factory, worker_id), pytester, monkeypatch)


@pytest.fixture
def xdist_printing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> tuple[Path, pytest.RunResult]:
    """The shared ``-n 2`` run of the printing agent (``shared_runs.make_printing_run``): its directory and result."""
    from .shared_runs import made_once, make_printing_run, shared_parent

    run, results = made_once(shared_parent(tmp_path_factory, worker_id), "xdist-printing",
                             make_printing_run(monkeypatch, pytester), pytester, monkeypatch)
    return run, results["n2"]


@pytest.fixture
def xdist_trials(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> tuple[Path, dict[str, pytest.RunResult]]:
    """The shared trials runs, serial and ``-n 2`` (``shared_runs.make_trials_run``): their directory and results."""
    from .shared_runs import made_once, make_trials_run, shared_parent

    return made_once(shared_parent(tmp_path_factory, worker_id), "xdist-trials", make_trials_run(pytester),
                     pytester, monkeypatch)
