"""The local agent in a run: one server per process, concurrency 1, facts recorded, no server left behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.forked import ForkedPytest

from .fakes import AGENT_MODULE, FAKE_SERVER, death_signal, recorded, requests_sent, server_pid, wait_gone, write_model

SELECT = "no-medication--Clemente or no-medication-commission"


def _run(pytester: pytest.Pytester, model: Path, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makepyfile(fake_local=AGENT_MODULE)
    result = pytester.runpytest(
        "--groundeval-task=reconcile", "--groundeval-agent=fake_local:FakeLocalAgent", f"--groundeval-model={model}",
        "-p", "no:cacheprovider", *args,
    )
    (path,) = (pytester.path / "runs").glob("*.json")
    return result, json.loads(path.read_text())


def _log(pytester: pytest.Pytester) -> Path:
    (log,) = (pytester.path / "runs").glob("llama-server-*.log")
    return log


def test_a_run_starts_one_server_sends_the_cases_and_stops_it(pytester: pytest.Pytester, live_pids: list[int]) -> None:
    model = write_model(pytester.path / "SmolLM2-135M-Instruct.Q4_1.gguf", replies=["nested", "fenced"])
    result, record = _run(pytester, model, "-k", SELECT, "--groundeval-concurrency=4")
    log = _log(pytester).read_text()
    pid = server_pid(log)
    live_pids.append(pid)
    assert log.count("fake llama server pid") == 1  # one server for the run
    if sys.platform.startswith("linux"):  # started by the run's main thread, asking to die with it
        assert death_signal(log) == signal.SIGKILL
    assert wait_gone(pid, bound_s=0.0) or wait_gone(pid)  # stopped when the session ended
    assert record["settings"]["concurrency"] == 1  # one request at a time, whatever was asked
    assert record["model"] == "SmolLM2-135M-Instruct.Q4_1" and record["agent"] == "local"
    cases = {c["case_id"].split("--")[0]: c for c in record["cases"]}
    assert len(record["cases"]) == 2 and len(requests_sent(log)) == 2
    for case, reply in zip(sorted(record["cases"], key=lambda c: c["started_at"]), ("nested", "fenced"), strict=True):
        body = recorded(reply)["body"]
        assert case["raw_output"] == body["choices"][0]["message"]["content"]
        assert case["usage"]["input_tokens"] == body["usage"]["prompt_tokens"]
        assert case["agent_meta"]["model_license"] == "apache-2.0" and len(case["agent_meta"]["model_sha256"]) == 64
        assert case["outcome"] in ("passed", "partial", "failed", "no_answer")  # scored: the answer was the model's
    assert cases["no-medication"]["agent_meta"]["server_log"] == str(_log(pytester))
    result.stdout.fnmatch_lines(["agent: local  model: SmolLM2-135M-Instruct.Q4_1  run: *"])


def test_a_server_that_cannot_start_is_config_error_and_stops_the_run(
    pytester: pytest.Pytester, live_pids: list[int]
) -> None:
    model = write_model(pytester.path / "broken.gguf", fail="exit")
    result, record = _run(pytester, model, "-k", SELECT)
    live_pids.append(server_pid(_log(pytester).read_text()))
    outcomes = sorted(c["outcome"] for c in record["cases"])
    assert outcomes == ["config_error", "not_run"]
    (failed,) = (c for c in record["cases"] if c["outcome"] == "config_error")
    assert "invalid magic characters" in failed["message"] and str(FAKE_SERVER) in failed["message"]
    result.stdout.fnmatch_lines(["*config_error: the llama.cpp server*exited with status 1 before it answered*",
                                 "*stopped after config_error on no-medication--Clemente*"])


def _wait_for_request(path: Path, running: Callable[[], bool], bound_s: float = 300.0) -> int:
    """The server's pid, once its first completion request arrived (the run is then mid-case)."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        logs = list((path / "runs").glob("llama-server-*.log"))
        if logs and requests_sent(logs[0].read_text()):
            return server_pid(logs[0].read_text())
        assert running(), "the run ended before its first request"
        time.sleep(0.05)
    raise AssertionError("no request reached the server")


def test_ctrl_c_in_the_middle_of_a_case_leaves_no_server(tmp_path: Path, live_pids: list[int]) -> None:
    """Ctrl-C (SIGINT, KeyboardInterrupt) reaches a run of its own, forked from this process.

    The forked run restores the default SIGINT handler, as pytest in a terminal has it, and starts
    its server from its own main thread, as any run does.
    """
    model = write_model(tmp_path / "slow.gguf", replies=["stop"], delay_s=120)
    (tmp_path / "fake_local.py").write_text(AGENT_MODULE)
    run = ForkedPytest(tmp_path, [
        "--groundeval-task=reconcile", "--groundeval-agent=fake_local:FakeLocalAgent", f"--groundeval-model={model}",
        "-k", SELECT, "-p", "no:cacheprovider", "-p", "no:randomly"])
    try:
        live_pids.append(_wait_for_request(tmp_path, lambda: run.poll() is None))
        run.send_signal(signal.SIGINT)
        assert run.wait(300) != 0, run.communicate(5)  # a bound far above the few seconds it takes
    finally:
        run.kill()
        run.wait(300)
    assert wait_gone(live_pids[0])
    (path,) = (tmp_path / "runs").glob("*.json")
    assert json.loads(path.read_text())["complete"] is False  # the record was still written


KILLED_HARNESS = (
    "import json, sys, time, urllib.request; from pathlib import Path; "
    "from groundeval.models.llama_server import LlamaServer; "
    "server = LlamaServer(Path(sys.argv[1]), alias='slow', n_ctx=512, n_threads=1, log_path=Path(sys.argv[2]), "
    "command=(sys.executable, sys.argv[3])); server.start(); "
    "body = json.dumps({'model': 'slow', 'messages': [{'role': 'user', 'content': 'hi'}]}).encode(); "
    "urllib.request.urlopen(urllib.request.Request(server.base_url + '/chat/completions', data=body, "
    "headers={'content-type': 'application/json'}), timeout=600); time.sleep(600)"
)
"""A process that starts the server from its main thread, as a run does, and is mid-request when killed."""


def test_a_harness_killed_outright_takes_its_server_with_it(tmp_path: Path, live_pids: list[int]) -> None:
    """SIGKILL (no sessionfinish, no atexit): only the parent-death signal is left to stop the server.

    That a run's server asks for that signal (SIGKILL when the run's main thread dies) is checked on
    a real run by ``test_a_run_starts_one_server_sends_the_cases_and_stops_it``; here the process
    killed is the smallest that starts the server the same way (``LlamaServer.start`` from its main
    thread) and has a request in flight.
    """
    model = write_model(tmp_path / "slow.gguf", replies=["stop"], delay_s=120)
    run = subprocess.Popen(
        [sys.executable, "-c", KILLED_HARNESS, str(model), str(tmp_path / "runs" / "llama-server-slow.log"),
         str(FAKE_SERVER)],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        live_pids.append(_wait_for_request(tmp_path, lambda: run.poll() is None))
        assert death_signal(next((tmp_path / "runs").glob("llama-server-*.log")).read_text()) == signal.SIGKILL
        run.send_signal(signal.SIGKILL)
        run.wait(300)
    finally:
        run.kill()
        run.wait()
    assert wait_gone(live_pids[0])
