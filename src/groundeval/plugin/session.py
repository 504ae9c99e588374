"""The active run on each process: built in ``pytest_configure`` when ``--groundeval-task`` is given.

Modelled on pytest-xdist, which keeps its controller (``dsession.py``) and its workers
(``remote.py``) apart: this session is what every process of a run has (a serial run, the xdist
controller, each worker). It assembles the run (``run.assembly``: task, agent, batch mode, the
checks), collects the cases and, on a process that runs cases, runs each through its
``run.process.ProcessRun`` and turns the outcome into pytest's terms (a stop is
``session.shouldstop``, a case that did not run a skip). What only the controlling process does
(gathering the records, the run record, signals, the summary) is ``plugin.controller``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from groundeval.datasets import Case
from groundeval.errors import ConfigError
from groundeval.execution import DEFAULT_CONCURRENCY, Job
from groundeval.execution.outcome_policy import CaseRun
from groundeval.models import server_logs, stop_switch, throttle
from groundeval.plugin.worker_keys import RESUME_KEY, RUN_ID_KEY
from groundeval.plugin.worker_stop import CallCut, WorkerStop
from groundeval.records.run_record import CaseRecord, RunRecord, new_run_id
from groundeval.redaction import clean_text
from groundeval.run.assembly import Role, assemble
from groundeval.run.process import ProcessRun, run_info
from groundeval.run.settings import Settings

if TYPE_CHECKING:
    from groundeval.models.batch import Batcher
    from groundeval.records.resume import Interrupted
    from groundeval.shards import Shard

__all__ = ["DEFAULT_CONCURRENCY", "GroundevalSession", "twin_seed_of"]


def twin_seed_of(run_id: str) -> int:
    """The twin seed a run draws when none is given: 9 decimal digits of the SHA-256 of its (random) run id."""
    import hashlib

    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") % 1_000_000_000


class GroundevalSession:
    """Plugin object registered as ``groundeval-session`` on every process while a task is active.

    Raises:
        pytest.UsageError: The task options are invalid, the out-dir is unusable, the agent
            cannot be built (e.g. ``claude`` without ``ANTHROPIC_API_KEY``), or
            ``--groundeval-resume`` names an unreadable file (every ``run.assembly`` refusal).
    """

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.is_worker = hasattr(config, "workerinput")
        # as pytest-xdist decides it (xdist.plugin._is_distribution_mode): a mode and workers to run
        # in; `-n -1` sets the mode but no worker, and the run is then serial
        distributed = (not self.is_worker and config.getoption("dist", default="no") not in ("no", None)
                       and bool(config.getoption("tx", default=None)))
        self.runs_cases = not distributed and not config.getoption("collectonly", default=False)
        workerinput: dict[str, Any] = getattr(config, "workerinput", {})
        count = workerinput.get("workercount")
        role = Role(distributed=distributed, runs_cases=self.runs_cases, worker=self.is_worker,
                    workers=count if isinstance(count, int) else None)
        try:
            self.parts = assemble(settings, role, show=self._set_phase)  # run.assembly: task, agent, batch, checks
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.task = self.parts.task
        self.baseline: RunRecord | None = self.parts.baseline
        cache = getattr(config, "cache", None)  # pytest's cacheprovider; absent with -p no:cacheprovider
        from groundeval import check_cache

        check_cache.use_directory(Path(cache.mkdir("groundeval-checked")) if cache is not None else None)
        run_id = workerinput[RUN_ID_KEY] if self.is_worker else new_run_id()
        self.resume_from: Interrupted | None = None  # --groundeval-resume: the run this one continues (controller)
        if settings.resume is not None and not self.is_worker:
            from groundeval.plugin.resuming import open_resume

            self.resume_from = open_resume(settings)
            run_id = self.resume_from.run_id  # under the interrupted run's id
        # the order of a case's items and its twins' (``tasks.counterfactual.interleave``): the
        # option, else drawn from the run id, which every pytest-xdist worker shares
        self.twin_seed = settings.twin_seed if settings.twin_seed is not None else twin_seed_of(run_id)
        self.info = run_info(self.parts, settings, run_id, workerinput.get("workerid") if self.is_worker else None)
        self.stop_reason: str | None = None
        self.spend_stop: str | None = None  # the stop reason when --groundeval-max-cost stopped this process
        # this process's part of the run (run.process): the executor, the call tally, the stop policy
        self.process = ProcessRun(self.parts, self.info, settings, phase=self._set_phase)
        self._worker_stop: WorkerStop | None = None  # an xdist worker's SIGINT handling (plugin.worker_stop)
        self._order: list[Any] = []  # this process's EvalItems in collection order
        self._position: dict[str, int] = {}
        self._session: pytest.Session | None = None
        self._ended = False
        if self.runs_cases:
            from groundeval.run.spend_check import worker_share

            self.process.start(None if settings.max_cost is None else worker_share(settings.max_cost, role.workers))

    def _set_phase(self, phase: str | None) -> None:
        """What this process does between cases (the agent's warm-up, a batch out), on the status line."""
        progress = self.config.pluginmanager.get_plugin("groundeval-progress")
        if progress is not None:
            progress.set_phase(phase)

    @property
    def batcher(self) -> Batcher | None:
        """The batcher of the agent's model (``--groundeval-batch``), or None."""
        return self.parts.batcher

    @property
    def concurrency(self) -> int:
        """Agent calls in flight at once in a process (on the xdist controller, as its workers report)."""
        return self.process.concurrency

    @concurrency.setter
    def concurrency(self, value: int) -> None:
        self.process.concurrency = value

    @property
    def discarded_calls(self) -> int:
        """Agent calls made ahead whose items never ran (on the controller, every worker's)."""
        return self.process.discarded_calls

    @discarded_calls.setter
    def discarded_calls(self, value: int) -> None:
        self.process.discarded_calls = value

    @property
    def limit(self) -> int | None:
        """``--groundeval-limit``: run only the first N cases, or None for all."""
        return self.settings.limit

    @property
    def shard(self) -> Shard | None:
        """``--groundeval-shard``: the shard of the cases this run collects, or None for all."""
        return self.settings.shard

    @property
    def trials(self) -> int:
        """``--groundeval-trials``: items per case."""
        return self.settings.trials

    @property
    def counterfactual(self) -> bool:
        """``--groundeval-counterfactual``: also run each case's counterfactual twins."""
        return self.settings.counterfactual

    # -- running a case ----------------------------------------------------------------------
    def run_case(self, case: Case, nodeid: str, session: pytest.Session, trial: int = 0) -> CaseRun:
        """Run one case through this process's ``run.process.ProcessRun`` and turn its step into pytest's terms.

        The executor (``groundeval.execution``) makes the agent call: when the item runs, or ahead
        in threads with ``--groundeval-concurrency`` above 1 (the jobs of the next items are handed
        to it first, ``plugin.upcoming``); this case's result is then scored and recorded, in
        collection order. A stop sets ``session.shouldstop``; a case that did not run is a skip.

        Raises:
            pytest.skip.Exception: The run was stopped before this case's call could start.
        """

        def ahead(window: int) -> list[Job]:
            if self.stop_requested():
                return []
            from groundeval.plugin.upcoming import upcoming

            return upcoming(self._order, self._position, nodeid, session, window, worker=self.is_worker)

        try:
            step = self.process.run(Job(nodeid, case, trial), ahead)
        except CallCut as cut:  # Ctrl-C on a worker: the call is dropped (counted), the case not run
            self.stop(session, str(cut))
            pytest.skip(f"not run: {cut} while its agent call was in flight")
        if step.stop is not None:
            self.stop(session, step.stop)
            if step.spend_limit:
                self.spend_stop = self.stop_reason
        if step.run is None:
            pytest.skip(step.not_run or "not run")
        if step.not_run is not None:
            return CaseRun(step.run.record, pytest.skip.Exception(step.not_run))
        return step.run

    def baseline_properties(self, record: CaseRecord) -> list[tuple[str, str]]:
        """The junit ``regression`` and ``lost`` of a case against ``--groundeval-baseline`` (none without a baseline).

        ``regression``: passed in the baseline, fails now; ``lost``: a verdict in the baseline, none
        now (excluded, ``invalid_case``, not run), whether or not its case file changed.
        """
        gate = self.parts.baseline_gate
        if gate is None:
            return []
        flag = {True: "true", False: "false"}
        return [("regression", flag[gate.regressed([record])]), ("lost", flag[gate.lost([record]) is not None])]

    def stop(self, session: pytest.Session, reason: str) -> None:
        """Stop the run: keep the reason (its first line), let pytest stop, start no further call."""
        self.stop_reason = clean_text(reason.splitlines()[0] if reason else reason)
        session.shouldstop = self.stop_reason
        stop_switch.stop_calls()
        self.process.cancel_ahead()

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        """After -x/--maxfail or a stop, start no further call made ahead."""
        session = self._session
        if session is not None and (session.shouldfail or session.shouldstop):
            stop_switch.stop_calls()  # no call starts after -x, --maxfail or a stop
            self.process.cancel_ahead()

    # -- signals -------------------------------------------------------------------------------
    @property
    def stop_file(self) -> Path:
        """Written by the controller when a signal stops the run; workers start no case after it."""
        return self.settings.out_dir / f"{self.info.run_id}.stop"

    @property
    def cooldown_file(self) -> Path:
        """The run's pause after a rate-limit answer, shared by its xdist workers (``throttle.share_cooldown``).

        Named by the run id, so no other run's pause is read; the controller removes it at the end.
        """
        return self.settings.out_dir / f"{self.info.run_id}.cooldown"

    def stop_requested(self) -> bool:
        """True on a worker once the controller was told to stop (no new case may start)."""
        if not self.is_worker:
            return False
        return (self._worker_stop is not None and self._worker_stop.reason is not None) or self.stop_file.exists()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """On a worker, watch the controller's stop file and cut a call in flight on Ctrl-C (``plugin.worker_stop``)."""
        self._session = session
        if self.is_worker and self.runs_cases:
            stop_switch.watch_stop(self.stop_file.exists)  # the controller was signalled: no call starts
            self._worker_stop = WorkerStop(self.stop_file)  # Ctrl-C cuts the call in flight: its case is not_run
            self._worker_stop.install()
            self.process.cuttable = self._worker_stop.cuttable  # the case's wait for its call
            throttle.share_cooldown(self.cooldown_file)  # a 429 one worker gets pauses every worker's calls

    def close_agent(self) -> None:
        """Call the agent's and the task's optional ``close()`` (``Assembly.close``); warn if one raises."""
        _warn(self.parts.close())

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Close the agent if the session did not end normally; forget the check cache; restore SIGINT on a worker."""
        from groundeval import check_cache

        self.close_agent()
        check_cache.use_directory(None)
        server_logs.use_directory(None)
        if self._worker_stop is not None:
            self._worker_stop.restore()
            self._worker_stop = None

    # -- collection -------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        """Collect the data directory as an ``EvalDataset`` with a location-free node id."""
        from groundeval.plugin.items import EvalDataset

        if path.resolve() != self.settings.data_dir:
            return None
        dataset = EvalDataset.from_parent(parent, path=path, nodeid=f"groundeval/{self.task.name}")
        dataset.gsession = self
        return dataset

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[Any]) -> None:
        """Keep only the cases named by node id on the command line, if any were, and leave out FHIR-only cases.

        On a worker of a resumed run, leave out the cases the controller keeps (on the controlling
        process, ``plugin.controller`` does).

        Raises:
            pytest.UsageError: A named case does not exist; the message lists a few that do.
        """
        from groundeval.plugin.items import deselect_fhir_only

        wanted = getattr(config.option, "groundeval_select", None)
        if wanted:
            from groundeval.plugin.items import select_by_node_id

            select_by_node_id(config, items, wanted, self.settings.data_dir)
        deselect_fhir_only(config, items, self.task)  # whole records run only with --groundeval-fhir
        kept = config.workerinput.get(RESUME_KEY) if self.is_worker else None  # type: ignore[attr-defined]
        if kept:
            from groundeval.plugin.resuming import deselect_finished

            deselect_finished(config, items, kept)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Remember this process's items in collection order (the calls made ahead follow it)."""
        from groundeval.plugin.items import EvalItem

        if self.runs_cases:
            self._order = [item for item in session.items if isinstance(item, EvalItem)]
            self._position = {item.nodeid: i for i, item in enumerate(self._order)}

    # -- end of run -------------------------------------------------------------------------
    def end_process(self, session: pytest.Session, exitstatus: int) -> None:
        """End this process's calls once: no retry after a stop, calls ahead cancelled, the agent closed.

        A worker reports what the controller adds up (calls dropped, its concurrency and peak, a
        spend stop) in ``workeroutput``.
        """
        if self._ended:
            return
        self._ended = True
        if session.shouldfail or session.shouldstop or self.stop_reason or exitstatus == pytest.ExitCode.INTERRUPTED:
            stop_switch.stop_calls()  # a retry of a call still in flight must not go out now
        _warn(self.process.end())  # cancel calls ahead, close agent and task, end the limits, flush LangSmith
        if self.is_worker:
            from groundeval.plugin.worker_keys import CONCURRENCY_KEY, DROPPED_KEY, PEAK_KEY, SPEND_STOP_KEY

            self.config.workeroutput[DROPPED_KEY] = self.discarded_calls  # type: ignore[attr-defined]
            self.config.workeroutput[CONCURRENCY_KEY] = self.concurrency  # type: ignore[attr-defined]
            self.config.workeroutput[PEAK_KEY] = self.process.calls.peak  # type: ignore[attr-defined]
            self.config.workeroutput[SPEND_STOP_KEY] = self.spend_stop  # type: ignore[attr-defined]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """End this process's calls (``end_process``; on the controlling process its controller asks first)."""
        self.end_process(session, exitstatus)


def _warn(problems: list[str]) -> None:
    """Warn with each cleanup problem (a ``close()`` that raised): the run's results matter more."""
    import warnings

    for problem in problems:
        warnings.warn(problem, stacklevel=3)
