"""Reading a batched request's result that holds no answer (batch routing of ``models.policy``).

With ``--groundeval-batch`` the policy hands each request to the model's batcher
(``models.batch``); a ``succeeded`` result is read as a direct call's reply, and any other is the
error ``batch_failure`` makes of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groundeval.errors import AgentError, BatchNotRunError, InfraError

if TYPE_CHECKING:
    from groundeval.models.base import ModelRequest
    from groundeval.models.batch import Batcher, BatchResult
    from groundeval.models.providers.base import Provider

__all__ = ["batch_failure"]


def batch_failure(
    api: Provider[Any], request: ModelRequest, result: BatchResult, batcher: Batcher, marks: dict[str, Any]
) -> AgentError:
    """The error of a batched request that has no answer.

    Args:
        api: The model's provider (an ``errored`` request is classified as a direct call's error).
        request: The request.
        result: Its batch result (not ``succeeded``).
        batcher: The batcher it went through (its API's name, its longest wait).
        marks: ``batch``, ``batch_id``, ``custom_id``, ``batch_resumed``, ``batch_wait_s``, put in
            the error's details.

    Returns:
        The provider's own class for an ``errored`` request; ``BatchNotRunError`` for a request
        cancelled, abandoned or never sent; ``InfraError`` for one that expired or outlived the
        longest wait (the message says how to collect or resend it).
    """
    label, batch = request.label, result.batch_id
    where = batcher.api.name
    if result.kind == "errored" and result.error is not None:
        error = api.classify(result.error, label, attempts=1, note="")  # as a direct call's
        error.details.update(marks)
        return error
    if result.kind == "cancelled":
        return BatchNotRunError(f"{label}: batch {batch} was cancelled before the provider ran this request",
                                attempts=0, details=marks)
    if result.kind == "abandoned":
        return BatchNotRunError(
            f"{label}: the run stopped while batch {batch} was out; run the same command again to collect its "
            f"results without paying again, or cancel batch {batch} at {where}", attempts=0, details=marks,
        )
    if result.kind == "not_sent":
        return BatchNotRunError(f"{label}: the run stopped before this request was sent in a batch",
                                attempts=0, details=marks)
    if result.kind == "timed_out":
        waited = batcher.settings.max_wait_s
        return InfraError(
            f"{label}: batch {batch} was still processing after the longest wait ({waited:g} s, "
            "--groundeval-batch-max-wait); its results stay at the provider: run the same command again to "
            f"collect them without paying again, or cancel batch {batch} at {where}",
            attempts=1, details=marks,
        )
    return InfraError(
        f"{label}: the request {result.kind} in batch {batch} before {where} ran it (the provider's "
        "24-hour window ended); run again to send it in a new batch",
        attempts=1, details=marks,
    )
