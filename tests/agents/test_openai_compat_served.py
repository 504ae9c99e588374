"""The openai-compatible agent asks its server about itself: a loopback llama.cpp-style and vLLM-style server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import AgentConfig
from groundeval.agents.openai_compat import OpenAICompatibleAgent
from groundeval.errors import CaseTooLargeError
from groundeval.execution import effective_concurrency
from groundeval.models.providers.openai_compat import TEMPLATE_TOKENS
from groundeval.models.served import MIN_OUTPUT_TOKENS
from tests._fakes.fake_openai import completion_body


class Served:
    """A server on 127.0.0.1 answering ``gets`` (path -> JSON) and chat completions; its tokenizer: 1 token a character."""

    def __init__(self, gets: dict[str, Any]) -> None:
        self.gets = gets
        self.posts: list[tuple[str, dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path in outer.gets:
                    self._send(200, outer.gets[self.path])
                else:
                    self._send(404, {"error": {"message": "Not Found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer.posts.append((self.path, body))
                if self.path == "/tokenize" and "content" in body:  # llama.cpp
                    self._send(200, {"tokens": list(range(len(body["content"])))})
                elif self.path == "/tokenize":  # vLLM
                    self._send(200, {"count": len(body["prompt"]), "max_model_len": 4096})
                else:
                    self._send(200, completion_body("[]", model="served-model"))

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def completions(self) -> list[dict[str, Any]]:
        return [body for path, body in self.posts if path == "/v1/chat/completions"]


LLAMA_CPP = {
    "/props": {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1,
               "model_path": "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf", "build_info": "b6000-abc"},
    "/v1/models": {"object": "list", "data": [{"id": "served-model", "object": "model"}]},
}
VLLM = {"/v1/models": {"object": "list", "data": [
    {"id": "served-model", "object": "model", "root": "Qwen/Qwen2.5-7B-Instruct", "max_model_len": 4096}]}}


@pytest.fixture(params=["llama.cpp", "vllm"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, Served]]:
    served = Served(LLAMA_CPP if request.param == "llama.cpp" else VLLM)
    yield request.param, served
    served.close()


def _request(case_id: str, chars: int) -> AgentRequest:
    return AgentRequest(case_id=case_id, task="extraction", prompt=Prompt(system="", user="x" * chars))


def test_the_agent_fits_each_case_to_the_servers_context_and_records_what_it_said(
    server: tuple[str, Served],
) -> None:
    kind, served = server
    n_ctx = 2048 if kind == "llama.cpp" else 4096
    agent = OpenAICompatibleAgent(AgentConfig(model="served-model", options={"base_url": served.url}))
    agent.warmup()
    with pytest.raises(CaseTooLargeError) as info:  # leaves MIN_OUTPUT_TOKENS - 1: refused, never sent
        agent.run(_request("big", n_ctx - TEMPLATE_TOKENS - (MIN_OUTPUT_TOKENS - 1)))
    assert info.value.attempts == 0 and info.value.details["counted_by"] == "the server's tokenizer"
    assert info.value.details["context_tokens"] == n_ctx
    tight = agent.run(_request("tight", n_ctx - TEMPLATE_TOKENS - 1000))
    small = agent.run(_request("small", 10))
    assert [body["max_tokens"] for body in served.completions()] == [1000, min(4096, n_ctx - TEMPLATE_TOKENS - 10)]
    assert tight.meta["max_tokens"] == 1000
    meta = small.meta
    assert meta["server_model_id"] == "served-model" and meta["n_ctx"] == n_ctx and meta["server"] == kind
    if kind == "llama.cpp":
        assert meta["server_slots"] == 1 and meta["n_ctx_from"] == "GET /props"
        assert meta["server_model_path"].endswith(".gguf") and meta["server_build"] == "b6000-abc"
        assert effective_concurrency(None, agent) == 1  # capped to the server's one slot
    else:
        assert "server_slots" not in meta and meta["server_model_path"] == "Qwen/Qwen2.5-7B-Instruct"
        assert effective_concurrency(None, agent) == 4  # vLLM says no slot count: the default stands


def test_a_server_that_says_nothing_is_left_to_decide() -> None:
    served = Served({})
    try:
        agent = OpenAICompatibleAgent(AgentConfig(model="served-model", options={"base_url": served.url}))
        result = agent.run(_request("any", 100_000))
    finally:
        served.close()
    assert agent.served.n_ctx is None and agent.max_concurrency is None
    assert [path for path, _ in served.posts] == ["/v1/chat/completions"]  # no tokenizer call, no pre-flight
    assert result.meta["max_tokens"] == 4096 and "n_ctx" not in result.meta
