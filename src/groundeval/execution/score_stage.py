"""The score stage: a case's judge calls, made by the executor under the run's concurrency.

A model-graded scorer (``scorers.model_graded``) hands its case's open criteria over as
``Question``s; this stage asks them, at most ``workers`` at once (``--groundeval-concurrency``,
the same bound as agent calls), and hands every verdict back in one dict. A judge's call goes
through the model layer like an agent's (retries, deadline, pricing, spend limit, redaction); the
stage only decides when.

* A question that calls no model (a rule-based judge) is answered inline.
* The judge's first call in a process goes alone (``Question.alone``), as an agent's does: a
  rejected key, an unknown model or an unreachable endpoint stops the run after one call.
* After a failure (``JudgeError``) no further question of the case starts: the case is classed by
  that failure, and questions not started are not paid for.
* Once the run stops (``stop_switch.calls_stopped``) no question starts.

The threads are daemons fed from a queue (as the threaded executor's, ``execution.threaded``): a
call still in flight at a stop or Ctrl-C never holds the interpreter's exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from groundeval.errors import InfraError
from groundeval.models import stop_switch
from groundeval.scorers.model_graded import JudgeError, Question, Verdict

__all__ = ["AskedAhead", "ScoreStage"]


def _stopped(out: dict[str, Verdict | JudgeError], questions: Sequence[Question]) -> dict[str, Verdict | JudgeError]:
    """``out``, each question not asked because the run stopped marked as such (the case is excluded)."""
    if any(isinstance(v, JudgeError) for v in out.values()):
        return out  # the case is classed by its failure already
    for q in questions:
        if q.key not in out:
            out[q.key] = JudgeError("the run stopped before the judge was asked", called=False,
                                    error=InfraError("the run stopped before the judge was asked", attempts=0))
            break
    return out

Task = tuple[Callable[[], Verdict], "Future[Verdict]"]


class ScoreStage:
    """Asks a case's judge questions in up to ``workers`` daemon threads (``scorers.model_graded.GradeStage``).

    Args:
        workers: The most judge calls in flight at once (at least 1; 1 asks them in the calling thread).

    Attributes:
        peak: The most judge calls that were ever in flight at once.
        made: Judge calls started.
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.peak = 0
        self.made = 0
        self._now = 0
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def _start(self) -> None:
        self._threads = [threading.Thread(target=self._work, name=f"groundeval-judge-{i}", daemon=True)
                         for i in range(self.workers)]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            ask, future = item
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued: never asked
            try:
                future.set_result(self._counted(ask))
            except BaseException as exc:  # a JudgeError is the question's result; anything else a harness bug
                future.set_exception(exc)

    def _counted(self, ask: Callable[[], Verdict]) -> Verdict:
        with self._lock:
            self._now += 1
            self.made += 1
            self.peak = max(self.peak, self._now)
        try:
            return ask()
        finally:
            with self._lock:
                self._now -= 1

    def run(self, questions: Sequence[Question]) -> dict[str, Verdict | JudgeError]:
        """Ask ``questions`` (see the module docstring); each key holds its verdict or its ``JudgeError``.

        Questions not asked after a failure are absent; once the run stopped, the first question
        not asked holds a ``JudgeError`` that made no call (the case is excluded, ``infra_error``).

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting (questions not started are cancelled).
            BaseException: A failure that is not a ``JudgeError`` (a harness bug).
        """
        out: dict[str, Verdict | JudgeError] = {}
        pending: list[Question] = []
        for q in questions:  # inline: no model call; alone: the judge has not answered in this process yet
            if not (q.costs_nothing or (q.alone and not out and not pending)):
                pending.append(q)
                continue
            if stop_switch.calls_stopped() and not q.costs_nothing:
                return _stopped(out, questions)
            try:
                out[q.key] = q.ask() if q.costs_nothing else self._counted(q.ask)
            except JudgeError as exc:
                out[q.key] = exc
                return out
        if not pending:
            return out
        if stop_switch.calls_stopped():
            return _stopped(out, questions)
        if self.workers == 1 or len(pending) == 1:
            for q in pending:
                if stop_switch.calls_stopped():
                    return _stopped(out, questions)
                try:
                    out[q.key] = self._counted(q.ask)
                except JudgeError as exc:
                    out[q.key] = exc
                    break
            return out
        if not self._threads:
            self._start()
        futures: list[tuple[str, Future[Verdict]]] = []
        for q in pending:
            future: Future[Verdict] = Future()
            futures.append((q.key, future))
            self._queue.put((q.ask, future))
        try:
            failed = False
            for key, future in futures:
                if (failed or stop_switch.calls_stopped()) and future.cancel():
                    continue  # not started: never asked
                try:
                    out[key] = future.result()
                except JudgeError as exc:
                    out[key] = exc
                    failed = True
                except Exception:
                    if future.cancelled():
                        continue
                    raise
        except KeyboardInterrupt:
            for _, future in futures:
                future.cancel()
            raise
        return out if len(out) == len(questions) else _stopped(out, questions)

    def close(self) -> None:
        """Stop the threads once their current call returns; safe to call again."""
        for _ in self._threads:
            self._queue.put(None)
        self._threads = []


class AskedAhead:
    """The verdicts of a case's questions asked ahead (in the thread that made its agent call).

    ``run`` hands them back when they answer the same questions; any question they lack is asked
    by ``stage``.

    Args:
        grades: The verdicts asked ahead, by question key.
        stage: The stage that asks what is missing.
    """

    def __init__(self, grades: dict[str, Verdict | JudgeError], stage: ScoreStage) -> None:
        self.grades = grades
        self.stage = stage

    def run(self, questions: Sequence[Question]) -> dict[str, Verdict | JudgeError]:
        """See ``scorers.model_graded.GradeStage.run``."""
        if any(isinstance(v, JudgeError) for v in self.grades.values()):
            return dict(self.grades)
        missing = [q for q in questions if q.key not in self.grades]
        return {**self.grades, **(self.stage.run(missing) if missing else {})}
