"""A sixth task, added from outside: its own module and its registration, and not one edit to groundeval.

The toy ``allergies`` task (list the substances of a patient's active allergies) and its rule-based
agent live in a package this test writes to ``tmp_path``, installed the way any package registers
a task: a ``*.dist-info/entry_points.txt`` with ``[groundeval.tasks]`` and ``[groundeval.agents]``.
It runs through pytest by name (``--groundeval-task=allergies``) with its agent, under two
workers too, and leaves a run record; its cases get tools (``Task.case_tools``) that reach an
agent through ``AgentRequest.tools``. Nothing under ``src/groundeval`` names it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundeval import registry
from tests._paths import REPO

TOY = '''
"""A toy task: the substances of a patient's active allergies, from a small JSON case file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from groundeval import (
    TOOLS, AgentRequest, BaseTask, Case, CodeSetScorer, DatasetError, Parsed, Prompt, extract_json, load_json,
)


class AllergiesTask(BaseTask):
    name: ClassVar[str] = "allergies"
    default_agent: ClassVar[str] = "allergies-baseline"
    tools: ClassVar[tuple[str, ...]] = ("list_allergies",)
    scorer = CodeSetScorer(label="substance")

    def load_case(self, path: Path) -> Case:
        data, digest = load_json(path)
        if not isinstance(data.get("allergies"), list):
            raise DatasetError(str(path), "no 'allergies' list; an allergies case is {'allergies': [...]}")
        return Case(case_id=path.stem, source=path, sha256=digest, data=data)

    def prompt(self, case: Case) -> Prompt:
        return Prompt(system="List the substances of the active allergies as a JSON array of strings.",
                      user=json.dumps(case.data["allergies"]))

    def truth(self, case: Case) -> list[str]:
        return sorted({a["substance"] for a in case.data["allergies"] if a["status"] == "active"})

    def parse(self, case: Case, raw: str) -> Parsed:
        return extract_json(raw, "[", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), [])

    def case_tools(self, case: Case) -> list[Any]:
        from langchain_core.tools import StructuredTool

        allergies = list(case.data["allergies"])

        def list_allergies() -> list[dict[str, Any]]:
            """Every allergy of the patient, each with its substance and status."""
            return allergies

        return [StructuredTool.from_function(list_allergies, name="list_allergies")]


class BaselineAllergiesAgent:
    name = "allergies-baseline"
    tasks = frozenset({"allergies"})

    def run(self, request: AgentRequest) -> str:
        if request.tools is not None:  # the task's own tool, as a tool-using agent gets it
            (tool,) = request.tools()
            allergies = tool.invoke({})
        else:
            allergies = json.loads(request.prompt.user)
        return json.dumps(sorted({a["substance"] for a in allergies if a["status"] == "active"}))


class NaiveAllergiesAgent(BaselineAllergiesAgent):
    name = "allergies-naive"

    def run(self, request: AgentRequest) -> str:
        return json.dumps(sorted({a["substance"] for a in json.loads(request.prompt.user)}))
'''

ENTRY_POINTS = """\
[groundeval.tasks]
allergies = toy_allergies:AllergiesTask

[groundeval.agents]
allergies-baseline = toy_allergies:BaselineAllergiesAgent
allergies-naive = toy_allergies:NaiveAllergiesAgent
"""

CASES = {
    "ann": [{"substance": "peanut", "status": "active"}, {"substance": "latex", "status": "resolved"}],
    "bob": [{"substance": "penicillin", "status": "active"}, {"substance": "sulfa", "status": "active"}],
    "cy": [{"substance": "codeine", "status": "inactive"}],
}


@pytest.fixture
def allergies_installed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy package installed on ``sys.path`` (module and dist-info), its cases in ``data/``."""
    site = pytester.path / "site"
    site.mkdir()
    (site / "toy_allergies.py").write_text(TOY, encoding="utf-8")
    info = site / "toy_allergies-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-allergies\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))  # the xdist workers' interpreters
    data = pytester.path / "data"
    data.mkdir()
    for name, allergies in CASES.items():
        (data / f"{name}.json").write_text(json.dumps({"allergies": allergies}), encoding="utf-8")
    registry.clear_cache()
    yield data
    registry.clear_cache()
    sys.modules.pop("toy_allergies", None)


def _record(out: Path) -> dict[str, object]:
    (path,) = out.glob("*.json")
    record: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return record


def test_a_sixth_task_runs_by_name_with_its_rule_based_agent(pytester: pytest.Pytester, allergies_installed: Path) -> None:
    result = pytester.runpytest("--groundeval-task=allergies", "--groundeval-data-dir=data",
                                "--groundeval-out-dir=out", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)  # its default agent, by the registered name
    result.stdout.fnmatch_lines(["*groundeval allergies*", "agent: allergies-baseline*", "pass rate: 1.000 (3/3)*"])
    record = _record(pytester.path / "out")
    assert record["task"] == "allergies"
    cases = record["cases"]
    assert isinstance(cases, list) and sorted(c["case_id"] for c in cases) == ["ann", "bob", "cy"]
    assert {c["raw_output"] for c in cases} == {'["peanut"]', '["penicillin", "sulfa"]', "[]"}  # through its tools


def test_the_sixth_tasks_negative_control_fails_and_two_workers_agree(
    pytester: pytest.Pytester, allergies_installed: Path
) -> None:
    naive = pytester.runpytest("--groundeval-task=allergies", "--groundeval-agent=allergies-naive",
                               "--groundeval-data-dir=data", "-p", "no:cacheprovider")
    outcomes = naive.parseoutcomes()  # bob's list is right whatever the status; ann's has one extra, cy's only extras
    assert (outcomes.get("passed"), outcomes.get("partial"), outcomes.get("failed")) == (1, 1, 1)
    workers = pytester.runpytest_subprocess("--groundeval-task=allergies", "--groundeval-data-dir=data", "-n", "2",
                                            "-p", "no:cacheprovider")
    workers.assert_outcomes(passed=3)


def test_the_sixth_task_needs_no_name_in_groundevals_source() -> None:
    """Its registration is all groundeval knows of it: no source file names the task or its module."""
    names = ("toy_allergies", "AllergiesTask", "allergies-baseline", "allergies-naive")
    named = [str(p.relative_to(REPO)) for p in sorted((REPO / "src" / "groundeval").rglob("*.py"))
             if any(n in p.read_text(encoding="utf-8") for n in names)]
    assert named == []


def test_the_langgraph_agent_gets_the_sixth_tasks_own_tools(allergies_installed: Path) -> None:
    """No agent knows the toy task's tool: it reaches ``langgraph`` through ``AgentRequest.tools``."""
    from groundeval.agents.langgraph_agent import LangGraphAgent
    from groundeval.execution.call import call_agent, request_for
    from groundeval.tasks import make_task
    from groundeval.testing.scripted_chat import ScriptedChatModel, call, last_tool_result

    def answer(messages: list[Any]) -> str:
        return json.dumps(sorted({a["substance"] for a in last_tool_result(messages, "list_allergies")
                                  if a["status"] == "active"}))

    task = make_task("allergies")
    case = task.load_case(allergies_installed / "bob.json")
    model = ScriptedChatModel(steps=[call("list_allergies"), answer])
    result = call_agent(LangGraphAgent(chat_model=model), request_for(task, case)).result
    assert model.bound_tools == ["list_allergies"]
    assert [t["tool"] for t in result.trace] == ["list_allergies"]
    assert task.score(case, task.truth(case), task.parse(case, result.text)).outcome == "passed"
