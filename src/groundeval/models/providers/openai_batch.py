"""OpenAI's Batch API (and servers that copy it) as a ``models.batch.BatchAPI``.

A batch is a JSONL file of up to 50,000 requests or 200 MB, one
``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` a line, uploaded with
``files.create(purpose="batch")`` and started with ``batches.create(input_file_id, endpoint,
completion_window="24h")``; ``batches.retrieve`` reports ``validating | in_progress |
finalizing | completed | failed | expired | cancelling | cancelled`` and ``request_counts``; the
results are two JSONL files (``output_file_id``, ``error_file_id``), in any order, each line
``{"custom_id", "response": {"status_code", "request_id", "body"}, "error"}``. A batch whose
input was refused is ``failed`` with its reasons in ``errors``. Requests an expired or cancelled
batch never ran come back in the error file with the codes ``batch_expired`` /
``batch_cancelled``. Source: https://platform.openai.com/docs/guides/batch and
https://platform.openai.com/docs/api-reference/batch (read 2026-12-02).

A request that failed is turned back into the SDK's own exception class (the client's
``_make_status_error_from_response``), so ``models.classify`` classes it as a direct call's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from groundeval.models.batch import BatchResult, BatchStatus

if TYPE_CHECKING:
    from groundeval.models.providers.openai_compat import OpenAICompatibleProvider

__all__ = ["ENDPOINT", "OpenAIBatches"]

ENDPOINT: Final[Literal["/v1/chat/completions"]] = "/v1/chat/completions"
"""The endpoint every request of a batch goes to."""
HTTP_TIMEOUT_S = 120.0
"""Timeout of one batch API call (upload, create, poll, download), seconds."""
_ENDED = frozenset({"completed", "expired", "cancelled"})
_NOT_RUN = {"batch_expired": "expired", "batch_cancelled": "cancelled"}


class OpenAIBatches:
    """The Batch API of an ``OpenAICompatibleProvider``'s server.

    Args:
        api: The provider whose SDK client (``client()``) uploads and sends the batches.
    """

    name = "the OpenAI Batch API"
    provider = "openai-compatible"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, api: OpenAICompatibleProvider) -> None:
        self.api = api

    def entry(self, custom_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """One line of the input file: the chat-completions body under ``body``."""
        return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": dict(params)}

    def create(self, entries: list[dict[str, Any]]) -> str:
        """Upload the input file and start the batch; return its id."""
        client = self.api.client()
        data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries).encode("utf-8")
        uploaded = client.files.create(file=("groundeval-batch.jsonl", data, "application/jsonl"), purpose="batch",
                                       timeout=HTTP_TIMEOUT_S)
        batch = client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h",
                                      timeout=HTTP_TIMEOUT_S)
        return str(batch.id)

    def status(self, batch_id: str) -> BatchStatus:
        """``ended`` once completed, expired or cancelled; a ``failed`` batch carries its reasons as a 400."""
        batch = self.api.client().batches.retrieve(batch_id, timeout=HTTP_TIMEOUT_S)
        c = batch.request_counts
        done, failed, total = (c.completed, c.failed, c.total) if c is not None else (0, 0, 0)
        counts = {"succeeded": done, "errored": failed, "processing": max(total - done - failed, 0)}
        if batch.status == "failed":
            reasons = [e.message or e.code or "" for e in (batch.errors.data or [])] if batch.errors else []
            body = {"error": {"message": "; ".join(r for r in reasons if r) or "the batch failed",
                              "type": "invalid_request_error", "code": "batch_failed"}}
            return BatchStatus(ended=True, counts=counts, failure=self._error(400, body))
        return BatchStatus(ended=batch.status in _ENDED, counts=counts)

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """The lines of the output and error files, as results."""
        from openai.types.chat import ChatCompletion

        client = self.api.client()
        batch = client.batches.retrieve(batch_id, timeout=HTTP_TIMEOUT_S)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = client.files.content(file_id, timeout=HTTP_TIMEOUT_S).text
            for line in text.splitlines():
                if not line.strip():
                    continue
                item = json.loads(line)
                cid = str(item.get("custom_id"))
                response = item.get("response") or {}
                error = item.get("error") or {}
                status = response.get("status_code")
                if status == 200:
                    yield BatchResult("succeeded", cid, batch_id, value=ChatCompletion.model_validate(response["body"]))
                elif error.get("code") in _NOT_RUN and not status:
                    yield BatchResult(_NOT_RUN[error["code"]], cid, batch_id)  # type: ignore[arg-type]
                else:
                    body = response.get("body") or {"error": error}
                    yield BatchResult("errored", cid, batch_id, error=self._error(int(status or 500), body))

    def cancel(self, batch_id: str) -> None:
        """Ask the server to cancel the batch."""
        self.api.client().batches.cancel(batch_id, timeout=HTTP_TIMEOUT_S)

    def _error(self, status: int, body: Any) -> BaseException:
        """The SDK exception a direct call answered with ``status`` and ``body`` raises."""
        import httpx2

        client = self.api.client()
        url = f"{str(client.base_url).rstrip('/')}/chat/completions"
        response = httpx2.Response(status, json=body, request=httpx2.Request("POST", url))
        return client._make_status_error_from_response(response)
