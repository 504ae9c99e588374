"""openai-compatible against llama-cpp-python's own server (what ``local`` starts): recognised, one slot, its
context learnt from its own "too large" 400 and used to fit every later case before any call.

The loopback fake answers the routes and bodies of llama-cpp-python 0.3.36's server as its source has them
(``llama_cpp/server/app.py``: ``GET /v1/models`` with ``owned_by: "me"``, ``POST /extras/tokenize/count``
-> ``{"count": N}``, no ``/props`` (FastAPI's 404); ``llama_cpp/server/errors.py``: a prompt of at least
``n_ctx`` tokens is a 400 ``context_length_exceeded`` saying "This model's maximum context length is N
tokens"). Its tokenizer makes one token of each character.
"""

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
from tests._fakes.fake_openai import completion_body

N_CTX = 2048


class LlamaCppPythonServer:
    """llama-cpp-python's server API on 127.0.0.1 (see the module docstring)."""

    def __init__(self) -> None:
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
                if self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": "smollm2", "object": "model", "owned_by": "me", "permissions": []}]})
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer.posts.append((self.path, body))
                if self.path == "/extras/tokenize/count":
                    self._send(200, {"count": len(body["input"])})
                elif self.path == "/v1/chat/completions":
                    prompt = sum(len(m.get("content") or "") for m in body["messages"])
                    if prompt >= N_CTX:  # ErrorResponseFormatters.context_length_exceeded, chat form
                        asked = body.get("max_tokens")
                        self._send(400, {"error": {
                            "message": f"This model's maximum context length is {N_CTX} tokens. However, you "
                            f"requested {(asked or 0) + prompt} tokens ({prompt} in the messages, {asked} in the "
                            "completion). Please reduce the length of the messages or completion.",
                            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
                        }})
                    else:
                        self._send(200, completion_body("[]", model="smollm2"))
                else:
                    self._send(404, {"detail": "Not Found"})

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


@pytest.fixture
def server() -> Iterator[LlamaCppPythonServer]:
    served = LlamaCppPythonServer()
    yield served
    served.close()


def _request(case_id: str, chars: int) -> AgentRequest:
    return AgentRequest(case_id=case_id, task="extraction", prompt=Prompt(system="", user="x" * chars))


def test_the_server_is_recognised_and_its_context_learnt_from_its_own_400(server: LlamaCppPythonServer) -> None:
    agent = OpenAICompatibleAgent(AgentConfig(model="smollm2", options={"base_url": server.url, "max_retries": 0}))
    agent.warmup()
    assert agent.served.server == "llama-cpp-python" and agent.served.n_ctx is None
    assert effective_concurrency(None, agent) == 1  # one request at a time: one slot

    with pytest.raises(CaseTooLargeError) as first:  # nothing known yet: the server itself says it does not fit
        agent.run(_request("first-big", 3000))
    assert first.value.outcome == "case_too_large"
    assert first.value.attempts == 1 and len(server.completions()) == 1
    assert agent.served.n_ctx == N_CTX and agent.served.n_ctx_from == "400 context_length_exceeded"

    with pytest.raises(CaseTooLargeError) as second:  # now fitted before any call, counted by its tokenizer
        agent.run(_request("second-big", 2500))
    assert second.value.attempts == 0 and len(server.completions()) == 1
    assert second.value.details["context_tokens"] == N_CTX
    assert second.value.details["counted_by"] == "the server's tokenizer"

    small = agent.run(_request("small", 100))
    assert server.completions()[-1]["max_tokens"] == N_CTX - TEMPLATE_TOKENS - 100
    assert small.meta["server"] == "llama-cpp-python" and small.meta["n_ctx"] == N_CTX
    assert small.meta["server_slots"] == 1
