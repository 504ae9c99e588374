"""The example agent runs through the plugin, and its blind spot shows in the scores."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from groundeval import AgentConfig, ExtractionTask
from groundeval.agent_io import AgentRequest

from .test_fhir_cases import CASE_01

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``examples`` is importable from the repository root, as for a user

from examples.custom_agent import CodeableConceptOnlyAgent  # noqa: E402


def test_example_agent_passes_synthea_fixtures_through_the_plugin(pytester: pytest.Pytester) -> None:
    shutil.copy(ROOT / "examples" / "custom_agent.py", pytester.path)
    data = pytester.path / "data"
    data.mkdir()
    for prefix in ("Max_Kris", "Johnie961"):
        (src,) = (ROOT / "fixtures" / "extraction").glob(f"{prefix}_*.json")
        shutil.copy(src, data)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=custom_agent:CodeableConceptOnlyAgent",
        "--groundeval-data-dir=data", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)


def test_example_agent_misses_medication_references(tmp_path: Path) -> None:
    path = tmp_path / "case01.json"
    path.write_text(json.dumps(CASE_01))
    task = ExtractionTask()
    case = task.load_case(path)
    agent = CodeableConceptOnlyAgent(AgentConfig())
    text = agent.run(AgentRequest(case_id=case.case_id, task="extraction", prompt=task.prompt(case))).text
    score = task.score(case, task.truth(case), task.parse(case, text))
    assert score.metrics["recall"] == pytest.approx(0.25) and score.outcome == "partial"
