"""Fake batch APIs (Anthropic Message Batches, OpenAI Batch) behind ``httpx2.MockTransport``.

The model layer talks to them through the real ``anthropic`` and ``openai`` SDKs; only the HTTP
transport is replaced. Switches: how many polls a batch takes, polls that fail first, results in
reverse order, a per-request answer (``succeeded`` with a text or a stop reason, ``errored`` with
an error type, ``expired``, ``canceled``), a batch rejected whole at create (Anthropic) or
``failed`` after upload (OpenAI), and batches that never end.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

Answer = Callable[[str, dict[str, Any]], dict[str, Any]]
"""(custom_id, request body) -> ``{"type": "succeeded", "text", "stop_reason"?}`` /
``{"type": "errored", "error_type", "status"?}`` / ``{"type": "expired"}`` / ``{"type": "canceled"}``."""


def echo(custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Answer each request with its last user message (so each result shows whose it is)."""
    return {"type": "succeeded", "text": str(body["messages"][-1]["content"])}


@dataclass
class FakeBatches:
    """State and switches shared by both fakes.

    Attributes:
        polls_to_end: Retrieves a batch answers ``in progress`` before it has ended.
        failing_polls: Retrieves that answer 500 first (across batches).
        answer: Decides each request's result.
        reject_create: An error type the batch create is refused with (whole batch), or None.
        fail_batch: OpenAI only: the batch ends ``failed`` with this reason.
        never_end: Batches never end.
        created: Every batch created: its id and its requests (custom id -> body), in order.
        polls: Retrieves answered.
    """

    polls_to_end: int = 1
    failing_polls: int = 0
    answer: Answer = echo
    reject_create: str | None = None
    fail_batch: str | None = None
    never_end: bool = False
    created: list[tuple[str, dict[str, dict[str, Any]]]] = field(default_factory=list)
    polls: int = 0
    _seen: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self, batch_id: str) -> dict[str, dict[str, Any]]:
        return dict(self.created)[batch_id]

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handle))

    state: str | None = None
    """A JSON file the batches created are kept in, so that a fake made by another run sees them."""

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        with self._lock:
            if self.state and not self.created:
                with contextlib.suppress(OSError, ValueError):
                    self.created = [(b, r) for b, r in json.loads(Path(self.state).read_text())]
            response = self.route(request)
            if self.state:  # written whole, then renamed: a process killed mid-write leaves the old file
                Path(self.state + ".tmp").write_text(json.dumps(self.created))
                Path(self.state + ".tmp").replace(self.state)
            return response

    def route(self, request: httpx2.Request) -> httpx2.Response:  # pragma: no cover - overridden
        raise NotImplementedError

    def _poll(self, batch_id: str) -> bool | None:
        """Whether the batch has ended now; None for a poll that fails."""
        self.polls += 1
        if self.failing_polls > 0:
            self.failing_polls -= 1
            return None
        self._seen[batch_id] = self._seen.get(batch_id, 0) + 1
        return not self.never_end and self._seen[batch_id] >= self.polls_to_end


def _error_body(error_type: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": f"fake {error_type}"}}


class FakeAnthropicBatches(FakeBatches):
    """``/v1/messages/batches`` (create, retrieve, results)."""

    def route(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/messages/batches":
            if self.reject_create:
                return httpx2.Response(400, json=_error_body(self.reject_create))
            batch_id = f"msgbatch_{len(self.created) + 1:03d}"
            body = json.loads(request.content)
            self.created.append((batch_id, {r["custom_id"]: r["params"] for r in body["requests"]}))
            return httpx2.Response(200, json=self._batch(batch_id, ended=False))
        parts = path.split("/")
        if len(parts) >= 5 and parts[4] not in dict(self.created):
            return httpx2.Response(404, json=_error_body("not_found_error"))
        if request.method == "GET" and len(parts) == 5:
            ended = self._poll(parts[4])
            if ended is None:
                return httpx2.Response(500, json=_error_body("api_error"))
            return httpx2.Response(200, json=self._batch(parts[4], ended=ended))
        if request.method == "GET" and len(parts) == 6 and parts[5] == "results":
            lines = [json.dumps({"custom_id": cid, "result": self._result(cid, body)})
                     for cid, body in self.requests(parts[4]).items()]
            return httpx2.Response(200, content="\n".join(reversed(lines)).encode())  # not in request order
        return httpx2.Response(404, json=_error_body("not_found_error"))

    def _batch(self, batch_id: str, *, ended: bool) -> dict[str, Any]:
        n = len(self.requests(batch_id))
        counts = {"processing": 0 if ended else n, "succeeded": n if ended else 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        return {
            "id": batch_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts, "created_at": "2026-12-02T08:00:00Z", "expires_at": "2026-12-03T08:00:00Z",
            "ended_at": "2026-12-02T08:10:00Z" if ended else None, "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"https://api.anthropic.com/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def _result(self, cid: str, body: dict[str, Any]) -> dict[str, Any]:
        said = self.answer(cid, body)
        if said["type"] == "succeeded":
            message = {
                "id": f"msg_{cid[-8:]}", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": said["text"]}], "stop_reason": said.get("stop_reason", "end_turn"),
                "stop_sequence": None,
                "usage": {"input_tokens": 1000, "output_tokens": 40, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "service_tier": "batch"},
            }
            return {"type": "succeeded", "message": message}
        if said["type"] == "errored":
            return {"type": "errored", "error": _error_body(said["error_type"])}
        return {"type": said["type"]}


class FakeOpenAIBatches(FakeBatches):
    """``/v1/files`` (upload, content) and ``/v1/batches`` (create, retrieve)."""

    def __init__(self, **switches: Any) -> None:
        super().__init__(**switches)
        self.files: dict[str, str] = {}
        self.batches: dict[str, str] = {}  # batch id -> input file id

    def route(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/files":
            file_id = f"file-{len(self.files) + 1}"
            text = request.content.decode()
            self.files[file_id] = "\n".join(line for line in text.splitlines() if line.startswith('{"custom_id"'))
            return httpx2.Response(200, json={"id": file_id, "object": "file", "bytes": len(text), "created_at": 0,
                                              "filename": "batch.jsonl", "purpose": "batch", "status": "processed"})
        if request.method == "POST" and path == "/v1/batches":
            body = json.loads(request.content)
            batch_id = f"batch_{len(self.created) + 1:03d}"
            entries = [json.loads(line) for line in self.files[body["input_file_id"]].splitlines()]
            self.created.append((batch_id, {e["custom_id"]: e["body"] for e in entries}))
            self.batches[batch_id] = body["input_file_id"]
            return httpx2.Response(200, json=self._batch(batch_id, "validating"))
        parts = path.split("/")
        if request.method == "GET" and len(parts) == 4 and parts[2] == "batches":
            ended = self._poll(parts[3])
            if ended is None:
                return httpx2.Response(503, json={"error": {"message": "unavailable", "type": "server_error"}})
            state = ("failed" if self.fail_batch else "completed") if ended else "in_progress"
            return httpx2.Response(200, json=self._batch(parts[3], state))
        if request.method == "GET" and len(parts) == 5 and parts[4] == "content":
            return httpx2.Response(200, content=self.files[parts[3]].encode())
        return httpx2.Response(404, json={"error": {"message": "not found", "type": "invalid_request_error"}})

    def _batch(self, batch_id: str, state: str) -> dict[str, Any]:
        n = len(self.requests(batch_id))
        out: dict[str, Any] = {
            "id": batch_id, "object": "batch", "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "input_file_id": self.batches.get(batch_id, "file-0"), "status": state, "created_at": 0,
            "request_counts": {"total": n, "completed": n if state == "completed" else 0, "failed": 0},
        }
        if state == "failed":
            out["errors"] = {"object": "list", "data": [{"code": "invalid_file", "message": self.fail_batch}]}
        if state == "completed":
            out["output_file_id"], out["error_file_id"] = self._write_results(batch_id)
        return out

    def _write_results(self, batch_id: str) -> tuple[str, str]:
        good, bad = [], []
        for cid, body in self.requests(batch_id).items():
            said = self.answer(cid, body)
            if said["type"] == "succeeded":
                completion = {
                    "id": f"chatcmpl-{cid[-6:]}", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": said.get("stop_reason", "stop"),
                                 "message": {"role": "assistant", "content": said["text"]}}],
                    "usage": {"prompt_tokens": 1000, "completion_tokens": 40, "total_tokens": 1040},
                }
                good.append({"custom_id": cid, "response": {"status_code": 200, "request_id": "r", "body": completion},
                             "error": None})
            elif said["type"] == "errored":
                status = said.get("status", 400)
                err = {"error": {"message": f"fake {said['error_type']}", "type": said["error_type"]}}
                bad.append({"custom_id": cid, "response": {"status_code": status, "request_id": "r", "body": err},
                            "error": None})
            else:
                code = {"expired": "batch_expired", "canceled": "batch_cancelled"}[said["type"]]
                bad.append({"custom_id": cid, "response": None, "error": {"code": code, "message": code}})
        out_id, err_id = f"file-out-{batch_id}", f"file-err-{batch_id}"
        self.files[out_id] = "\n".join(json.dumps(x) for x in reversed(good))
        self.files[err_id] = "\n".join(json.dumps(x) for x in bad)
        return out_id, err_id
