"""``--groundeval-fhir`` in process: each task's REST baseline against its file baseline on every packaged
case, writes on read tasks, patients and tokens refused, concurrency, the cache, counterfactual twins."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig, make_agent
from groundeval.datasets import Case, default_data_dir
from groundeval.execution.call import prepare
from groundeval.execution.outcome_policy import RunInfo
from groundeval.fhir.serving import RECORD_KEY, RECORD_SHA_KEY, FhirServingAgent
from groundeval.scorers.grounding import GROUNDING_METRICS
from groundeval.tasks import make_task
from groundeval.tasks.fhir_mode import FhirModeTask
from groundeval.testing.one_case import run_case

PAIRS = [
    ("extraction", "baseline", "baseline-rest"),
    ("labs", "baseline-labs", "baseline-labs-rest"),
    ("reconcile", "baseline-reconcile", "baseline-reconcile-rest"),
    ("summary", "baseline-summary", "baseline-summary-rest"),
    ("write", "baseline-write", "baseline-write-rest"),
]


def _fhir(task: Any, mode: str) -> Any:
    """The task served over FHIR (typed Any: it is a ``Task`` by delegation)."""
    return FhirModeTask(task, mode)


def _cases(task: Any) -> list[Case]:
    data = default_data_dir(task.name)
    return [task.load_case(p) for p in task.case_files(data)]


def _info(task: str, agent: str) -> RunInfo:
    return RunInfo(run_id="test", task=task, agent=agent, model=None)


def _call(url: str, token: str, method: str = "GET", body: dict[str, Any] | None = None) -> tuple[int, Any]:
    headers = {"Accept": "application/fhir+json", "Authorization": f"Bearer {token}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/fhir+json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


@pytest.mark.parametrize(("task_name", "file_agent", "rest_agent"), PAIRS)
def test_each_rest_baseline_scores_as_its_file_baseline_on_every_packaged_case(
    task_name: str, file_agent: str, rest_agent: str
) -> None:
    task = make_task(task_name)
    served = _fhir(task, "sandbox")
    by_file = make_agent(file_agent, AgentConfig())
    by_rest = FhirServingAgent(make_agent(rest_agent, AgentConfig()), "sandbox")
    cases = _cases(task)
    assert len(cases) >= 25
    for case in cases:
        plain = run_case(task, by_file, case, _info(task_name, file_agent), f"t::{case.case_id}").record
        rest = run_case(served, by_rest, case, _info(task_name, rest_agent), f"t::{case.case_id}").record
        assert rest.outcome == plain.outcome, (case.case_id, rest.message)
        own = {k: v for k, v in rest.metrics.items() if not k.startswith("fhir_")}
        # the in-process tools' grounding is not scored over FHIR (retrieval is): the task's own metrics only
        assert own == {k: v for k, v in plain.metrics.items() if k not in GROUNDING_METRICS}, case.case_id
        assert rest.parsed == plain.parsed or task_name == "write", case.case_id
        # every call answered, none refused; a read task writes nothing, the write task exactly its answer
        assert rest.metrics["fhir_refused"] == 0
        assert rest.metrics["fhir_writes"] == (1 if task_name == "write" else 0)
        assert rest.metrics["fhir_other_writes"] == 0
        assert rest.usage == {"model_calls": 0, "cost_usd": 0.0}  # rule-based: no model call, nothing spent
        if rest.metrics["fhir_recall"] is not None:
            assert rest.metrics["fhir_recall"] == 1.0, case.case_id  # the searches fetch all the truth used


def test_the_write_task_is_scored_from_what_the_server_holds_not_from_the_text() -> None:
    task = make_task("write")
    case = _cases(task)[0]
    inner = make_agent("baseline-write-rest", AgentConfig())

    class SaysNothing:
        name, model, record_access, tasks = "says-nothing", None, "fhir", frozenset({"write"})

        def run(self, request: AgentRequest) -> AgentResult:
            inner.run(request)  # creates the statement on the server
            return AgentResult(text="done")  # and answers no JSON at all

    record = run_case(_fhir(task, "sandbox"), FhirServingAgent(SaysNothing(), "sandbox"), case,
                      _info("write", "says-nothing"), "t::w").record
    assert record.outcome == "passed"
    assert record.parsed["resourceType"] == "MedicationStatement"
    assert record.metrics["fhir_writes"] == 1


class _Reader:
    """Reads like baseline-rest, then does one more thing over the API (``extra``)."""

    name, model, record_access, tasks = "reader", None, "fhir", frozenset({"extraction"})

    def __init__(self, extra: str) -> None:
        self.extra = extra
        self.inner = make_agent("baseline-rest", AgentConfig())

    def run(self, request: AgentRequest) -> AgentResult:
        assert request.fhir is not None
        assert RECORD_KEY not in request.context  # the file never reaches the agent
        base, token = request.fhir.base_url, request.fhir.token
        if self.extra == "write":
            body = {"resourceType": "MedicationStatement", "status": "active", "subject": {"reference": request.fhir.patient},
                    "medicationCodeableConcept": {"text": "aspirin"}}
            assert _call(f"{base}/MedicationStatement", token, "POST", body)[0] == 201
        elif self.extra == "other-patient":
            assert _call(f"{base}/Observation?patient=Patient/someone-else", token)[0] == 403
        elif self.extra == "other-token":
            assert _call(f"{base}/{request.fhir.patient}", "another-case-token")[0] == 401
        result = self.inner.run(request)
        assert isinstance(result, AgentResult)
        return result


@pytest.mark.parametrize("extra", ["write", "other-patient", "other-token", "nothing"])
def test_a_write_on_a_read_task_fails_and_reaching_across_patients_is_refused_and_counted(extra: str) -> None:
    task = make_task("extraction")
    case = next(c for c in _cases(task) if c.case_id.startswith("Liz_Conn"))
    record = run_case(_fhir(task, "sandbox"), FhirServingAgent(_Reader(extra), "sandbox"), case,
                      _info("extraction", "reader"), "t::r").record
    assert record.metrics["f1"] == 1.0  # the answer itself is right every time
    if extra == "write":
        assert record.outcome == "failed"
        assert record.metrics["fhir_writes"] == 1
        assert "wrote to the record on a read task" in record.message
    else:
        assert record.outcome == "passed"
        assert record.metrics["fhir_writes"] == 0
    assert record.metrics["fhir_refused"] == (1 if extra in ("other-patient", "other-token") else 0)


def test_sixteen_cases_in_flight_never_see_each_others_writes() -> None:
    task = _fhir(make_task("extraction"), "sandbox")
    cases = _cases(task.inner)[:16]
    barrier = threading.Barrier(16, timeout=30)

    class WritesThenLooks:
        name, model, record_access = "writes-then-looks", None, "fhir"

        def run(self, request: AgentRequest) -> AgentResult:
            assert request.fhir is not None
            base, token = request.fhir.base_url, request.fhir.token
            body = {"resourceType": "MedicationStatement", "status": "active",
                    "subject": {"reference": request.fhir.patient}, "medicationCodeableConcept": {"text": request.case_id}}
            assert _call(f"{base}/MedicationStatement", token, "POST", body)[0] == 201
            barrier.wait()  # every case has written before any looks
            status, found = _call(f"{base}/MedicationStatement?patient={request.fhir.patient}", token)
            assert status == 200
            texts = [e["resource"]["medicationCodeableConcept"]["text"] for e in found.get("entry") or []]
            return AgentResult(text=json.dumps(texts))

    agent = FhirServingAgent(WritesThenLooks(), "sandbox")

    def one(case: Case) -> list[str]:
        request, _ = prepare(task, case)
        out = agent.run(request)
        assert isinstance(out, AgentResult)
        return list(json.loads(out.text))

    with ThreadPoolExecutor(16) as pool:
        seen = list(pool.map(one, cases))
    assert seen == [[c.case_id] for c in cases]


def test_the_cache_key_holds_the_served_record_and_a_cached_answer_scores_as_it_did(tmp_path: Path) -> None:
    from groundeval.agents.result_cache import CachingAgent
    from groundeval.models.cache_store import ResultCache

    task = _fhir(make_task("extraction"), "sandbox")
    case = _cases(task.inner)[0]
    rest = make_agent("baseline-rest", AgentConfig())
    agent = CachingAgent(FhirServingAgent(rest, "sandbox"), ResultCache(tmp_path), spec="baseline-rest", options={})
    request, _ = prepare(task, case)
    assert len(request.context[RECORD_SHA_KEY]) == 64
    first = run_case(task, agent, case, _info("extraction", "baseline-rest"), "t::a").record
    again = run_case(task, agent, case, _info("extraction", "baseline-rest"), "t::a").record
    assert (first.cached, again.cached) == (False, True)
    assert again.metrics == first.metrics and again.outcome == first.outcome == "passed"
    changed = json.loads(json.dumps(case.data))
    changed["entry"][0]["resource"]["gender"] = "unknown" if changed["entry"][0]["resource"].get("gender") != "unknown" else "male"
    other = Case(case_id=case.case_id, source=case.source, sha256=case.sha256, data=changed, meta=case.meta)
    assert agent.key(prepare(task, other)[0]) != agent.key(request)  # another served record: asked again


def test_an_answer_made_on_another_record_or_without_fhir_is_a_harness_error() -> None:
    task = _fhir(make_task("extraction"), "sandbox")
    case = _cases(task.inner)[0]
    truth = task.truth(case)
    with pytest.raises(ValueError, match="no FHIR access log"):
        task.score_result(case, truth, AgentResult(text="[]"))
    with pytest.raises(ValueError, match="another served record"):
        task.score_result(case, truth, AgentResult(text="[]", meta={"fhir": {"record_sha256": "0" * 64}}))


def test_counterfactual_twins_are_served_as_their_changed_record() -> None:
    task = _fhir(make_task("extraction"), "sandbox")
    agent = FhirServingAgent(make_agent("baseline-rest", AgentConfig()), "sandbox")
    twins = 0
    for case in _cases(task.inner)[:10]:
        for kind in task.perturbations:
            twin = task.counterfactual(case, kind)
            if twin is None:
                continue
            twins += 1
            assert task.context(twin)[RECORD_SHA_KEY] != task.context(case)[RECORD_SHA_KEY]
            record = run_case(task, agent, twin, _info("extraction", "baseline-rest"), f"t::{twin.case_id}").record
            assert record.outcome == "passed", (twin.case_id, record.message)  # the twin's truth, read over FHIR
    assert twins >= 5


def test_the_prompt_names_the_server_and_patient_and_holds_no_record() -> None:
    for name in ("extraction", "labs", "reconcile", "summary", "write"):
        task = _fhir(make_task(name), "sandbox")
        case = _cases(task.inner)[0]
        prompt = task.prompt(case)
        assert "{fhir_base_url}" in prompt.user and "{fhir_patient}" in prompt.user
        assert '"resourceType"' not in prompt.user
        assert "bundle" not in task.context(case)
    write = _fhir(make_task("write"), "sandbox").prompt(_cases(make_task("write"))[0])
    assert "build_medication_statement" not in write.system and "POST [base]/MedicationStatement" in write.system

    seen: list[AgentRequest] = []

    class Sees:
        name, model, record_access = "sees", None, "fhir"

        def run(self, request: AgentRequest) -> AgentResult:
            seen.append(request)
            return AgentResult(text="[]")

    task = _fhir(make_task("extraction"), "sandbox")
    case = _cases(task.inner)[0]
    FhirServingAgent(Sees(), "sandbox").run(prepare(task, case)[0])
    (got,) = seen
    assert got.fhir is not None and got.fhir.base_url.startswith("http://127.0.0.1:")
    assert f"FHIR base URL: {got.fhir.base_url}" in got.prompt.user
    assert f"Patient: Patient/{case.meta['patient_id']}" in got.prompt.user
    assert got.fhir.token and got.fhir.token not in repr(got.fhir)


@pytest.mark.parametrize("fetch_first", [True, False])
def test_an_agent_that_fails_keeps_its_retrieval_and_cannot_raise_the_means_by_failing(fetch_first: bool) -> None:
    from groundeval.errors import AgentError

    task = _fhir(make_task("extraction"), "sandbox")
    case = next(c for c in _cases(task.inner) if c.case_id.startswith("Liz_Conn"))
    inner = make_agent("baseline-rest", AgentConfig())

    class GivesUp:
        name, model, record_access = "gives-up", None, "fhir"

        def run(self, request: AgentRequest) -> AgentResult:
            if fetch_first:
                inner.run(request)
            raise AgentError("gave up")

    record = run_case(task, FhirServingAgent(GivesUp(), "sandbox"), case, _info("extraction", "gives-up"), "t::g").record
    assert record.counted and record.outcome == "no_answer"  # a plain AgentError: scored as an empty answer
    assert record.metrics["fhir_calls"] == (2 if fetch_first else 0)
    assert record.metrics["fhir_recall"] == (1.0 if fetch_first else 0.0)  # never left out of the mean
