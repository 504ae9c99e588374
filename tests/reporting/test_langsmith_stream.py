"""LangSmith streaming, offline: a local HTTP server stands in for the LangSmith API.

The server records what the real ``langsmith`` client sends through its own background batching
(``/info``, ``/sessions``, ``/runs/multipart`` with run and feedback parts; ``/runs/batch``,
``/runs`` and ``/feedback`` accepted too). Most tests drive ``LangSmithStream`` in process; one
runs the plugin under ``-n 2``, whose workers are processes of their own, so every worker's
client, thread and environment stay out of this process.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import os
import socket
import threading
import uuid
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from groundeval.execution.outcome_policy import RunInfo
from groundeval.reporting.langsmith import (
    LangSmithStream,
    LangSmithStreamWarning,
    case_payload,
    enabled,
    experiment_name,
    feedback_scores,
    feedback_values,
)
from groundeval.scorers.grounding import GROUNDING_METRICS
from groundeval.tasks.extraction.task import ExtractionTask
from tests._paths import REPO
from tests._xdist import run_xdist

FIXTURES = REPO / "fixtures" / "extraction"
PICK = ("Liz_Conn", "Clemente_Kreiger")
FAKE_KEY = "fake-key-for-test"
INFO_BODY = {
    "version": "0.10.99", "instance_flags": {},
    "batch_ingest_config": {"use_multipart_endpoint": True, "scale_up_qsize_trigger": 1000,
                            "scale_up_nthreads_limit": 16, "scale_down_nempty_trigger": 4,
                            "size_limit": 100, "size_limit_bytes": 20_971_520},
}

TRACE_AGENT = '''
import os
from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agent_io import AgentResult

BASE = BaselineExtractionAgent()
KEY = os.environ.get("LANGSMITH_API_KEY", "")


def agent(request):
    if request.case_id.startswith("Clemente_Kreiger"):
        raise RuntimeError("agent crashed holding " + KEY)
    answer = BASE.run(request)
    trace = [
        {"tool": "get_resources", "args": {"resource_type": "MedicationRequest", "note": KEY},
         "result": {"ok": True, "count": 2}, "ok": True},
        {"tool": "lookup_code", "args": {"text": "aspirin"}, "result": {"ok": False, "error": "no match"}, "ok": False},
    ]
    usage = {"input_tokens": 1200, "output_tokens": 40, "cost_usd": 0.0042}
    return AgentResult(text=answer.text, model="scripted-1", usage=usage, attempts=1, trace=trace)
'''

NO_STREAM_CONFTEST = '''
import sys


def pytest_sessionfinish(session):
    print("STREAM_MODULE_LOADED", "groundeval.reporting.langsmith" in sys.modules)
'''


class FakeLangSmith:
    """A LangSmith API stand-in on 127.0.0.1 that records runs, feedback and projects.

    ``fail_paths`` (path prefixes) answer 500; ``hold`` makes ``/runs/multipart`` wait until
    released (a hung server); ``arrived`` is set when a multipart request comes in.
    """

    def __init__(self) -> None:
        self.fail_paths: tuple[str, ...] = ()
        self.hold = False
        self.release = threading.Event()
        self.arrived = threading.Event()
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[bytes] = []
        self.runs: dict[str, dict[str, Any]] = {}
        self.feedback: list[dict[str, Any]] = []
        self.sessions: dict[str, str] = {}  # name -> id
        self.session_posts: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: Any = None) -> None:
                data = json.dumps({} if body is None else body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                fake.requests.append(("GET", self.path))
                self._reply(200, INFO_BODY if urlparse(self.path).path.endswith("/info") else {})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = urlparse(self.path).path
                with fake.lock:
                    fake.requests.append(("POST", self.path))
                    fake.bodies.append(body)
                if path.startswith(fake.fail_paths):
                    self._reply(500, {"detail": "simulated failure"})
                    return
                if path.endswith("/runs/multipart"):
                    fake.arrived.set()
                    if fake.hold:
                        fake.release.wait(60)
                if path.endswith("/sessions"):
                    self._reply(200, fake.create_session(json.loads(body), parse_qs(urlparse(self.path).query)))
                    return
                with fake.lock:
                    fake.ingest(path, self.headers.get("Content-Type", ""), body)
                self._reply(202)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.stopper = threading.Timer(120, self.stop)  # never outlives a stuck test
        self.stopper.daemon = True
        self.stopper.start()

    def create_session(self, body: dict[str, Any], query: dict[str, list[str]]) -> dict[str, Any]:
        with self.lock:
            self.session_posts.append({**body, "upsert": query.get("upsert") == ["True"]})
            sid = self.sessions.setdefault(body["name"], body["id"])
        return {"id": sid, "name": body["name"], "tenant_id": str(uuid.UUID(int=1)),
                "start_time": "2026-12-01T00:00:00Z", "reference_dataset_id": None, "extra": body.get("extra")}

    def ingest(self, path: str, content_type: str, body: bytes) -> None:
        if path.endswith("/runs/multipart"):
            head = f"Content-Type: {content_type}\r\n\r\n".encode()
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
            for part in message.iter_parts():
                name = str(part.get_param("name", header="content-disposition"))
                op, run_id, *field = name.split(".")
                value = json.loads(bytes(part.get_payload(decode=True)))
                if op == "feedback":
                    self.feedback.append(value)
                    continue
                run = self.runs.setdefault(run_id, {})
                if field:
                    run[field[0]] = value
                else:
                    run.update(value)
        elif path.endswith("/runs/batch"):
            payload = json.loads(body)
            for run in [*payload.get("post", []), *payload.get("patch", [])]:
                self.runs.setdefault(run["id"], {}).update(run)
        elif path.endswith("/runs"):
            run = json.loads(body)
            self.runs.setdefault(run["id"], {}).update(run)
        elif path.endswith("/feedback"):
            self.feedback.append(json.loads(body))

    def roots(self) -> dict[str, dict[str, Any]]:
        return {run["name"]: run for run in self.runs.values() if not run.get("parent_run_id")}

    def children(self, parent: dict[str, Any]) -> list[dict[str, Any]]:
        kids = [run for run in self.runs.values() if run.get("parent_run_id") == parent["id"]]
        return sorted(kids, key=lambda run: run["dotted_order"])

    def feedback_of(self, run: dict[str, Any]) -> dict[str, float]:
        """The run's feedback sent as scores (every score in [0, 1], or the test fails)."""
        scores = {f["key"]: f["score"] for f in self.feedback if f["run_id"] == run["id"] and f.get("score") is not None}
        assert all(0.0 <= score <= 1.0 for score in scores.values()), scores
        return scores

    def values_of(self, run: dict[str, Any]) -> dict[str, tuple[Any, str]]:
        """The run's feedback sent as values (no score), each with its comment."""
        return {f["key"]: (f["value"], f["comment"]) for f in self.feedback
                if f["run_id"] == run["id"] and f.get("score") is None}

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_langsmith(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLangSmith]:
    """A running fake server; ``LANGSMITH_ENDPOINT``/``LANGSMITH_API_KEY`` point at it."""
    fake = FakeLangSmith()
    for name in ("LANGSMITH_TRACING", "LANGSMITH_PROJECT", "LANGCHAIN_API_KEY", "LANGSMITH_RUNS_ENDPOINTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_ENDPOINT", fake.url)
    monkeypatch.setenv("LANGSMITH_API_KEY", FAKE_KEY)
    monkeypatch.setenv("LANGSMITH_TEST_TRACKING", "false")
    yield fake
    fake.stop()
    fake.thread.join(5)


@pytest.fixture
def data_dir(pytester: pytest.Pytester, copy_fixtures: Any) -> Path:
    """Two real extraction fixtures in ``data/`` plus ``trace_agent.py``."""
    data: Path = copy_fixtures(pytester.path / "data", PICK)
    pytester.makepyfile(trace_agent=TRACE_AGENT)
    return data


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def assert_no_key(fake: FakeLangSmith) -> None:
    assert fake.bodies, "nothing was posted"
    assert not any(FAKE_KEY.encode() in body for body in fake.bodies)


INFO = RunInfo(run_id="20261129T120000Z-abcdef", task="extraction", agent="scripted", model="m-1")
EXPERIMENT = experiment_name(INFO.run_id)


def case_record(case_id: str, outcome: str = "passed", **extra: Any) -> dict[str, Any]:
    """A ``CaseRecord.model_dump(mode="json")``-shaped dict."""
    counted = outcome in ("passed", "partial", "failed", "no_answer")
    record: dict[str, Any] = {
        "case_id": case_id, "run_id": INFO.run_id, "task": "extraction", "outcome": outcome, "counted": counted,
        "raw_output": "[]", "prompt_sha256": "p" * 64, "fixture_sha256": "f" * 64, "latency_s": 0.1,
        "metrics": {"precision": 1.0, "recall": 0.5, "f1": 0.666667, "display_accuracy": None, "tp": 1}
        if counted else {},
        "usage": {}, "trace": [], "error": None,
    }
    record.update(extra)
    return record


def new_stream() -> LangSmithStream:
    stream = LangSmithStream.from_env(INFO)
    assert stream is not None
    return stream


def test_cases_become_runs_with_feedback_and_tool_children(fake_langsmith: FakeLangSmith) -> None:
    trace = [
        {"tool": "lookup_rxnorm", "args": {"query": "aspirin", "note": FAKE_KEY}, "result": [{"rxcui": "1"}], "ok": True},
        {"tool": "validate_medication_statement", "args": {}, "result": {"ok": False, "error": "bad status"},
         "ok": False},
    ]
    crashed = case_record("c2", "agent_error", error={"type": "RuntimeError", "message": f"boom {FAKE_KEY}",
                                                      "details": {}, "traceback": None})
    stream = new_stream()
    before = set(threading.enumerate())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no LangSmithStreamWarning, no langsmith deprecation warning
        stream.record_case(case_record("c1", "partial", trace=trace, model="m-2", attempts=2))
        started = set(threading.enumerate()) - before
        assert started and all(t.daemon for t in started)  # the client's batching never holds the process at exit
        assert "LANGSMITH_USE_DAEMON" not in os.environ  # set only while the client is built
        stream.record_case(crashed)
        stream.close(timeout_s=30)
    assert stream.error is None and stream.queued == 2
    assert [p["name"] for p in fake_langsmith.session_posts] == [EXPERIMENT]
    assert fake_langsmith.session_posts[0]["upsert"] is True
    assert fake_langsmith.session_posts[0]["extra"]["metadata"]["run_id"] == INFO.run_id
    roots = fake_langsmith.roots()
    assert set(roots) == {"c1", "c2"}
    assert {run["session_name"] for run in fake_langsmith.runs.values()} == {EXPERIMENT}
    ok, bad = roots["c1"], roots["c2"]
    assert ok["run_type"] == "chain" and ok["inputs"] == {
        "case_id": "c1", "task": "extraction", "prompt_sha256": "p" * 64, "fixture_sha256": "f" * 64}
    assert ok["outputs"]["answer"] == "[]" and ok["outputs"]["outcome"] == "partial"
    assert ok["extra"]["metadata"]["model"] == "m-2" and ok["extra"]["metadata"]["attempts"] == 2
    tools = fake_langsmith.children(ok)
    assert [(t["name"], t["run_type"]) for t in tools] == [("lookup_rxnorm", "tool"),
                                                             ("validate_medication_statement", "tool")]
    assert tools[0]["inputs"] == {"query": "aspirin", "note": "[REDACTED]"}
    assert tools[1]["error"] == "tool returned ok=false: bad status"
    assert all(t["trace_id"] == ok["id"] for t in tools)
    # feedback: one key per dimension the case has (display_accuracy was n/a), on the root run
    assert fake_langsmith.feedback_of(ok) == {  # the client rounds to 4 places
        "passed": 0.0, "f1": 0.6667, "precision": 1.0, "recall": 0.5}
    assert fake_langsmith.values_of(ok) == {"tp": (1, "tp = 1: a count, not a score")}
    session_id = fake_langsmith.sessions[EXPERIMENT]
    assert {f["session_id"] for f in fake_langsmith.feedback} == {session_id}
    assert {f["trace_id"] for f in fake_langsmith.feedback} == {ok["id"]}
    # the errored case: a run with the error, no feedback (it is excluded from the scores)
    assert bad["error"] == "RuntimeError: boom [REDACTED]" and fake_langsmith.feedback_of(bad) == {}
    assert ("POST", "/runs/multipart") in fake_langsmith.requests
    assert not any(path.endswith("/feedback") for _, path in fake_langsmith.requests)  # batched, not one by one
    assert_no_key(fake_langsmith)


def test_two_workers_write_into_one_experiment(fake_langsmith: FakeLangSmith) -> None:
    workers = [new_stream(), new_stream()]  # what two pytest-xdist workers of one run build
    for i, stream in enumerate(workers):
        stream.record_case(case_record(f"w{i}"))
    for stream in workers:
        stream.close(timeout_s=30)
    assert [p["name"] for p in fake_langsmith.session_posts] == [EXPERIMENT, EXPERIMENT]
    assert len(fake_langsmith.sessions) == 1
    roots = fake_langsmith.roots()
    assert set(roots) == {"w0", "w1"} and {r["session_name"] for r in roots.values()} == {EXPERIMENT}
    assert {f["session_id"] for f in fake_langsmith.feedback} == {fake_langsmith.sessions[EXPERIMENT]}
    assert sorted(f["key"] for f in fake_langsmith.feedback) == sorted(
        ["passed", "f1", "precision", "recall", "tp"] * 2)


def test_feedback_scores_cover_both_tasks() -> None:
    write = case_record("w", "partial", metrics={"schema": True, "coding": False, "constraints": True,
                                                 "safety": True, "dimensions_passed": 3, "dose_mg": 2.5})
    assert feedback_scores(write) == {"passed": 0.0, "schema": 1.0, "coding": 0.0, "constraints": 1.0, "safety": 1.0}
    assert feedback_values(write) == {"dimensions_passed": (3, "dimensions_passed = 3: a count, not a score"),
                                      "dose_mg": (2.5, "dose_mg = 2.5: a value in the metric's own units, not a score")}
    assert feedback_scores(case_record("x", "infra_error")) == {} == feedback_values(case_record("x", "infra_error"))
    assert set(feedback_scores(case_record("e", "passed", metrics={"f1": 1.0, "display_accuracy": 1.0}))) == {
        "passed", "f1", "display_accuracy"}
    # any task's metrics, not a fixed list: n/a (None) and text values are left out
    reconcile = case_record("r", "failed", metrics={"discrepancy_f1": 0.5, "recall_omission": None,
                                                    "high_alert_missed": True, "coding_reason": "missing"})
    assert feedback_scores(reconcile) == {"passed": 0.0, "discrepancy_f1": 0.5, "high_alert_missed": 1.0}


def test_counts_and_doses_reach_langsmith_as_values_with_a_comment_never_as_scores(
    fake_langsmith: FakeLangSmith,
) -> None:
    """Over the real client and the wire: a dose of 0.5 mg is a value (the task says so), not a 50% score."""
    metrics = {"schema": True, "coding": False, "dimensions_passed": 3, "dose_mg": 0.5, "daily_total_mg": 1200.0,
               "ratio": 7.5}
    info = RunInfo(run_id=INFO.run_id, task="write", agent="scripted", model=None)
    stream = LangSmithStream(info, EXPERIMENT, values={"dose_mg", "daily_total_mg"})
    stream.record_case(case_record("w1", "failed", metrics=metrics))
    stream.close(timeout_s=30)
    assert stream.error is None
    run = fake_langsmith.roots()["w1"]
    assert fake_langsmith.feedback_of(run) == {"passed": 0.0, "schema": 1.0, "coding": 0.0}
    values = fake_langsmith.values_of(run)
    assert {k: v for k, (v, _) in values.items()} == {"dimensions_passed": 3, "dose_mg": 0.5, "daily_total_mg": 1200.0,
                                                      "ratio": 7.5}
    assert values["dose_mg"][1] == "dose_mg = 0.5: a value in the metric's own units, not a score"
    assert values["dimensions_passed"][1] == "dimensions_passed = 3: a count, not a score"
    assert all(f.get("score") is None or 0.0 <= f["score"] <= 1.0 for f in fake_langsmith.feedback)


@pytest.mark.parametrize("trouble", ["sessions_500", "multipart_500", "unreachable"])
def test_trouble_warns_once_and_never_raises(fake_langsmith: FakeLangSmith, monkeypatch: pytest.MonkeyPatch,
                                             trouble: str) -> None:
    if trouble == "sessions_500":
        fake_langsmith.fail_paths = ("/sessions",)
    elif trouble == "multipart_500":
        fake_langsmith.fail_paths = ("/runs/multipart",)
    else:
        monkeypatch.setenv("LANGSMITH_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    stream = new_stream()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stream.record_case(case_record("c1"))
        stream.record_case(case_record("c2"))
        stream.close(timeout_s=30)
        stream.close(timeout_s=30)  # a second close does not warn again
    ours = [w for w in caught if w.category is LangSmithStreamWarning]
    assert len(ours) == 1, [str(w.message) for w in caught]
    text = str(ours[0].message)
    assert "streaming to LangSmith failed" in text and "eval results are unaffected" in text and FAKE_KEY not in text
    assert stream.error is not None
    assert fake_langsmith.runs == {}
    stream.record_case(case_record("c3"))  # after close: ignored, no error


def test_close_is_bounded_when_the_server_hangs(fake_langsmith: FakeLangSmith) -> None:
    fake_langsmith.hold = True
    stream = new_stream()
    stream.record_case(case_record("c1"))
    assert fake_langsmith.arrived.wait(30)  # the batch is in flight and held
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stream.close(timeout_s=0.3)
    ours = [w for w in caught if w.category is LangSmithStreamWarning]
    assert len(ours) == 1 and "still being sent after 0.3 s" in str(ours[0].message)


def test_without_a_key_no_connection_is_attempted(pytester: pytest.Pytester, data_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGSMITH_API_KEY", raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "true")  # tracing asked for, but no key: still nothing
    assert LangSmithStream.from_env(INFO) is None
    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        attempts.append(address)
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    def connect_ex(self: socket.socket, address: Any) -> int:
        attempts.append(address)
        return 111  # ECONNREFUSED

    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=baseline", "--groundeval-data-dir=data",
        "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    assert attempts == []


def test_langsmith_tracing_false_turns_streaming_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGSMITH_API_KEY", FAKE_KEY)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    assert LangSmithStream.from_env(INFO) is None


def test_plugin_streams_every_worker_into_one_experiment(pytester: pytest.Pytester, data_dir: Path,
                                                         fake_langsmith: FakeLangSmith,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: ``-n 2``, a tool-using agent; one experiment, tool child runs, feedback per case.

    The suite's one ``-n 2`` run with counterfactual twins and a response cache also shows that
    every pytest-xdist worker makes the same twins (each collects them from its own copy of the
    case file, with its own hash seed: xdist refuses workers whose collections differ), that the
    controller pairs each twin with its original whichever worker ran either, and that both
    workers write into one cache, which a later run reads.
    """
    pytester.syspathinsert()
    run = ("--groundeval-task=extraction", "--groundeval-agent=trace_agent:agent", "--groundeval-data-dir=data",
           "--groundeval-counterfactual", "--groundeval-cache=cache", "-p", "no:cacheprovider",
           "--groundeval-twin-seed=1")  # Liz_Conn's first call is its stop-active twin: both call orders are judged
    result = run_xdist(pytester, *run)
    result.assert_outcomes(passed=4, errors=1)  # Liz_Conn and its 3 twins; Clemente_Kreiger (no medication) has none
    assert "LangSmithStreamWarning" not in result.stdout.str()
    record = json.loads(next((pytester.path / "runs").glob("*.json")).read_text())
    assert {c["worker"] for c in record["cases"]} == {"gw0", "gw1"}
    twins = record["aggregate"]["counterfactual"]
    assert (twins["twins"], twins["judged"], twins["tracked"]) == (3, 3, 3)  # every twin paired with its original
    assert twins["record_sensitivity"]["value"] == 1.0 and twins["record_sensitivity"]["cases"] == 1
    assert twins["first_call"]["cases"] == twins["later_call"]["cases"] == 1
    experiment = experiment_name(record["run_id"])
    assert set(fake_langsmith.sessions) == {experiment}
    roots = fake_langsmith.roots()
    assert sorted(roots) == sorted(c["case_id"] for c in record["cases"])  # the twins too
    assert len(roots) == 5 and {r["session_name"] for r in fake_langsmith.runs.values()} == {experiment}
    ok = next(run for name, run in roots.items() if name.startswith("Liz_Conn") and "[cf-" not in name)
    crashed = next(run for name, run in roots.items() if name.startswith("Clemente_Kreiger"))
    assert [t["name"] for t in fake_langsmith.children(ok)] == ["get_resources", "lookup_code"]
    feedback = fake_langsmith.feedback_of(ok)  # passed, every numeric metric the task declares, the trace's grounding
    values = fake_langsmith.values_of(ok)  # the counts among them, as values
    assert {*feedback, *values} == {"passed", *ExtractionTask.metric_names, "format_ok", *GROUNDING_METRICS}
    assert {k: feedback[k] for k in ("passed", "f1", "precision", "recall", "display_accuracy")} == {
        "passed": 1.0, "f1": 1.0, "precision": 1.0, "recall": 1.0, "display_accuracy": 1.0}
    assert values["fp"] == (0, "fp = 0: a count, not a score")
    assert fake_langsmith.feedback_of(crashed) == {}
    assert crashed["error"] == "RuntimeError: agent crashed holding [REDACTED]"
    assert_no_key(fake_langsmith)

    # what both workers wrote into the cache answers a serial rerun (the crash is not cached: asked again)
    monkeypatch.delenv("LANGSMITH_API_KEY")
    rerun = pytester.runpytest(*run, "--groundeval-out-dir=rerun")
    rerun.assert_outcomes(passed=4, errors=1)
    (path,) = (pytester.path / "rerun").glob("*.json")
    cached = {c["case_id"]: c["cached"] for c in json.loads(path.read_text())["cases"]}
    assert cached == {case_id: not case_id.startswith("Clemente_Kreiger") for case_id in roots}


# -- in-process units --------------------------------------------------------------------------
def test_enabled_reads_the_key_and_langsmith_tracing() -> None:
    assert enabled({"LANGSMITH_API_KEY": "k"})
    assert enabled({"LANGSMITH_API_KEY": "k", "LANGSMITH_TRACING": "true"})
    assert not enabled({"LANGSMITH_API_KEY": "k", "LANGSMITH_TRACING": "False"})
    assert not enabled({"LANGSMITH_API_KEY": "", "LANGSMITH_TRACING": "true"})
    assert not enabled({})


def test_payload_is_small_and_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_API_KEY", "sk-secret-123456")
    record = {"case_id": "c1", "outcome": "failed", "raw_output": "x" * 50_000 + " sk-secret-123456",
              "metrics": {"f1": 0.5}, "latency_s": 1.5, "usage": {}, "error": None}
    trace = [{"tool": "t", "args": ["sk-secret-123456"], "result": "y" * 10_000, "ok": True}]
    payload = case_payload(INFO, record, trace)
    text = json.dumps(payload, default=str)
    assert "sk-secret-123456" not in text and len(text) < 10_000
    assert payload["outputs"]["answer"].endswith("[cut: 50011 characters]")  # as the run record cuts a string
    assert payload["tools"][0]["inputs"] == {"args": ["[REDACTED]"]}
    assert (payload["end_time"] - payload["start_time"]).total_seconds() == pytest.approx(1.5)


def test_langsmith_hide_outputs_is_honoured(fake_langsmith: FakeLangSmith, monkeypatch: pytest.MonkeyPatch) -> None:
    from langsmith import utils as ls_utils

    monkeypatch.setenv("LANGSMITH_HIDE_OUTPUTS", "true")
    ls_utils.get_env_var.cache_clear()  # type: ignore[attr-defined]  # langsmith caches env reads per process (a real run reads them once)
    try:
        stream = new_stream()
        trace = [{"tool": "get_resources", "args": {"q": 1}, "result": {"ok": True, "rows": ["MR/1"]}, "ok": True}]
        stream.record_case(case_record("c1", raw_output='["aspirin"]', trace=trace))
        stream.close(timeout_s=30)
    finally:
        monkeypatch.delenv("LANGSMITH_HIDE_OUTPUTS")
        ls_utils.get_env_var.cache_clear()  # type: ignore[attr-defined]
    assert stream.error is None and stream.queued == 1
    root = fake_langsmith.roots()["c1"]
    (tool,) = fake_langsmith.children(root)
    assert root["inputs"]["case_id"] == "c1" and tool["inputs"] == {"q": 1}
    assert not root.get("outputs") and not tool.get("outputs")
    assert b"aspirin" not in b"".join(fake_langsmith.bodies)
