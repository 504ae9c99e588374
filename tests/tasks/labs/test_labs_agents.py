"""The rule-based labs agents in process, and the tool-using agent through get_observations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import check_task, make_agent
from groundeval.agents.baselines.labs import BaselineLabsAgent, NaiveLabsAgent
from groundeval.errors import AgentError, ConfigError
from groundeval.tasks.labs import LabsTask
from groundeval.tasks.labs.task import LAB_READ_TOOLS
from tests._paths import REPO

CASES = REPO / "fixtures" / "labs"
TASK = LabsTask()


def _request(path: Path, task: LabsTask = TASK) -> AgentRequest:
    case = task.load_case(path)
    return AgentRequest(case_id=case.case_id, task="labs", prompt=task.prompt(case), context=task.context(case))


def _outcome(agent: BaselineLabsAgent, path: Path, task: LabsTask = TASK) -> Any:
    case = task.load_case(path)
    return task.score(case, task.truth(case), task.parse(case, agent.run(_request(path, task)).text))


def test_the_baseline_passes_every_packaged_case_with_either_prompt() -> None:
    given = LabsTask(thresholds_in_prompt=True)
    for path in TASK.case_files(CASES):
        for task in (TASK, given):
            score = _outcome(BaselineLabsAgent(), path, task)
            assert score.outcome == "passed", f"{path.name}: {score.message}"


def test_the_naive_control_fails_every_patient_with_a_second_result() -> None:
    naive = NaiveLabsAgent()
    outcomes = {p.name: _outcome(naive, p) for p in TASK.case_files(CASES)}
    passed = {name for name, s in outcomes.items() if s.outcome == "passed"}
    assert passed == {next(CASES.glob("Garrett_Thompson*.json")).name}  # the patient with no result at all
    missed = {name for name, s in outcomes.items() if s.metrics["critical_missed"]}
    assert missed == {p.name for p in CASES.glob("variant-critical-*.json")}
    (same_date,) = CASES.glob("variant-same-date--*.json")
    assert outcomes[same_date.name].metrics["values_correct"] < outcomes[same_date.name].metrics["tests_with_result"]


def test_the_agents_are_registered_for_the_labs_task_only() -> None:
    for name, cls in (("baseline-labs", BaselineLabsAgent), ("naive-labs", NaiveLabsAgent)):
        agent = make_agent(name)
        assert isinstance(agent, cls) and agent.name == name
        check_task(agent, name, TASK)
        with pytest.raises(ConfigError, match="answers the labs task, not 'extraction'"):
            check_task(agent, name, "extraction")


def test_a_prompt_without_a_bundle_is_an_agent_error() -> None:
    with pytest.raises(AgentError, match="the prompt holds no JSON Bundle"):
        BaselineLabsAgent().run(AgentRequest(case_id="c", task="labs", prompt=Prompt(system="", user="hi")))


def test_the_read_tools_over_a_labs_bundle_are_the_tasks_tools_with_observations_latest_first() -> None:
    pytest.importorskip("langchain_core")
    from groundeval.fhir.read_tools import OBSERVATION_TOOL, READ_TOOLS as BASE_TOOLS, make_read_tools
    from groundeval.terminology import Catalog

    (path,) = CASES.glob("variant-same-date--*.json")
    bundle = json.loads(path.read_text())
    tools = {t.name: t for t in make_read_tools(bundle, Catalog.load())}
    assert tuple(tools) == LAB_READ_TOOLS == (*BASE_TOOLS, OBSERVATION_TOOL) == TASK.tools
    found = tools[OBSERVATION_TOOL].invoke({"loinc_code": "6298-4"})
    firsts = [(e["resource"]["effectiveDateTime"], e["resource"]["valueQuantity"]["value"]) for e in found["entries"]]
    assert found["ok"] and firsts[:2] == [("2024-11-10", 5.7), ("2024-11-10", 4.39)]  # issued decides the tie
    assert all(e["fullUrl"].startswith("urn:uuid:") for e in found["entries"])
    (offset,) = CASES.glob("variant-latest-by-offset--*.json")
    later = make_read_tools(json.loads(offset.read_text()), Catalog.load())[-1].invoke({"loinc_code": "6298-4"})
    shown = [e["resource"]["valueQuantity"]["value"] for e in later["entries"][:2]]
    assert shown == [5.8, 4.0]  # 23:30-05:00 (04:30 UTC) before 01:00 UTC the next day, as instants
    none = tools[OBSERVATION_TOOL].invoke({"loinc_code": "2160-0"})
    assert none["count"] == 0 and "6298-4" in none["loinc_codes_in_bundle"]
    assert tools[OBSERVATION_TOOL].invoke({"loinc_code": " "})["ok"] is False
    (status,) = CASES.glob("variant-status-entered-in-error--*.json")
    listed = make_read_tools(json.loads(status.read_text()), Catalog.load())[-1].invoke({"loinc_code": "6298-4"})
    assert listed["entries"][0]["resource"]["status"] == "entered-in-error"  # every status, as recorded


def test_the_read_tools_accept_every_observation_status_and_still_refuse_a_bad_one() -> None:
    pytest.importorskip("langchain_core")
    from groundeval.fhir.read_tools import BundleToolsError, make_read_tools
    from groundeval.terminology import Catalog

    bundle = json.loads(next(CASES.glob("Delores12*.json")).read_text())
    observation = next(e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "Observation")
    for status in ("corrected", "cancelled", "unknown"):  # fhir.resources' R4B binding lists only four codes
        observation["status"] = status
        assert len(make_read_tools(bundle, Catalog.load())) == 4
    observation["status"] = "withdrawn"
    with pytest.raises(BundleToolsError, match="Value 'withdrawn' is not in the required value set"):
        make_read_tools(bundle, Catalog.load())


def test_langgraph_fhir_reads_the_latest_result_through_get_observations() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import BaseMessage

    from groundeval.agents.langgraph_agent import LangGraphFHIRAgent
    from groundeval.testing.scripted_chat import ScriptedChatModel, call, last_tool_result

    (path,) = CASES.glob("variant-reference-range--*.json")
    request = _request(path)
    answer = json.loads(BaselineLabsAgent().run(request).text)

    def respond(messages: list[BaseMessage]) -> str:
        counted = [e["resource"] for e in last_tool_result(messages, "get_observations")["entries"]
                   if e["resource"]["status"] == "final"]
        assert counted[0]["valueQuantity"]["value"] == 5.3 and counted[0]["referenceRange"]
        return json.dumps(answer)

    seen: list[ScriptedChatModel] = []

    def model_for(req: AgentRequest) -> ScriptedChatModel:
        seen.append(ScriptedChatModel(steps=[call("get_observations", loinc_code="6298-4"), respond]))
        return seen[-1]

    result = LangGraphFHIRAgent(chat_model=model_for).run(request)
    case = TASK.load_case(path)
    assert TASK.score(case, TASK.truth(case), TASK.parse(case, result.text)).outcome == "passed"
    assert seen[0].bound_tools == list(LAB_READ_TOOLS) and [t["tool"] for t in result.trace] == ["get_observations"]


CORE_ONLY = '''
import sys
from importlib.abc import MetaPathFinder

class Refuse(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"healthchain", "langchain_core", "langgraph", "anthropic", "openai"}:
            raise ModuleNotFoundError(f"No module named {name!r} (refused: not in a plain install)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
from pathlib import Path
from groundeval.agent_io import AgentRequest
from groundeval.agents.base import make_agent
from groundeval.tasks import make_task

task = make_task("labs")
path = next(Path(sys.argv[1]).glob("variant-unit-glucose-mmol--*.json"))
case = task.load_case(path)
task.check_case(case)
request = AgentRequest(case_id=case.case_id, task="labs", prompt=task.prompt(case), context=task.context(case))
print(task.score(case, task.truth(case), task.parse(case, make_agent("baseline-labs").run(request).text)).outcome)
'''


def test_the_task_and_its_agents_need_no_extra() -> None:
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", CORE_ONLY, str(CASES)], capture_output=True, text=True, check=False,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "passed"


# -- the baseline (its own reading of the rules) and the truth agree on each new shape -------------------------

_LOINC, _UCUM = "http://loinc.org", "http://unitsofmeasure.org"


def _obs(oid: str, code: str, when: str, value: float, unit: str = "mmol/L", **extra: Any) -> dict[str, Any]:
    resource = {"resourceType": "Observation", "id": oid, "status": "final", "effectiveDateTime": when,
                "code": {"coding": [{"system": _LOINC, "code": code}]},
                "valueQuantity": {"value": value, "unit": unit, "system": _UCUM, "code": unit}, **extra}
    return {"fullUrl": f"urn:uuid:{oid}", "resource": resource}


def _panel(oid: str, when: str, **values: float) -> dict[str, Any]:
    comps = [{"code": {"coding": [{"system": _LOINC, "code": c}]},
              "valueQuantity": {"value": v, "unit": "mm[Hg]", "system": _UCUM, "code": "mm[Hg]"}}
             for c, v in (("8480-6", values.get("systolic")), ("8462-4", values.get("diastolic"))) if v is not None]
    entry = _obs(oid, "85354-9", when, 0, component=comps)
    del entry["resource"]["valueQuantity"]
    return entry


SHAPES = {
    "separate systolic and diastolic": [_panel("a", "2024-01-01", systolic=124, diastolic=78),
                                        _obs("s", "8480-6", "2024-03-01T10:00:00+01:00", 186, "mm[Hg]"),
                                        _obs("d", "8462-4", "2024-03-01T09:00:00Z", 96, "mm[Hg]")],
    "a panel with its systolic only, in crisis": [_panel("a", "2024-01-01", systolic=124, diastolic=78),
                                                  _panel("b", "2024-02-01", systolic=186)],
    "a diastolic alone, not in crisis": [_panel("a", "2024-01-01", systolic=124, diastolic=78),
                                         _obs("d", "8462-4", "2024-02-01", 95, "mm[Hg]")],
    "offsets": [_obs("a", "6298-4", "2024-03-01T23:30:00-05:00", 5.8), _obs("b", "6298-4", "2024-03-02T01:00:00Z", 4.0)],
    "a date alone against a time": [_obs("a", "6298-4", "2024-03-02T00:00:00Z", 5.0),
                                    _obs("b", "6298-4", "2024-03-02", 4.0), _obs("c", "6298-4", "2024-03", 3.0)],
}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_baseline_and_the_truth_agree_on_blood_pressure_shapes_and_instants(shape: str, tmp_path: Path) -> None:
    patient = {"fullUrl": "urn:uuid:p", "resource": {"resourceType": "Patient", "id": "p", "birthDate": "1960-01-01"}}
    path = tmp_path / "case.json"
    path.write_text(json.dumps({"resourceType": "Bundle", "type": "collection", "entry": [patient, *SHAPES[shape]]}))
    score = _outcome(BaselineLabsAgent(), path)
    assert score.outcome == "passed", score.message
