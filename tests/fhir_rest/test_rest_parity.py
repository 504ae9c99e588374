"""``langgraph-rest`` against the sandbox answers as ``langgraph`` does in-process, on every packaged case.

Per task and case: the in-process agent (``langgraph`` over the case's Bundle, ``tests/fhir/reader_agent``
and ``tests/mcp/mcp_scripts``' plans) and the REST agent (``langgraph-rest`` with the case's record
served by ``FhirServingAgent`` on a sandbox, ``rest_scripts``' plans) each answer from what their
tools returned; the parsed answers and the verdicts must agree. Where they differ, the sandbox
served the record differently from the file, or the REST tools lost something on the way (a page,
an included Medication, a refused write).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests._paths import REPO

pytest.importorskip("fhirpy")
pytest.importorskip("langgraph")

sys.path[:0] = [str(REPO / "tests" / "fhir"), str(REPO / "tests" / "mcp"), str(REPO / "tests" / "fhir_rest")]

TASKS = ("extraction", "reconcile", "labs", "summary", "write")


def _cases(task_name: str) -> list[Any]:
    from groundeval.datasets import default_data_dir
    from groundeval.tasks import make_task

    task = make_task(task_name)
    return [(task_name, path) for path in task.case_files(default_data_dir(task_name))]


CASES = [pair for name in TASKS for pair in _cases(name)]


def _inprocess(task: Any, case: Any) -> tuple[Any, Any]:
    import mcp_scripts
    import rest_scripts

    from groundeval.agent_io import AgentRequest
    from groundeval.agents.langgraph_agent import LangGraphAgent

    request = AgentRequest(case_id=case.case_id, task=task.name, prompt=task.prompt(case), context=task.context(case))
    model = rest_scripts.inprocess_summary_model if task.name == "summary" else mcp_scripts.model_for
    result = LangGraphAgent(chat_model=model).run(request)
    parsed = task.parse(case, result.text)
    return parsed, task.score(case, task.truth(case), parsed)


def _over_rest(task: Any, case: Any) -> tuple[Any, Any, Any]:
    import rest_scripts

    from groundeval.agent_io import AgentRequest
    from groundeval.fhir.serving import FhirServingAgent
    from groundeval.tasks.fhir_mode import FhirModeTask

    served = FhirModeTask(task, "sandbox")
    request = AgentRequest(case_id=case.case_id, task=task.name, prompt=served.prompt(case),
                           context=served.context(case))
    result = FhirServingAgent(rest_scripts.agent, "sandbox").run(request)
    assert not isinstance(result, str)
    parsed, score = served.score_result(case, served.truth(case), result)
    return parsed, score, result


@pytest.mark.parametrize(("task_name", "path"), CASES, ids=[f"{t}-{p.stem[:28]}" for t, p in CASES])
def test_rest_agent_answers_as_the_inprocess_agent(task_name: str, path: Any) -> None:
    from groundeval.tasks import make_task

    task = make_task(task_name)
    case = task.load_case(path)
    file_parsed, file_score = _inprocess(task, case)
    rest_parsed, rest_score, result = _over_rest(task, case)
    if task_name == "write":  # the subject is the served patient's reference: compare what is scored
        assert rest_parsed.found and file_parsed.found
    else:
        assert rest_parsed.value == file_parsed.value
    assert {k: v for k, v in rest_score.metrics.items() if k in file_score.metrics} == file_score.metrics
    assert rest_score.outcome == file_score.outcome, rest_score.message
    calls = result.meta["fhir"]["calls"]
    assert calls and all(status < 400 and not refused for _m, _t, status, _r, refused in calls)
    assert [c["tool"] for c in result.trace][:1] == (["lookup_rxnorm"] if task_name == "write" else ["fhir_read"])
    assert all(c["ok"] for c in result.trace), json.dumps(result.trace)[:500]
    lookups = getattr(task, "lookups", None)
    if callable(lookups) and task_name != "write":  # every answered code is in some REST result (grounding)
        from groundeval.scorers.grounding import LookupPlan, score_trace

        plan = lookups(case, task.truth(case), rest_parsed)
        metrics, details = score_trace(LookupPlan(answered=plan.answered), result.trace)
        assert metrics["grounded_answer_rate"] in (1.0, None), details
