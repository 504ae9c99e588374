"""Helpers for the cache and replay tests: a call-counting scripted agent in a pytester directory."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

PICK = ("Liz_Conn", "Clemente_Kreiger", "Garrett_Thompson", "Max_Kris", "Stephen_McLaughlin", "Johnie961")

# A ScriptedAgent whose script logs every call to calls.log (one line per call, appended, so calls
# made by several xdist workers add up) and answers like the rule-based baseline, except:
# Max_Kris stops at max_tokens (TruncatedError: an agent-behaviour failure, cached), Stephen's API
# is overloaded (InfraError: never cached).
COUNTING_AGENT = '''
from pathlib import Path

from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.errors import InfraError, TruncatedError
from groundeval.testing import ScriptedAgent

BASE = BaselineExtractionAgent()
LOG = Path(__file__).with_name("calls.log")


def answer(request):
    with LOG.open("a", encoding="utf-8") as fh:
        fh.write(f"{request.case_id} {request.trial}\\n")
    if request.case_id.startswith("Max_Kris"):
        raise TruncatedError("stopped at max_tokens", attempts=1, details={"partial_text": "[{\\"rxnorm", "usage": {"output_tokens": 7}})
    if request.case_id.startswith("Stephen_McLaughlin"):
        raise InfraError("529 overloaded after 3 attempts", attempts=3)
    return BASE.run(request).text


agent = ScriptedAgent(answer, name="counting", model="scripted-1")
'''


@pytest.fixture
def counting_dir(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    """A pytester directory with six real fixtures in ``data/`` and ``counting_agent.py``."""
    copy_fixtures(pytester.path / "data", PICK)
    pytester.makepyfile(counting_agent=COUNTING_AGENT)
    pytester.syspathinsert()
    return pytester.path


def args(*extra: str, agent: str = "counting_agent:agent") -> list[str]:
    return ["--groundeval-task=extraction", f"--groundeval-agent={agent}", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", "-p", "no:randomly", *extra]


def calls(base: Path) -> list[str]:
    log = base / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def junit_cases(path: Path) -> dict[str, dict[str, str]]:
    """testcase name -> {property name: value}."""
    return {
        str(case.get("name")): {str(p.get("name")): str(p.get("value")) for p in case.iter("property")}
        for case in ET.parse(path).getroot().iter("testcase")
    }


def records(base: Path) -> list[dict[str, Any]]:
    """Every run record under ``base/runs``, oldest first."""
    found = [json.loads(p.read_text(encoding="utf-8")) for p in (base / "runs").glob("*.json")]
    return sorted(found, key=lambda r: r["started_at"])  # run ids of one second sort by their random part
