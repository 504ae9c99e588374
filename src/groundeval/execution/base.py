"""What every executor shares: the job, the case files, the call tally, and running one job.

An executor decides *when* and *how* a case's agent call is made (``execution.protocol``); the
rest of a case is the same for all of them and lives here: read the case file again (checked
against its hash at collection), prepare the request and truth (``execution.call.prepare``), make the call
counted (``CallTally``), and hand the finished call to the outcome policy for parsing, scoring and the
record (``execution.outcome_policy.classify``), a model-graded scorer's judge calls made by the score stage
(``execution.score_stage``).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundeval.agent_io import AgentRequest
from groundeval.agents.base import Agent
from groundeval.datasets import Case
from groundeval.errors import DatasetError
from groundeval.execution.call import Attempt, attempt, prepare
from groundeval.execution.outcome_policy import CaseRun, RunInfo, classify, setup_failed, unprepared
from groundeval.execution.score_stage import AskedAhead, ScoreStage
from groundeval.models import stop_switch
from groundeval.scorers.model_graded import GradeStage, JudgeError, Verdict
from groundeval.tasks.base import Task

__all__ = ["CallTally", "CaseFiles", "ExecutionContext", "Job"]


@dataclass(frozen=True, slots=True)
class Job:
    """One item's case, to be run: the unit an executor is handed and hands back.

    Attributes:
        nodeid: The item's node id (``groundeval/<task>::<case_id>``, with ``[trial-i]`` when
            ``--groundeval-trials`` is above 1): unique in the run, so it is the key of a call
            made ahead (a provider batch's ``custom_id`` would be derived from it).
        case: The case as collected: id, file, SHA-256 and meta, not its content
            (``ExecutionContext.load`` reads the file again).
        trial: 0-based trial index, passed on in the agent's request.
    """

    nodeid: str
    case: Case
    trial: int = 0


class CallTally:
    """The agent calls of one process: in flight now, the most at once, and cut off by Ctrl-C.

    Attributes:
        now: Calls in flight.
        peak: The most calls that were ever in flight at once (0 before the first call).
        made: Calls started.
        interrupted: Calls a ``KeyboardInterrupt`` (Ctrl-C, a signal) cut off in the calling thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.made = 0
        self.interrupted = 0

    def run(self, call: Callable[[AgentRequest, Any], Attempt], request: AgentRequest, truth: Any) -> Attempt:
        """Make ``call(request, truth)``, counted."""
        self.begin()
        try:
            return call(request, truth)
        except BaseException:  # only KeyboardInterrupt gets out of execution.call.attempt
            with self._lock:
                self.interrupted += 1
            raise
        finally:
            self.end()

    def begin(self) -> None:
        """A call started (one that is waited on elsewhere, as a batched request's future)."""
        with self._lock:
            self.now += 1
            self.made += 1
            self.peak = max(self.peak, self.now)

    def end(self) -> None:
        """A call ``begin`` counted has finished."""
        with self._lock:
            self.now -= 1


class CaseFiles:
    """Reads a collected case's file again when its case runs, keeping the last ``keep`` cases.

    A collected case that kept its content (the first cases of a run without twins,
    ``plugin.items.LOADED_AT_COLLECTION``) is used as it is: its file is read once. Past those,
    collection reads each case file for its id and checks, then keeps only the file's name, hash
    and meta on the item: holding 5,000 parsed Bundles (about 0.12 MB each) would cost more
    memory than the rest of the run. The file is read again when its case runs (or its call is
    prepared ahead), and its bytes must hash as they did at collection. The last ``keep`` cases
    stay loaded (the trials of a case and the calls made ahead reuse them).

    Args:
        task: The task whose ``load_case`` reads a file.
        keep: Cases kept loaded (at least 1).
    """

    def __init__(self, task: Task, keep: int) -> None:
        self._task = task
        self._keep = max(1, keep)
        self._loaded: collections.OrderedDict[Path, tuple[Case, dict[str, Case]]] = collections.OrderedDict()
        self._lock = threading.Lock()  # a batch or threaded executor may prepare from another thread

    def load(self, ref: Case) -> Case:
        """The case behind ``ref`` (a collected item's case), read from its file now.

        For a counterfactual twin (``--groundeval-counterfactual``), the twin made from the file's
        case. In a run with twins, reading a file makes every twin of it at once
        (``tasks.counterfactual.twins``) and keeps them with the file's case: whichever item of the
        case runs first pays for making them, so the time an item takes to start does not tell a
        twin from its original.

        Raises:
            DatasetError: The file can no longer be read, it changed since collection, or the
                twin can no longer be made from it.
        """
        from groundeval.tasks.counterfactual import SUBJECT, twin_of

        if ref.data and SUBJECT not in ref.meta:  # kept from collection (``plugin.items.LOADED_AT_COLLECTION``)
            return ref
        case, made = self._read(ref)
        if SUBJECT not in ref.meta:
            return twin_of(self._task, case, ref)
        facts = ref.meta.get("counterfactual")
        if not isinstance(facts, dict):
            return case
        kind = str(facts.get("kind"))
        if kind not in made:
            raise DatasetError(str(ref.source), f"the {kind} twin can no longer be made from this file; run again")
        return made[kind]

    def _read(self, ref: Case) -> tuple[Case, dict[str, Case]]:
        with self._lock:
            hit = self._loaded.get(ref.source)
            if hit is not None:
                self._loaded.move_to_end(ref.source)
                return hit
        case = self._task.load_case(ref.source)
        if case.sha256 != ref.sha256:
            raise DatasetError(
                str(ref.source), f"the file changed after collection (SHA-256 {ref.sha256[:12]}... then, "
                f"{case.sha256[:12]}... now); run again so that the run scores and records one version of it",
            )
        from groundeval.tasks.counterfactual import SUBJECT, with_subject

        if SUBJECT in ref.meta:  # a run with twins: every record says whose it is (records.sensitivity)
            case = with_subject(case)
        entry = (case, self._twins(case, ref))
        with self._lock:
            self._loaded[ref.source] = entry
            while len(self._loaded) > self._keep:
                self._loaded.popitem(last=False)
        return entry

    def _twins(self, case: Case, ref: Case) -> dict[str, Case]:
        """Every twin of ``case`` by perturbation, made now, in a run with twins (else none)."""
        from groundeval.tasks.counterfactual import SUBJECT, twins

        if SUBJECT not in ref.meta:
            return {}
        try:
            made = twins(self._task, case)
        except Exception:  # reported at collection, where the case's twins were left out
            return {}
        return {str(t.meta["counterfactual"]["kind"]): t for t in made}


class ExecutionContext:
    """What an executor runs jobs with: the task, the agent, the run's facts, the case files, the tally.

    Its methods are the steps of one job, in order: ``open`` (read the case file again),
    ``prepare`` (request and truth), ``call`` (the agent call, counted), then ``execution.outcome_policy.classify``
    with the finished call (parse, score, record); ``run_now`` does the last three in one go.

    Args:
        task: The task (prompt, truth, parsing, scoring).
        agent: The agent under evaluation, built and warmed up.
        info: Run-wide facts copied onto every record.
        files: Where case files are read again (``CaseFiles``).
        calls: This process's ``CallTally`` (the session reads its ``peak`` and ``interrupted``).
        grades: The score stage that asks a model-graded scorer's questions (``execution.score_stage``,
            under the run's concurrency), or None to ask them one after another.
    """

    def __init__(self, task: Task, agent: Agent, info: RunInfo, files: CaseFiles, calls: CallTally,
                 grades: GradeStage | None = None) -> None:
        self.task = task
        self.agent = agent
        self.info = info
        self.files = files
        self.calls = calls
        self.grades = grades
        self.score_lock = threading.Lock()  # a task's parse and rules run in one thread at a time

    def open(self, job: Job) -> Case | CaseRun:
        """``job``'s case, read from its file now, or the job's finished run when that is impossible.

        A file that went or changed since collection is ``invalid_case``, with no agent call.
        """
        try:
            return self.files.load(job.case)
        except DatasetError as gone:
            return setup_failed(self.info, job.case, job.nodeid, gone, "invalid_case", job.trial)

    def prepare(self, job: Job) -> tuple[AgentRequest, Any]:
        """Read ``job``'s case file and build its request and ground truth (``execution.call.prepare``).

        Raises:
            DatasetError: The case file is unusable (the job's own ``result`` reports it).
            Exception: Whatever else the task raised (ditto: a harness error).
        """
        return prepare(self.task, self.files.load(job.case), job.trial)

    def call(self, request: AgentRequest, truth: Any) -> Attempt:
        """Make one agent call, counted; what the agent returned or raised is kept (``execution.call.attempt``).

        Safe to run in any thread. Raises only ``KeyboardInterrupt``.
        """
        return self.calls.run(self._attempt, request, truth)

    def _attempt(self, request: AgentRequest, truth: Any) -> Attempt:
        return attempt(self.agent, request, truth)

    def run_now(self, job: Job, case: Case) -> CaseRun | None:
        """Prepare ``job``'s call, make it in this thread and run the case to its record.

        Returns None, with no call, once the run was stopped (``stop_switch.calls_stopped``).

        Raises:
            KeyboardInterrupt: Ctrl-C during the call.
        """
        if stop_switch.calls_stopped():
            return None
        try:
            request, truth = prepare(self.task, case, job.trial)
        except Exception as exc:  # the task's check, prompt, context or truth: the agent is never called
            return unprepared(self.info, case, job.nodeid, exc, job.trial)
        return self.finish(job, case, self.call(request, truth))

    def finish(self, job: Job, case: Case, attempted: Attempt,
               ahead: dict[str, Verdict | JudgeError] | None = None) -> CaseRun:
        """Parse, score and class the finished call ``attempted`` of ``job`` (``execution.outcome_policy.classify``).

        A model-graded scorer's judge calls are made here, by the score stage (``grades``), unless
        they were asked ahead (``ahead``, from ``grade_ahead``).
        """
        grades: GradeStage | None = self.grades
        if ahead is not None and isinstance(self.grades, ScoreStage):
            grades = AskedAhead(ahead, self.grades)
        with self.score_lock:
            return classify(self.task, self.agent, case, self.info, job.nodeid, attempted, grades=grades)

    def grade_ahead(self, job: Job, attempted: Attempt) -> dict[str, Verdict | JudgeError] | None:
        """Ask a model-graded scorer's questions on ``attempted``'s answer now, in the calling thread.

        The threaded executor calls this right after a case's agent call, so the judge calls of
        several cases overlap (each case's at most ``grades.workers`` at once, through the stage's
        threads). The task's ``parse`` and ``questions`` run under ``score_lock`` (never two at
        once); ``finish`` asks them again on the main thread and takes these verdicts for them.

        Returns:
            The verdicts by question key, or None (no model-graded scorer, no answer, nothing for a
            model to decide, or anything raised: ``finish`` then does it all and reports it).
        """
        scorer = getattr(self.task, "scorer", None)
        questions = getattr(scorer, "questions", None)
        if not callable(questions) or self.grades is None or attempted.execution is None:
            return None
        if getattr(scorer, "asks_model", True) is False:  # a rule-based judge: nothing to overlap
            return None
        try:
            case = self.files.load(job.case)
            with self.score_lock:
                parsed = self.task.parse(case, attempted.execution.result.text)
                asked = questions(case, attempted.truth, parsed)
        except Exception:
            return None
        if all(q.costs_nothing for q in asked):
            return None
        return self.grades.run(asked)
