"""The executor protocol: how a run's agent calls are made, behind one seam.

pytest runs a process's items one at a time, in collection order, on its main thread; each item's
setup asks the session for its case's result, and the session asks the run's ``Executor``. The
executor decides when and how the agent call behind that result is made:

* ``SerialExecutor`` (``execution.serial``): the call is made when the item runs, in the main
  thread. ``--groundeval-concurrency 1``, and agents that are not thread-safe.
* ``ThreadedExecutor`` (``execution.threaded``): the calls of the next items are made ahead, in
  N daemon threads; what each call prints is captured and handed to its own case, redacted.
* ``BatchExecutor`` (``execution.batch``, ``--groundeval-batch``): the calls of many items go to a
  provider batch API at once (Anthropic Message Batches, the OpenAI Batch API) through the model's
  batcher (``models.batch``), and their answers come back in any order.

Everything else is the same whatever the executor: parsing, scoring, the record, the stop policy,
junit and the run record happen per item, in collection order, on the main thread, so a run reads
exactly as a serial run. The session owns the stop policy and pytest; executors never import
pytest (``plugin``/``cli`` -> ``run`` -> ``execution`` -> tasks, agents, scorers).

Writing an executor (for a batch executor, read every point):

* **Jobs and order.** A ``Job`` is one item: its node id (unique in the run, trials included:
  ``...::Liz_Conn[trial-1]``), the collected case and the trial index. Before each item runs, the
  session calls ``submit`` with that item's job first, then the jobs of the items this process
  runs next, in collection order, at most ``lookahead`` in all. It then calls ``result`` for that
  item's job. ``submit`` is called again before every item with an overlapping window: ignore the
  jobs already submitted. Under pytest-xdist the window is the worker's own queue (items handed to
  it so far), so a worker sees its jobs a few at a time, never the whole run; a stolen item
  (``--dist worksteal``) may be submitted here and never asked for.
* **What to submit.** Build a job's request and truth with ``ExecutionContext.prepare`` (it reads
  the case file, checked against its hash, and calls ``execution.call.prepare``). If that raises, drop the
  job silently: ``result`` reports the task's error for it (``invalid_case``, ``harness_error``)
  without a call. Make each call through ``ExecutionContext.call`` (it keeps whatever the agent
  returned or raised in a ``execution.call.Attempt`` and counts calls in flight), or, for a batch, build
  one ``Attempt`` per job from its share of the batch's answer.
* **Results.** ``result(job)`` reads the case again (``ExecutionContext.open``: a file that went
  or changed since collection is the job's ``invalid_case`` run), blocks until that job's call is
  done and returns ``ExecutionContext.finish(job, case, attempt)`` (the outcome policy parses, scores and
  builds the record). A job with no call made for it (never submitted, its preparation failed, or
  it was cancelled) is run there and then in the main thread with ``ExecutionContext.run_now``,
  which returns None once the run was stopped. Results of a batch may arrive in any order; each
  ``result`` call waits for its own job only, so the records still come in collection order. It is
  called once per job, always from the main thread.
* **Errors become outcomes, never exceptions.** ``result`` must not raise for anything a case or
  the provider did: a per-request failure becomes the exception the agent itself would have raised
  (the ``errors.AgentError`` tree: ``InfraError`` for retries exhausted on 429/529/5xx, with
  ``connection=True`` when no response came back, ``CaseTooLargeError``, ``TruncatedError``,
  ``RunStopError`` for a bad model id, ``AuthError``) stored in the job's ``Attempt``; the outcome policy
  turns it into the outcome and the session's stop policy reacts to it (``RunStopError`` stops
  the run; three connection failures before any answer do too). A batch rejected whole is
  that error in the ``Attempt`` of each of its jobs; a batch that expired or was cancelled, an
  ``InfraError`` (excluded from the means, counted). Only ``KeyboardInterrupt`` may escape.
* **Stopping.** A stop (``-x``, ``--maxfail``, a stop policy, ``--groundeval-max-cost``, SIGINT,
  SIGTERM, the xdist controller's stop file) throws the run's stop switch (``models.stop_switch``) first:
  from then on no call may start (check ``stop_switch.calls_stopped()`` before sending; a retry checks
  it too). The session then calls ``close``: cancel what was not sent (a submitted provider batch
  is cancelled when none of its jobs will be asked for) and return how many calls were sent, or
  already answered, whose results will never be handed back: they were paid for and are counted
  in the run record's ``dropped_calls``. ``close`` is also called at the session's end, may be
  called more than once, and after it ``result`` makes no call ahead: a job whose call never
  started returns None (the item is skipped as ``not_run``).
* **Selection, trials, limits.** ``-k``, node ids on the command line, ``--lf`` and
  ``--groundeval-limit`` act at collection: an executor only ever sees selected items. Each trial
  is its own job (the same case file, its own request): key calls by node id, not by case id.
* **What stays below.** Retries, deadlines (``--groundeval-timeout``), the rate-limit throttle,
  the spend limit, the response cache (``--groundeval-cache``) and redaction happen in the agent
  and model layer under ``ExecutionContext.call``, whatever the executor; a batch executor that
  bypasses ``agent.run`` owns them for its requests: the spend check before sending (priced at
  the batch rate; ``errors.SpendLimitReached`` in the ``Attempt`` of each job it refuses), a
  deadline that is the batch's own (providers allow 24 hours), and the answer text redacted as
  ``execution.call.call_agent`` does. An ``Attempt``'s ``started_at`` and ``latency_s`` are the job's own:
  for a batch, when the batch was sent and how long its answer took to read back.
* **Output.** What an agent prints in another thread must not reach the terminal: capture it per
  call (``execution.thread_output.captured``) and write it, redacted, in ``result``
  (``thread_output.replay``), so pytest attaches it to that item's report.
* **``lookahead``.** How many jobs, the current one included, the executor wants to see before each
  item: 0 for the serial executor (``submit`` is then not called), N x ``LOOKAHEAD_PER_SLOT`` for
  the threaded one once its first call returned, a batch's size for a batch executor. The session
  reads it before each item, so it may change during the run.
* **The first call goes alone.** Keep ``lookahead`` at 0 until one call has returned on this
  process (whatever its outcome, unless no response came back: ``InfraError.connection``), as the
  threaded executor does: a rejected key, an unknown model or an unreachable API then stops the
  run after one call (three when unreachable), not after a whole batch. An agent that declares
  ``network_calls = False`` has nothing of the kind to find out: its calls may go ahead at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from groundeval.execution.base import Job
from groundeval.execution.outcome_policy import CaseRun

__all__ = ["Executor"]


class Executor(Protocol):
    """How a process's agent calls are made; the session asks it for each case's result.

    See the module docstring for the contract every executor keeps (order, errors, stopping).
    """

    lookahead: int
    """Jobs, the current one included, to hand ``submit`` before each item (0: do not call it)."""

    def submit(self, jobs: Sequence[Job]) -> None:
        """Take the jobs this process runs next, in collection order, the next item's first.

        Jobs submitted before are in the window again: ignore them. Must not raise.
        """
        ...

    def result(self, job: Job) -> CaseRun | None:
        """The finished case of ``job`` (its record, and the exception of an excluded outcome).

        Returns None when the run was stopped before the job's call started (not run).

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting; nothing else.
        """
        ...

    def close(self) -> int:
        """Start no further call; cancel what was not sent; return the calls sent whose results are dropped."""
        ...
