"""A provider batch API as the batcher (``models.batch``) sees it.

The ``BatchAPI`` protocol, the values it answers with (``BatchResult``, ``BatchStatus``) and the
progress shown while a batch is out (``BatchProgress``). The providers' adapters are
``models.providers.anthropic_batch`` and ``models.providers.openai_batch``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = ["BatchAPI", "BatchProgress", "BatchResult", "BatchStatus", "ResultKind"]

ResultKind = Literal["succeeded", "errored", "expired", "cancelled", "timed_out", "not_sent", "abandoned"]


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One request's result, as the batch API gave it.

    Attributes:
        kind: See the module docstring.
        custom_id: The request's id in its batch.
        batch_id: The batch that held it (None when it was never sent).
        value: ``succeeded``: the SDK's response object (a ``Message``, a ``ChatCompletion``).
        error: ``errored``: the SDK's exception for the request's error (``APIStatusError``
            subclasses), or the batch create's exception when the batch was rejected whole.
        resumed: True when the request was sent by an earlier run (found in the journal).
        waited_s: Seconds this call waited for the result.
    """

    kind: ResultKind
    custom_id: str
    batch_id: str | None = None
    value: Any = None
    error: BaseException | None = None
    resumed: bool = False
    waited_s: float = 0.0


@dataclass(frozen=True, slots=True)
class BatchStatus:
    """A batch as a poll sees it.

    Attributes:
        ended: True once the provider has finished with every request (results readable).
        counts: ``succeeded``, ``errored``, ``processing`` (and ``expired``, ``cancelled``)
            request counts as the provider reports them.
        failure: The exception for a batch rejected whole (OpenAI's ``failed`` status: the input
            file was refused), else None.
    """

    ended: bool
    counts: Mapping[str, int] = field(default_factory=dict)
    failure: BaseException | None = None


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """What the terminal shows of a batch still out (after each poll).

    Attributes:
        batch_id: The provider's batch id.
        requests: Requests it holds.
        counts: As ``BatchStatus.counts``.
        waited_s: Seconds since it was sent (or since this run found it in the journal).
    """

    batch_id: str
    requests: int
    counts: Mapping[str, int]
    waited_s: float

    def line(self) -> str:
        """``batch msgbatch_01: 40 requests, 12 succeeded, 0 errored, 28 processing, waited 3m05s``."""
        minutes, seconds = divmod(int(self.waited_s), 60)
        c = self.counts
        return (f"batch {self.batch_id}: {self.requests} requests, {c.get('succeeded', 0)} succeeded, "
                f"{c.get('errored', 0)} errored, {c.get('processing', 0)} processing, "
                f"waited {minutes}m{seconds:02d}s")


class BatchAPI(Protocol):
    """A provider's batch endpoint (``models.providers.anthropic_batch``, ``models.providers.openai_batch``).

    Attributes:
        name: The API's name, for messages (``Anthropic Message Batches``).
        provider: The spec's provider prefix (``anthropic``).
        max_requests: The provider's most requests per batch.
        max_bytes: The provider's most bytes per batch (request entries as JSON).
    """

    name: str
    provider: str
    max_requests: int
    max_bytes: int

    def entry(self, custom_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """One request as the batch holds it, from a direct call's SDK arguments."""
        ...

    def create(self, entries: list[dict[str, Any]]) -> str:
        """Send a batch of ``entry`` dicts; return the batch id. Raises the SDK's exceptions."""
        ...

    def status(self, batch_id: str) -> BatchStatus:
        """Poll a batch. Raises the SDK's exceptions (a ``NotFoundError`` for a batch that is gone)."""
        ...

    def results(self, batch_id: str) -> Iterable[BatchResult]:
        """The results of an ended batch, in any order (``batch_id`` and ``custom_id`` set)."""
        ...

    def cancel(self, batch_id: str) -> None:
        """Ask the provider to cancel a batch."""
        ...
