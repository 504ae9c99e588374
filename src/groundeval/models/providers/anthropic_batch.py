"""Anthropic's Message Batches API as a ``models.batch.BatchAPI``.

A batch holds up to 100,000 requests or 256 MB, each ``{"custom_id", "params"}`` where
``params`` is the body of a Messages API request; it is sent inline
(``messages.batches.create``), polled (``messages.batches.retrieve``: ``processing_status``
``in_progress | canceling | ended``, ``request_counts``) and its results are streamed as JSONL
(``messages.batches.results``), in any order, each ``succeeded`` (the ``Message``), ``errored``
(an error object), ``canceled`` or ``expired``. Source:
https://platform.claude.com/docs/en/build-with-claude/batch-processing (read 2026-12-02).

An errored request's error object is turned back into the SDK's own exception class (the
client's ``_make_status_error_from_response`` on a response with the status the error type
stands for), so ``models.classify`` classes it exactly as it classes a direct call's error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from groundeval.models.batch import BatchResult, BatchStatus

if TYPE_CHECKING:
    from groundeval.models.providers.anthropic import AnthropicProvider

__all__ = ["ERROR_STATUS", "AnthropicBatches"]

ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400, "authentication_error": 401, "billing_error": 402, "permission_error": 403,
    "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
    "timeout_error": 504, "overloaded_error": 529,
}
"""Anthropic error type -> the HTTP status a direct call answers it with
(https://platform.claude.com/docs/en/api/errors, read 2026-12-02); an unknown type is a 500."""
HTTP_TIMEOUT_S = 120.0
"""Timeout of one batch API call (create, poll, results), seconds."""


class AnthropicBatches:
    """The Message Batches endpoint of an ``AnthropicProvider``'s client.

    Args:
        api: The provider whose SDK client (``client()``) sends the batches.
    """

    name = "Anthropic Message Batches"
    provider = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, api: AnthropicProvider) -> None:
        self.api = api

    def entry(self, custom_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """``{"custom_id", "params"}``: the Messages API body (``extra_body`` merged in)."""
        body = {k: v for k, v in params.items() if k != "extra_body"}
        body.update(params.get("extra_body") or {})
        return {"custom_id": custom_id, "params": body}

    def create(self, entries: list[dict[str, Any]]) -> str:
        """Send the batch; return its id."""
        batch = self.api.client().messages.batches.create(requests=entries, timeout=HTTP_TIMEOUT_S)  # type: ignore[arg-type]
        return str(batch.id)

    def status(self, batch_id: str) -> BatchStatus:
        """``ended`` once ``processing_status`` is ``ended``; the request counts as reported."""
        batch = self.api.client().messages.batches.retrieve(batch_id, timeout=HTTP_TIMEOUT_S)
        c = batch.request_counts
        counts = {"succeeded": c.succeeded, "errored": c.errored, "processing": c.processing,
                  "expired": c.expired, "cancelled": c.canceled}
        return BatchStatus(ended=batch.processing_status == "ended", counts=counts)

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """Each request's result; ``errored`` ones carry the SDK exception of a direct call."""
        for item in self.api.client().messages.batches.results(batch_id, timeout=HTTP_TIMEOUT_S):
            result = item.result
            cid = str(item.custom_id)
            if result.type == "succeeded":
                yield BatchResult("succeeded", cid, batch_id, value=result.message)
            elif result.type == "errored":
                yield BatchResult("errored", cid, batch_id, error=self._error(result.error.model_dump(mode="json")))
            elif result.type == "canceled":
                yield BatchResult("cancelled", cid, batch_id)
            else:
                yield BatchResult("expired", cid, batch_id)

    def cancel(self, batch_id: str) -> None:
        """Ask Anthropic to cancel the batch."""
        self.api.client().messages.batches.cancel(batch_id, timeout=HTTP_TIMEOUT_S)

    def _error(self, body: dict[str, Any]) -> BaseException:
        """The SDK exception a direct call answered with ``body`` (``{"type": "error", "error": {...}}``) raises."""
        import httpx2

        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        status = ERROR_STATUS.get(str((error or {}).get("type")), 500)
        client = self.api.client()
        url = f"{str(client.base_url).rstrip('/')}/v1/messages"
        response = httpx2.Response(status, json=body, request=httpx2.Request("POST", url))
        return client._make_status_error_from_response(response)
