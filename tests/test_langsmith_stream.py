"""LangSmith streaming, offline: a local HTTP server stands in for the LangSmith API.

The plugin runs in a subprocess (``runpytest_subprocess``) so ``LANGSMITH_*`` variables, the
langsmith client and its threads stay out of this process. The server parses what the real
``langsmith`` client posts (``/runs/multipart``, with ``/runs/batch`` and ``/runs`` accepted too).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from groundeval.langsmith_stream import LangSmithStream, LangSmithStreamWarning, case_payload, enabled
from groundeval.runner import RunInfo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "extraction"
PICK = ("Liz_Conn", "Clemente_Kreiger")
FAKE_KEY = "fake-key-for-test"

TRACE_AGENT = '''
import os
from groundeval.agents.baseline import BaselineExtractionAgent
from groundeval.records import AgentResult

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
    print("STREAM_MODULE_LOADED", "groundeval.langsmith_stream" in sys.modules)
'''


class FakeLangSmith:
    """A LangSmith API stand-in on 127.0.0.1 that records runs; ``status``/``delay_s`` simulate trouble."""

    def __init__(self) -> None:
        self.status = 202
        self.delay_s = 0.0
        self.release = threading.Event()  # ends any delay at shutdown
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[bytes] = []
        self.runs: dict[str, dict[str, Any]] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: bytes = b"{}") -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                fake.requests.append(("GET", self.path))
                self._reply(200, b'{"version": "fake"}')

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.requests.append(("POST", self.path))
                fake.bodies.append(body)
                if fake.delay_s:
                    fake.release.wait(fake.delay_s)
                if fake.status >= 300:
                    self._reply(fake.status, b'{"detail": "simulated failure"}')
                    return
                fake.ingest(self.path, self.headers.get("Content-Type", ""), body)
                self._reply(fake.status)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.stopper = threading.Timer(120, self.stop)  # never outlives a stuck test
        self.stopper.daemon = True
        self.stopper.start()

    def ingest(self, path: str, content_type: str, body: bytes) -> None:
        if path.endswith("/runs/multipart"):
            head = f"Content-Type: {content_type}\r\n\r\n".encode()
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
            for part in message.iter_parts():
                name = str(part.get_param("name", header="content-disposition"))
                _op, run_id, *field = name.split(".")
                value = json.loads(part.get_payload(decode=True))
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

    def roots(self) -> dict[str, dict[str, Any]]:
        return {run["name"]: run for run in self.runs.values() if not run.get("parent_run_id")}

    def children(self, parent: dict[str, Any]) -> list[dict[str, Any]]:
        kids = [run for run in self.runs.values() if run.get("parent_run_id") == parent["id"]]
        return sorted(kids, key=lambda run: run["dotted_order"])

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
def data_dir(pytester: pytest.Pytester, copy_fixtures) -> Path:
    """Two real extraction fixtures in ``data/`` plus ``trace_agent.py``."""
    data = copy_fixtures(pytester.path / "data", PICK)
    pytester.makepyfile(trace_agent=TRACE_AGENT)
    return data


def run_eval(pytester: pytest.Pytester, agent: str = "baseline", *extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--groundeval-task=extraction", f"--groundeval-agent={agent}", "--groundeval-data-dir=data",
        "-p", "no:cacheprovider", *extra, timeout=120,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def assert_no_key(fake: FakeLangSmith) -> None:
    assert fake.bodies, "nothing was posted"
    assert not any(FAKE_KEY.encode() in body for body in fake.bodies)


def test_each_case_is_one_chain_run_with_its_metadata(pytester: pytest.Pytester, data_dir: Path,
                                                      fake_langsmith: FakeLangSmith) -> None:
    fake_langsmith.delay_s = 0  # explicit: a healthy server
    result = run_eval(pytester)
    result.assert_outcomes(passed=2)
    assert "LangSmith" not in result.stdout.str()  # no warning when all went well
    roots = fake_langsmith.roots()
    assert len(roots) == 2 and len(fake_langsmith.runs) == 2  # the baseline uses no tools
    assert {name.split("-")[0] for name in roots} == set(PICK)
    record = json.loads(next((pytester.path / "runs").glob("*.json")).read_text())
    for case in record["cases"]:
        run = roots[case["case_id"]]
        assert run["run_type"] == "chain" and run["session_name"] == "groundeval"
        assert run["inputs"] == {
            "case_id": case["case_id"], "task": "extraction", "prompt_sha256": case["prompt_sha256"],
            "fixture_sha256": case["fixture_sha256"],
        }
        assert run["outputs"]["answer"] == case["raw_output"]
        assert run["outputs"]["outcome"] == "passed" and run["outputs"]["metrics"] == case["metrics"]
        meta = run["extra"]["metadata"]
        assert (meta["run_id"], meta["task"], meta["agent"]) == (record["run_id"], "extraction", "baseline")
        assert meta["outcome"] == "passed" and meta["error_type"] is None
        assert run.get("error") is None and run["end_time"] >= run["start_time"]
    assert ("POST", "/runs/multipart") in fake_langsmith.requests
    assert_no_key(fake_langsmith)


def test_tool_calls_become_child_runs_and_errors_the_runs_error(pytester: pytest.Pytester, data_dir: Path,
                                                                 fake_langsmith: FakeLangSmith,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGSMITH_PROJECT", "ge-tests")
    pytester.syspathinsert()
    result = run_eval(pytester, "trace_agent:agent")
    result.assert_outcomes(passed=1, errors=1)
    roots = fake_langsmith.roots()
    assert len(roots) == 2
    ok = next(run for name, run in roots.items() if name.startswith("Liz_Conn"))
    crashed = next(run for name, run in roots.items() if name.startswith("Clemente_Kreiger"))
    assert {run["session_name"] for run in fake_langsmith.runs.values()} == {"ge-tests"}

    tools = fake_langsmith.children(ok)
    assert [(t["name"], t["run_type"]) for t in tools] == [("get_resources", "tool"), ("lookup_code", "tool")]
    assert tools[0]["inputs"] == {"resource_type": "MedicationRequest", "note": "[REDACTED]"}
    assert tools[0]["outputs"]["output"] == {"ok": True, "count": 2} and tools[0].get("error") is None
    assert tools[1]["error"] == "tool returned ok=false: no match"
    assert all(t["trace_id"] == ok["id"] for t in tools)
    meta = ok["extra"]["metadata"]
    assert meta["model"] == "scripted-1" and meta["attempts"] == 1
    assert meta["usage"] == {"input_tokens": 1200, "output_tokens": 40, "cost_usd": 0.0042}

    assert fake_langsmith.children(crashed) == []
    assert crashed["error"] == "RuntimeError: agent crashed holding [REDACTED]"
    assert crashed["outputs"]["outcome"] == "agent_error" and crashed["outputs"]["metrics"] == {}
    assert crashed["extra"]["metadata"]["error_type"] == "RuntimeError"
    assert_no_key(fake_langsmith)


@pytest.mark.parametrize("trouble", ["http_500", "unreachable"])
def test_langsmith_trouble_never_affects_the_eval(pytester: pytest.Pytester, data_dir: Path,
                                                  fake_langsmith: FakeLangSmith,
                                                  monkeypatch: pytest.MonkeyPatch, trouble: str) -> None:
    if trouble == "http_500":
        fake_langsmith.status = 500
    else:
        monkeypatch.setenv("LANGSMITH_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    start = time.perf_counter()
    result = run_eval(pytester, "baseline", "-o", "log_cli=true", "--log-cli-level=WARNING")  # show live logs
    elapsed = time.perf_counter() - start
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    out = result.stdout.str() + result.stderr.str()
    assert out.count("streaming to LangSmith failed") == 1, out
    assert "LangSmithStreamWarning" in out and "eval results are unaffected" in out
    assert "Failed to multipart ingest" not in out  # the client's own per-batch log stays quiet
    assert FAKE_KEY not in out
    assert elapsed < 20  # interpreter start-up included; the flush itself waits at most 5 s
    assert fake_langsmith.runs == {}
    if trouble == "http_500":
        assert_no_key(fake_langsmith)


def test_without_a_key_nothing_is_sent_and_the_stream_is_not_imported(pytester: pytest.Pytester, data_dir: Path,
                                                                     fake_langsmith: FakeLangSmith,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANGSMITH_API_KEY")
    pytester.makeconftest(NO_STREAM_CONFTEST)
    result = run_eval(pytester, "baseline", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*STREAM_MODULE_LOADED False*"])
    assert fake_langsmith.requests == []


def test_langsmith_tracing_false_turns_streaming_off(pytester: pytest.Pytester, data_dir: Path,
                                                     fake_langsmith: FakeLangSmith,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    run_eval(pytester).assert_outcomes(passed=2)
    assert fake_langsmith.requests == []


def test_each_xdist_worker_streams_its_own_cases(pytester: pytest.Pytester, data_dir: Path,
                                                 fake_langsmith: FakeLangSmith) -> None:
    run_eval(pytester, "baseline", "-n", "2").assert_outcomes(passed=2)
    assert len(fake_langsmith.roots()) == 2


# -- in-process units --------------------------------------------------------------------------
INFO = RunInfo(run_id="20261129T120000Z-abcdef", task="extraction", agent="scripted", model="m-1")


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
    assert payload["outputs"]["answer"].endswith("[50011 chars]")
    assert payload["tools"][0]["inputs"] == {"args": ["[REDACTED]"]}
    assert (payload["end_time"] - payload["start_time"]).total_seconds() == pytest.approx(1.5)


def test_close_is_bounded_when_the_server_hangs(fake_langsmith: FakeLangSmith) -> None:
    fake_langsmith.delay_s = 30
    stream = LangSmithStream(INFO, "groundeval")
    stream.record_case({"case_id": "c1", "outcome": "passed", "raw_output": "[]", "latency_s": 0.1})
    deadline = time.monotonic() + 10
    while not fake_langsmith.bodies and time.monotonic() < deadline:
        time.sleep(0.02)  # wait until the request is in flight
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stream.close(timeout_s=0.3)
        stream.close(timeout_s=0.3)  # a second close does not warn again
    assert time.perf_counter() - start < 2
    assert [w.category for w in caught] == [LangSmithStreamWarning]
    assert "still being sent after 0.3 s" in str(caught[0].message) and "1 of 1 case(s)" in str(caught[0].message)
    stream.record_case({"case_id": "c2", "outcome": "passed"})  # after close: ignored, no error
    assert stream.sent == 0


def test_langsmith_hide_outputs_is_honoured(fake_langsmith: FakeLangSmith, monkeypatch: pytest.MonkeyPatch) -> None:
    from langsmith import utils as ls_utils

    monkeypatch.setenv("LANGSMITH_HIDE_OUTPUTS", "true")
    ls_utils.get_env_var.cache_clear()  # langsmith caches env reads per process (a real run reads them once)
    try:
        stream = LangSmithStream(INFO, "groundeval")
        trace = [{"tool": "get_resources", "args": {"q": 1}, "result": {"ok": True, "rows": ["MR/1"]}, "ok": True}]
        stream.record_case({"case_id": "c1", "outcome": "passed", "raw_output": '["aspirin"]', "latency_s": 0.1}, trace)
        stream.close(timeout_s=10)
    finally:
        monkeypatch.delenv("LANGSMITH_HIDE_OUTPUTS")
        ls_utils.get_env_var.cache_clear()
    assert stream.error is None and stream.sent == 1
    root = fake_langsmith.roots()["c1"]
    (tool,) = fake_langsmith.children(root)
    assert root["inputs"]["case_id"] == "c1" and tool["inputs"] == {"q": 1}
    assert not root.get("outputs") and not tool.get("outputs")
    assert b"aspirin" not in b"".join(fake_langsmith.bodies)
