"""Batch mode: a model's requests go to the provider's batch API, each request's result in its own future.

With ``--groundeval-batch`` a ``PolicyModel`` hands each request to a ``Batcher`` instead of
calling the API. Every request gets a ``custom_id`` and a ``concurrent.futures.Future``
(``Batcher.submit``); one background thread fills batches, sends them (``BatchAPI.create``), polls
them (``BatchAPI.status``), reads their results as soon as a batch has ended (``BatchAPI.results``,
in any order) and completes each request's future (done callbacks run in that thread). Nothing
waits in the batcher: a caller holds its future and waits on it when it wants the result, so the
requests out in a batch are futures, not waiting threads. The requests of the cases this process
runs next are submitted ahead (``execution.batch``), so a batch fills with them; each item still
reports on its own, in collection order, as its result arrives.

When a batch is sent:

* it holds ``BatchSettings.size`` requests (never more than the provider's ``max_requests``, nor
  more bytes than its ``max_bytes``), or
* no new request came for ``BatchSettings.send_delay_s`` seconds (a partly filled batch).

What a call gets back (``BatchResult.kind``): ``succeeded`` (the SDK's own response object, read
as a direct call's reply), ``errored`` (the SDK's own exception type, classed as a direct call's
error would be), ``expired`` (the provider's 24-hour window ended first), ``cancelled``,
``timed_out`` (still processing after ``BatchSettings.max_wait_s``; the message names the batch),
``not_sent`` (the run stopped before the request was sent: nothing was paid) or ``abandoned``
(the batcher was closed while the request's batch was still out: a rerun collects it).

**Resume.** The ids of the batches sent and the custom ids each holds are appended to a journal
(``BatchJournal``, one JSON line per batch, flushed and fsynced) the moment the provider returns
the batch id. A custom id is a hash of the request itself (its label, its parameters and its
occurrence among identical requests), so the same command run again computes the same ids: a
request already in a journalled batch is not sent again, its result is collected from that batch
(an ended batch's results stay readable at the provider). A request whose journalled batch
expired, was cancelled, or is gone, or whose result there is an error a direct call would retry
(rate limit, overload, 5xx), is sent anew.

Source for the APIs: Anthropic's Message Batches
(https://platform.claude.com/docs/en/build-with-claude/batch-processing) and OpenAI's Batch API
(https://platform.openai.com/docs/guides/batch), read on 2026-12-02. The design (custom id
channels, one worker that fills, sends and polls) follows inspect_ai's batcher.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundeval.models.batch_api import BatchAPI, BatchProgress, BatchResult, BatchStatus, ResultKind
from groundeval.models.batch_journal import BatchJournal, custom_id

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_WAIT_S",
    "DEFAULT_POLL_S",
    "DEFAULT_SEND_DELAY_S",
    "JOURNAL_FILE",
    "BatchAPI",
    "BatchJournal",
    "BatchProgress",
    "BatchResult",
    "BatchSettings",
    "BatchStatus",
    "Batcher",
    "custom_id",
]

DEFAULT_BATCH_SIZE = 1000
"""Most requests per batch (``--groundeval-batch-size``), below every provider's count limit."""
DEFAULT_SEND_DELAY_S = 15.0
"""Seconds without a new request after which a partly filled batch is sent."""
DEFAULT_POLL_S = 30.0
"""Seconds between two polls of a batch that is still processing."""
DEFAULT_MAX_WAIT_S = 24 * 3600.0
"""The longest a request waits for its batch, seconds: the providers' 24-hour window."""
JOURNAL_FILE = "groundeval-batches.jsonl"
"""The journal of batches sent, in the out-dir."""
CREATE_ATTEMPTS = 3
"""Tries of a batch create that failed with a retryable error (429, 5xx, connection) before its
requests are answered with that error."""


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """The batch mode knobs (``--groundeval-batch-*``).

    Attributes:
        size: Most requests per batch (lowered to the provider's ``max_requests``).
        send_delay_s: Seconds without a new request before a partly filled batch is sent.
        poll_s: Seconds between polls of a batch.
        max_wait_s: The longest a request waits for its batch, seconds; what is left then is
            ``timed_out`` (an ``infra_error`` naming the batch).
        journal: The journal file (resume), or None for none.
    """

    size: int = DEFAULT_BATCH_SIZE
    send_delay_s: float = DEFAULT_SEND_DELAY_S
    poll_s: float = DEFAULT_POLL_S
    max_wait_s: float = DEFAULT_MAX_WAIT_S
    journal: Path | None = None


class _Job:
    """One request: its entry and the future its result completes."""

    __slots__ = ("added", "batch_id", "custom_id", "entry", "future", "resumed", "size")

    def __init__(self, cid: str, entry: dict[str, Any], added: float) -> None:
        self.custom_id = cid
        self.entry = entry
        self.size = len(json.dumps(entry, default=str).encode("utf-8", "surrogatepass")) + 1
        self.added = added
        self.batch_id: str | None = None
        self.resumed = False
        self.future: Future[BatchResult] = Future()


class _Open:
    """A batch sent (or found in the journal) whose results are not in yet."""

    def __init__(self, batch_id: str, jobs: dict[str, _Job], sent: float, *, resumed: bool) -> None:
        self.batch_id = batch_id
        self.jobs = jobs
        self.sent = sent
        self.resumed = resumed
        self.polled = 0.0  # when it was last polled (0: never)


class Batcher:
    """Fills, sends and polls batches for one model; each request's result completes its own future.

    Args:
        api: The provider's batch endpoint.
        settings: The knobs.
        progress: Called from the batcher's thread after each poll of a batch still out.
        stopped: True once the run has stopped (``stop_switch.calls_stopped``): requests not yet
            sent are then answered ``not_sent``.
        clock: Monotonic seconds (tests).

    Attributes:
        batches: Batch id -> requests this process sent in it, in sending order.
        resumed: Batch id -> requests this process collected from a batch an earlier run sent.
        sent: Requests this process sent.
    """

    def __init__(
        self,
        api: BatchAPI,
        settings: BatchSettings | None = None,
        *,
        progress: Callable[[BatchProgress], None] | None = None,
        stopped: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.settings = settings or BatchSettings()
        self.size = max(1, min(self.settings.size, api.max_requests))
        self._progress = progress
        self._stopped = stopped or (lambda: False)
        self._clock = clock
        self._journal = BatchJournal(self.settings.journal) if self.settings.journal is not None else None
        self._journalled: dict[str, str] = self._journal.load() if self._journal is not None else {}
        self._cond = threading.Condition()
        self._pending: list[_Job] = []
        self._open: dict[str, _Open] = {}
        self._seen: dict[str, int] = {}
        self._last_added = 0.0
        self._closed = False
        self._left_out: list[str] = []
        self._thread: threading.Thread | None = None
        self.batches: dict[str, int] = {}
        self.resumed: dict[str, int] = {}
        self.sent = 0

    # -- the calls' side -----------------------------------------------------------------------
    def submit(self, label: str, params: Mapping[str, Any]) -> Future[BatchResult]:
        """Queue one request (a direct call's SDK arguments); its future completes with its result.

        The future always completes (``close`` answers what is left: ``not_sent`` or ``abandoned``)
        and never raises: every outcome is a ``BatchResult`` (``waited_s``: seconds from this call
        to the result). Cancelling it before its batch is sent leaves the request out of every
        batch (never paid for).

        Returns:
            The request's future (``concurrent.futures.Future``): wait on it, or add a done callback.
        """
        start = self._clock()
        with self._cond:
            key = custom_id(label, params)
            occurrence = self._seen.get(key, 0)
            self._seen[key] = occurrence + 1
            cid = custom_id(label, params, occurrence)
            job = _Job(cid, self.api.entry(cid, params), start)
            batch_id = self._journalled.get(cid)
            if batch_id is not None:  # sent by an earlier run: collect it from there
                job.resumed, job.batch_id = True, batch_id
                opened = self._open.setdefault(batch_id, _Open(batch_id, {}, start, resumed=True))
                opened.jobs[cid] = job
            else:
                self._pending.append(job)
                self._last_added = start
            self._start()
            self._cond.notify_all()
        return job.future

    def result(self, label: str, params: Mapping[str, Any]) -> BatchResult:
        """``submit`` and wait for the result (a caller that has nothing else to do meanwhile).

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting (in the main thread).
        """
        return self.submit(label, params).result()

    def close(self) -> None:
        """Stop the batcher's thread; answer every waiting call.

        Requests not sent yet are answered ``not_sent``, those in a batch still out ``abandoned``
        (their batch goes on at the provider; the journal keeps it for a rerun).
        """
        with self._cond:
            if not self._closed:
                self._left_out = list(self._open)
            self._closed = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)

    def out(self) -> list[str]:
        """Ids of the batches still out (sent or found in the journal, results not in yet; at ``close``)."""
        with self._cond:
            return list(self._left_out) if self._closed else list(self._open)

    # -- the batcher's thread ------------------------------------------------------------------
    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="groundeval-batcher", daemon=True)
            self._thread.start()

    def _work(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    pending, self._pending = self._pending, []
                    out = [job for opened in self._open.values() for job in opened.jobs.values()]
                    self._open.clear()
                    break
                now = self._clock()
                to_send = self._due(now)
                polls = [o for o in self._open.values() if now - o.polled >= self.settings.poll_s]
                if not to_send and not polls:
                    self._cond.wait(self._sleep(now))
                    continue
            if self._stopped():
                self._answer(to_send, "not_sent")
                to_send = []
            for chunk in self._chunks(to_send):
                self._send(chunk)
            for opened in polls:
                self._poll(opened)
        self._answer(pending, "not_sent")
        self._answer(out, "abandoned")

    def _due(self, now: float) -> list[_Job]:
        """The pending jobs to send now, taken off the queue.

        Every full batch (by count or bytes) goes at once; what is left of a partly filled batch
        goes only once no request came for ``send_delay_s`` (or the run stopped).
        """
        self._pending = [j for j in self._pending if not j.future.cancelled()]  # given up before it was sent
        if not self._pending:
            return []
        if now - self._last_added >= self.settings.send_delay_s or self._stopped():
            jobs, self._pending = self._pending, []
            return jobs
        chunks = self._chunks(self._pending)
        last = chunks[-1]
        if len(last) < self.size and sum(j.size for j in last) < self.api.max_bytes:
            chunks.pop()  # not full yet: it waits for more requests
        taken = sum(len(c) for c in chunks)
        jobs, self._pending = self._pending[:taken], self._pending[taken:]
        return jobs

    def _sleep(self, now: float) -> float:
        waits = [self.settings.poll_s - (now - o.polled) for o in self._open.values()]
        if self._pending:
            waits.append(self.settings.send_delay_s - (now - self._last_added))
        return max(0.001, min(waits, default=60.0))

    def _chunks(self, jobs: list[_Job]) -> list[list[_Job]]:
        """``jobs`` cut into batches within the size and the provider's byte limit."""
        chunks: list[list[_Job]] = []
        current: list[_Job] = []
        used = 0
        for job in jobs:
            if current and (len(current) >= self.size or used + job.size > self.api.max_bytes):
                chunks.append(current)
                current, used = [], 0
            current.append(job)
            used += job.size
        if current:
            chunks.append(current)
        return chunks

    def _send(self, jobs: list[_Job]) -> None:
        from groundeval.models.classify import advise

        error: BaseException | None = None
        for _ in range(CREATE_ATTEMPTS):
            try:
                batch_id = self.api.create([j.entry for j in jobs])
            except Exception as exc:  # the SDK's exception: retried if retryable, else the requests' error
                error = exc
                if not advise(exc)[0]:
                    break
                with self._cond:
                    self._cond.wait(min(self.settings.poll_s, 30.0))
                continue
            ids = [j.custom_id for j in jobs]
            if self._journal is not None:
                with contextlib.suppress(OSError):  # an unwritable out-dir loses resume, not the run
                    self._journal.record(batch_id, self.api.provider, ids)
            now = self._clock()
            with self._cond:
                for job in jobs:
                    job.batch_id = batch_id
                self._open[batch_id] = _Open(batch_id, {j.custom_id: j for j in jobs}, now, resumed=False)
                self.batches[batch_id] = len(jobs)
                self.sent += len(jobs)
            return
        for job in jobs:
            self._deliver(job, BatchResult("errored", job.custom_id, None, error=error))

    def _poll(self, opened: _Open) -> None:
        now = self._clock()
        opened.polled = now
        with self._cond:  # a rerun's calls may still be attaching to a journalled batch
            ids = list(opened.jobs)
        try:
            status = self.api.status(opened.batch_id)
        except Exception as exc:
            if opened.resumed and getattr(exc, "status_code", None) == 404:  # gone: send its requests anew
                with self._cond:
                    jobs = list(opened.jobs.values())
                self._requeue(opened, jobs)
                return
            status = None  # a failed poll: try again at the next one, until the longest wait
        if status is not None and status.failure is not None:
            self._finish(opened, [BatchResult("errored", cid, opened.batch_id, error=status.failure) for cid in ids])
            return
        if status is not None and status.ended:
            try:
                results = list(self.api.results(opened.batch_id))
            except Exception:
                results = None  # read again at the next poll
            if results is not None:
                self._finish(opened, results)
                return
        if now - opened.sent >= self.settings.max_wait_s:
            self._finish(opened, [BatchResult("timed_out", cid, opened.batch_id) for cid in ids])
            return
        if status is not None and self._progress is not None:
            with contextlib.suppress(Exception):  # a display problem never stops a batch
                self._progress(BatchProgress(opened.batch_id, len(ids), dict(status.counts),
                                             now - opened.sent))

    def _finish(self, opened: _Open, results: Iterable[BatchResult]) -> None:
        with self._cond:
            self._open.pop(opened.batch_id, None)
            jobs = dict(opened.jobs)
        again: list[_Job] = []
        for result in results:
            job = jobs.pop(result.custom_id, None)
            if job is None:
                continue  # a request of that batch no call of this run waits for
            if job.resumed and (result.kind in ("expired", "cancelled") or _retryable(result)):
                again.append(job)  # an earlier run's batch did not answer it: send it now
                continue
            self._deliver(job, result)
        missing = list(jobs.values())
        if opened.resumed:
            again.extend(missing)
        else:
            for job in missing:  # an ended batch with no result for it: the provider never ran it
                self._deliver(job, BatchResult("expired", job.custom_id, opened.batch_id))
        if again:
            self._requeue(None, again)
        if opened.resumed:
            with self._cond:
                self.resumed[opened.batch_id] = self.resumed.get(opened.batch_id, 0) + len(opened.jobs) - len(again)

    def _requeue(self, opened: _Open | None, jobs: list[_Job]) -> None:
        with self._cond:
            if opened is not None:
                self._open.pop(opened.batch_id, None)
            for job in jobs:
                self._journalled.pop(job.custom_id, None)
                job.resumed, job.batch_id = False, None
                self._pending.append(job)
            self._last_added = self._clock()
            self._cond.notify_all()

    def _answer(self, jobs: list[_Job], kind: ResultKind) -> None:
        for job in jobs:
            self._deliver(job, BatchResult(kind, job.custom_id))

    def _deliver(self, job: _Job, result: BatchResult) -> None:
        done = BatchResult(result.kind, job.custom_id, result.batch_id or job.batch_id, result.value,
                           result.error, job.resumed, round(self._clock() - job.added, 3))
        with contextlib.suppress(InvalidStateError):  # its caller cancelled it: nobody takes the result
            job.future.set_result(done)


def _retryable(result: BatchResult) -> bool:
    """An errored result a direct call would retry (429, 5xx, overload): a rerun sends it again."""
    from groundeval.models.classify import advise

    return result.kind == "errored" and result.error is not None and advise(result.error)[0]
