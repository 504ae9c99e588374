"""examples/conditions_task: a third task from outside, on groundeval's public API only.

Proves the seams: it runs under ``--groundeval-task=examples.conditions_task:ConditionsTask``
with its baseline agent and with the real Claude agent over a scripted HTTP transport, and its
reports can reach an xdist controller; its junit properties and run record have the shape of the built-in
tasks'.
"""

from __future__ import annotations

import ast
import copy
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests._paths import REPO

ROOT = REPO
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``examples`` is importable from the repository root, as for a user

from examples.conditions_task import (  # noqa: E402
    BaselineConditionsAgent,
    ConditionsTask,
    NaiveConditionsAgent,
    active_conditions,
)
from groundeval import AgentRequest, DatasetError  # noqa: E402
from groundeval.tasks import make_task  # noqa: E402
from tests._fakes.fake_anthropic import FAKE_KEY, install  # noqa: E402
from tests._xdist import assert_reports_cross_to_the_controller  # noqa: E402

EXAMPLE = ROOT / "examples" / "conditions_task"
FIXTURES = EXAMPLE / "fixtures"
SPEC = "examples.conditions_task:ConditionsTask"
BASELINE = "examples.conditions_task:BaselineConditionsAgent"
PICK = ("Beatrice_Aufderhar", "Tarra676_Wisoky380", "Max_Kris", "Trey_Berge")
CLINICAL = "http://terminology.hl7.org/CodeSystem/condition-clinical"
VERIFICATION = "http://terminology.hl7.org/CodeSystem/condition-ver-status"


def junit_cases(path: Path) -> dict[str, dict[str, str]]:
    """testcase name -> {property name: value} (plus '_result': passed/failure/error)."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        props = {str(p.get("name")): str(p.get("value")) for p in case.iter("property")}
        found = [tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None]
        props["_result"] = found[0] if found else "passed"
        cases[str(case.get("name"))] = props
    return cases


def run_records(runs: Path) -> list[dict[str, Any]]:
    found = [json.loads(p.read_text()) for p in runs.glob("*.json")]
    return sorted(found, key=lambda r: r["started_at"])  # oldest first (run ids of one second are not)


def _fixture(prefix: str) -> Path:
    (path,) = FIXTURES.glob(f"{prefix}_*.json")
    return path


def _bundle() -> dict[str, Any]:
    bundle: dict[str, Any] = json.loads(_fixture("Max_Kris").read_text())
    return bundle


def _condition(code: str, clinical: str | None = "active", verification: str | None = "confirmed",
               subject: str = "") -> dict[str, Any]:
    bundle = _bundle()
    patient = next(e for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")
    resource: dict[str, Any] = {
        "resourceType": "Condition", "id": f"c{code}",
        "code": {"coding": [{"system": "http://example.org/local", "code": "L1"},
                            {"system": "http://snomed.info/sct", "code": code}]},
        "subject": {"reference": subject or patient["fullUrl"]},
    }
    if clinical is not None:
        resource["clinicalStatus"] = {"coding": [{"system": CLINICAL, "code": clinical}]}
    if verification is not None:
        resource["verificationStatus"] = {"coding": [{"system": VERIFICATION, "code": verification}]}
    return {"fullUrl": f"urn:uuid:c{code}", "resource": resource}


# -- the truth rule -------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("entry", "counted"),
    [
        (_condition("1001"), True),
        (_condition("1002", clinical="recurrence"), True),
        (_condition("1003", clinical="relapse", verification="provisional"), True),
        (_condition("1004", clinical="resolved"), False),
        (_condition("1005", clinical="remission"), False),
        (_condition("1006", verification="refuted"), False),
        (_condition("1007", verification="entered-in-error"), False),
        (_condition("1008", verification=None), True),  # no verificationStatus: not refuted
        (_condition("1009", clinical=None), False),  # no clinicalStatus: not known to be active
        (_condition("1010", subject="Patient/someone-else"), False),
    ],
)
def test_truth_is_active_not_refuted_conditions_of_the_patient(entry: dict[str, Any], counted: bool) -> None:
    bundle = _bundle()
    before = active_conditions(bundle, "b.json")
    bundle["entry"].append(entry)
    code = entry["resource"]["code"]["coding"][1]["code"]
    after = active_conditions(bundle, "b.json")
    assert (code in after) is counted
    assert "L1" not in after  # only SNOMED CT codings, picked by system
    assert set(after) - {code} == set(before)


def test_every_fixture_loads_and_the_baseline_is_perfect_while_naive_is_not() -> None:
    task = make_task(SPEC)
    naive_f1: list[float] = []
    for path in task.case_files(FIXTURES):
        case = task.load_case(path)
        truth = task.truth(case)
        request = AgentRequest(case_id=case.case_id, task=task.name, prompt=task.prompt(case))
        score = task.score(case, truth, task.parse(case, BaselineConditionsAgent().run(request).text))
        assert score.outcome == "passed", (case.case_id, score.message)
        naive = task.score(case, truth, task.parse(case, NaiveConditionsAgent().run(request).text))
        naive_f1.append(float(naive.metrics["f1"] or 0.0))
    assert len(naive_f1) == 25 and min(naive_f1) < 0.5  # the negative control is caught


def test_bad_case_files_are_dataset_errors(tmp_path: Path) -> None:
    bundle = _bundle()
    bundle["entry"].append(_condition("1", clinical="ACTIVE"))
    (tmp_path / "upper.json").write_text(json.dumps(bundle))
    with pytest.raises(DatasetError, match=r"Condition/c1 clinicalStatus is not one of active, "):
        ConditionsTask().load_case(tmp_path / "upper.json")
    shaped = copy.deepcopy(_bundle())
    shaped["entry"].append(_condition("2"))
    shaped["entry"][-1]["resource"]["subject"] = "Patient/x"
    (tmp_path / "shape.json").write_text(json.dumps(shaped))
    with pytest.raises(DatasetError, match=r"not valid FHIR R4B: Condition/c2 subject: expected a JSON object"):
        ConditionsTask().load_case(tmp_path / "shape.json")
    (tmp_path / "note.json").write_text(json.dumps({"id": "n", "note": "x", "expected": {}}))
    with pytest.raises(DatasetError, match="this is a case of the write task, not of the conditions task"):
        ConditionsTask().load_case(tmp_path / "note.json")


# -- written from outside -------------------------------------------------------------------

def test_the_example_uses_only_the_public_top_level_api_and_stays_small() -> None:
    source = (EXAMPLE / "__init__.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("groundeval"):
            assert node.module == "groundeval", node.module
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("groundeval") for a in node.names)
    assert len(source.splitlines()) <= 160


def test_the_committed_fixtures_match_the_script(synthea_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "make_fixtures.py"), "--source", str(synthea_dir), "--check"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stderr


# -- through the plugin ---------------------------------------------------------------------

MOCK_MODULE = '''
import json
from examples.conditions_task import BaselineConditionsAgent
from fake_anthropic import api_error, message, mock_claude
from groundeval.agent_io import AgentRequest, Prompt

SEEN = set()


def handler(request):
    body = json.loads(request.content)
    user = body["messages"][0]["content"]
    assert "active conditions" in body["system"][0]["text"]
    if "Max_Kris" in user or "f9120576" in user:
        if "max" not in SEEN:  # rate limited once, then answered
            SEEN.add("max")
            return api_error(429, "rate_limit_error", "x", retry_after="1")
    answer = BaselineConditionsAgent().run(AgentRequest(case_id="x", task="conditions",
                                                        prompt=Prompt(system="", user=user))).text
    if "5451401c" in user:  # Beatrice: misses her conditions
        answer = "Sure:\\n[]"
    return message(answer, input_tokens=3000, output_tokens=60, request_id="req_1")


MockClaude = mock_claude(handler)
'''


@pytest.fixture
def example_dir(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pytester directory with four conditions fixtures in ``data/``; the repository importable."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    pytester.syspathinsert(ROOT)
    data = pytester.path / "data"
    data.mkdir()
    for prefix in PICK:
        shutil.copy(_fixture(prefix), data / _fixture(prefix).name)
    install(pytester.path)
    pytester.makepyfile(mock_claude=MOCK_MODULE)
    pytester.syspathinsert()
    return data


def _args(agent: str, *extra: str) -> list[str]:
    return [f"--groundeval-task={SPEC}", f"--groundeval-agent={agent}", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", *extra]


def test_baseline_runs_on_the_packaged_cases_by_default(pytester: pytest.Pytester, example_dir: Path) -> None:
    result = pytester.runpytest(f"--groundeval-task={SPEC}", f"--groundeval-agent={BASELINE}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=25)
    result.stdout.fnmatch_lines(["*groundeval conditions*", "micro *1.000*1.000*1.000", "macro *1.000*1.000*1.000"])


def test_claude_agent_properties_can_reach_an_xdist_controller(
    pytester: pytest.Pytester, example_dir: Path, request: pytest.FixtureRequest
) -> None:
    serial = pytester.runpytest(*_args("mock_claude:MockClaude", "--junitxml=serial.xml"))
    serial.assert_outcomes(passed=3, failed=1)
    serial.stdout.fnmatch_lines(["*answer format: *", "agent: claude  model: claude-opus-4-8  *"])
    assert assert_reports_cross_to_the_controller(serial, request.config) == 4 * 3
    one = junit_cases(pytester.path / "serial.xml")
    max_kris = next(v for k, v in one.items() if k.startswith("Max_Kris"))
    assert max_kris["attempts"] == "2" and max_kris["task"] == "conditions" and max_kris["outcome"] == "passed"
    beatrice = next(v for k, v in one.items() if k.startswith("Beatrice"))
    assert beatrice["recall"] == "0.0" and beatrice["format_ok"] == "false"
    records = run_records(pytester.path / "runs")
    assert len(records) == 1 and all(r["task"] == "conditions" for r in records)


def test_properties_and_run_record_have_the_built_in_shape(
    pytester: pytest.Pytester, example_dir: Path, copy_fixtures: Any
) -> None:
    pytester.runpytest(*_args(BASELINE, "--junitxml=cond.xml", "--groundeval-out-dir=cond"))
    copy_fixtures(pytester.path / "ext", ("Liz_Conn", "Max_Kris"))
    pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=baseline", "--groundeval-data-dir=ext",
                       "-p", "no:cacheprovider", "--junitxml=ext.xml", "--groundeval-out-dir=ext_runs")
    task = ConditionsTask()
    from groundeval.tasks.extraction.task import ExtractionTask

    cond = junit_cases(pytester.path / "cond.xml")
    ext = junit_cases(pytester.path / "ext.xml")
    cond_names = {n for props in cond.values() for n in props}
    ext_names = {n for props in ext.values() for n in props}
    assert cond_names - set(task.metric_names) == ext_names - set(ExtractionTask.metric_names)
    for props in cond.values():
        assert set(task.metric_names) <= set(props)
    (c_record,) = run_records(pytester.path / "cond")
    (e_record,) = run_records(pytester.path / "ext_runs")  # --groundeval-out-dir holds the records
    assert c_record.keys() == e_record.keys()
    assert c_record["settings"].keys() == e_record["settings"].keys()
    assert c_record["settings"]["task_options"] == {"min_f1": 1.0}
    assert c_record["aggregate"].keys() == e_record["aggregate"].keys()
    assert c_record["cases"][0].keys() == e_record["cases"][0].keys()
    assert {m for m in c_record["aggregate"]["metrics"]} == {
        f"{a}_{m}" for a in ("micro", "macro") for m in ("precision", "recall", "f1")
    }
