"""The active run: built in ``pytest_configure`` when ``--groundeval-task`` is given.

Modelled on pytest-xdist's ``DSession``: the plugin module stays thin and the run's state lives
in this one class, registered only when a task is active. On every process that runs cases it
owns running a case (``run_case``) and the stop policy; on the controlling process (a serial run,
or the xdist controller) it gathers the case records from the reports, writes the run record and
prints the summary. Workers only run cases and ship their records on the reports.
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from groundeval.datasets import Case
from groundeval.errors import ConfigError
from groundeval.execution import DEFAULT_CONCURRENCY, Job
from groundeval.execution.outcome_policy import CaseRun
from groundeval.models import server_logs, throttle
from groundeval.plugin.worker_keys import RESUME_KEY, RUN_ID_KEY
from groundeval.plugin.worker_stop import CallCut, WorkerStop
from groundeval.records.run_record import CaseRecord, RunRecord, new_run_id
from groundeval.records.run_writer import RunWriter
from groundeval.records.trial_stats import warm_up
from groundeval.redaction import clean_text
from groundeval.run.assembly import Role, assemble
from groundeval.run.process import ProcessRun, run_info
from groundeval.run.settings import Settings

if TYPE_CHECKING:
    from groundeval.models.batch import Batcher
    from groundeval.plugin.signals import SignalStop
    from groundeval.reporting import GateResult
    from groundeval.shards import Shard

__all__ = ["DEFAULT_CONCURRENCY", "MAX_FAILURE_BLOCKS", "GroundevalSession", "twin_seed_of"]


def twin_seed_of(run_id: str) -> int:
    """The twin seed a run draws when none is given: 9 decimal digits of the SHA-256 of its (random) run id."""
    import hashlib

    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") % 1_000_000_000

MAX_FAILURE_BLOCKS = 25
"""Failed cases shown as pytest's FAILURES blocks at most; above it, one line each (``--groundeval-failure-blocks``)."""

_OUTCOME_ONLY: dict[str, dict[str, str]] = {}
"""One read-only ``{"outcome": ...}`` per outcome, shared by every logged report (what pytest keeps of ours)."""


class GroundevalSession:
    """Plugin object registered as ``groundeval-session`` while a task is active.

    Raises:
        pytest.UsageError: The task options are invalid, the out-dir is unusable, or the agent
            cannot be built (e.g. ``claude`` without ``ANTHROPIC_API_KEY``).
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
            self.parts = assemble(settings, role, show=self._show)  # run.assembly: task, agent, batch, checks
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.task = self.parts.task
        cache = getattr(config, "cache", None)  # pytest's cacheprovider; absent with -p no:cacheprovider
        from groundeval import check_cache

        check_cache.use_directory(Path(cache.mkdir("groundeval-checked")) if cache is not None else None)
        self.baseline: RunRecord | None = self.parts.baseline
        self.gate: GateResult | None = None
        run_id = workerinput[RUN_ID_KEY] if self.is_worker else new_run_id()
        resume_from = None  # --groundeval-resume: the interrupted run this one continues, under its run id
        if settings.resume is not None and not self.is_worker:
            from groundeval.plugin.resuming import open_resume

            resume_from = open_resume(settings)
            run_id = resume_from.run_id
        # the order of a case's items and its twins' (``tasks.counterfactual.interleave``): the
        # option, else drawn from the run id, which every pytest-xdist worker shares
        self.twin_seed = settings.twin_seed if settings.twin_seed is not None else twin_seed_of(run_id)
        self.info = run_info(self.parts, settings, run_id, workerinput.get("workerid") if self.is_worker else None)
        self.records: dict[str, CaseRecord] = {}
        self.selected: list[str] = []
        self.collection_errors: dict[str, dict[str, str]] = {}
        self.workers_peak = 0  # xdist controller: the most calls in flight at once on any worker
        self.started = datetime.now(UTC)
        self.t0 = time.perf_counter()
        self.writer = RunWriter(settings.out_dir, run_id)
        self.run_record: RunRecord | None = None
        self.record_path: Path | None = None
        self.stop_reason: str | None = None
        self.output_failures: list[str] = []  # files of this run that could not be written, and why
        self._signal_stop: SignalStop | None = None
        self._worker_stop: WorkerStop | None = None  # an xdist worker's SIGINT handling (plugin.worker_stop)
        # this process's part of the run (run.process): the executor, the call tally, the stop policy
        self.process = ProcessRun(self.parts, self.info, settings, phase=self._set_phase, cuttable=self._cuttable)
        self._order: list[Any] = []  # this process's EvalItems in collection order
        self._position: dict[str, int] = {}
        self._session: pytest.Session | None = None
        self.worker_concurrency_heard = False  # xdist controller: a worker reported its effective N
        self.spend_stop: str | None = None  # the stop reason when --groundeval-max-cost stopped this process
        if self.runs_cases:
            from groundeval.run.spend_check import worker_share

            self.process.start(None if settings.max_cost is None else worker_share(settings.max_cost, role.workers))
        from groundeval.plugin.resuming import Resumed, resume_run, start_partial

        self.resumed = Resumed(None, {})  # the cases kept from the run this one resumes (controller)
        if resume_from is not None:
            self.resumed = resume_run(self, resume_from)
        elif not self.is_worker:
            start_partial(self)

    def _show(self, line: str) -> None:
        """A batch's progress on the status line while it is out."""
        self._set_phase(line)

    def _set_phase(self, phase: str | None) -> None:
        progress = self.config.pluginmanager.get_plugin("groundeval-progress")
        if progress is not None:
            progress.set_phase(phase)

    def _cuttable(self) -> contextlib.AbstractContextManager[object]:
        """On a worker, Ctrl-C cuts the call awaited (``plugin.worker_stop``); elsewhere nothing."""
        worker_stop = self._worker_stop
        return worker_stop.cuttable() if worker_stop is not None else contextlib.nullcontext()

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
    def peak_in_flight(self) -> int:
        """The most agent calls that were in flight at once in one process (max over xdist workers)."""
        return max(self.process.calls.peak, self.workers_peak)

    @property
    def limit(self) -> int | None:
        """``--groundeval-limit``: run only the first N cases, or None for all."""
        return self.settings.limit

    @property
    def shard(self) -> Shard | None:
        """``--groundeval-shard``: the shard of the cases this run collects, or None for all."""
        return self.settings.shard

    def case_file_count(self) -> int:
        """Case files in the data directory (for the start-up note while they are collected)."""
        return len(self.task.case_files(self.settings.data_dir))

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
            self._stop(session, str(cut))
            pytest.skip(f"not run: {cut} while its agent call was in flight")
        if step.stop is not None:
            self._stop(session, step.stop)
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

    def _stop(self, session: pytest.Session, reason: str) -> None:
        self.stop_reason = clean_text(reason.splitlines()[0] if reason else reason)
        session.shouldstop = self.stop_reason
        throttle.stop_calls()
        self._cancel_ahead()

    def _cancel_ahead(self) -> None:
        """Let the executor start no further call; count the calls made whose items will not run."""
        self.process.cancel_ahead()

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        """After -x/--maxfail or a stop, start no further call made ahead."""
        session = self._session
        if session is not None and (session.shouldfail or session.shouldstop):
            throttle.stop_calls()  # no call starts after -x, --maxfail or a stop
            self._cancel_ahead()

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
        """Handle SIGTERM and, under xdist, SIGINT so the run record is written (``plugin.signals``)."""
        self._session = session
        if not self.is_worker and not self.config.getoption("collectonly", default=False):
            # scipy for the run's intervals: imported while collection and the first (lone) agent
            # call run, so that little of it overlaps the calls made ahead
            warm_up()
        if not self.is_worker:
            from groundeval.plugin.signals import SignalStop

            self._signal_stop = SignalStop(self.config, self.stop_file, self._signalled)
            self._signal_stop.install()
        elif self.runs_cases:
            throttle.watch_stop(self.stop_file.exists)  # the controller was signalled: no call starts
            self._worker_stop = WorkerStop(self.stop_file)  # Ctrl-C cuts the call in flight: its case is not_run
            self._worker_stop.install()
            throttle.share_cooldown(self.cooldown_file)  # a 429 one worker gets pauses every worker's calls

    def _signalled(self, reason: str) -> None:
        """The first SIGINT/SIGTERM: keep the reason and let no agent call start from now on."""
        self.stop_reason = reason
        throttle.stop_calls()

    def close_agent(self) -> None:
        """Call the agent's and the task's optional ``close()`` (``Assembly.close``); warn if one raises."""
        _warn(self.parts.close())

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Close the agent if the session did not end normally; put the signal handlers back; forget the check cache."""
        from groundeval import check_cache

        self.close_agent()
        check_cache.use_directory(None)
        server_logs.use_directory(None)
        if self._signal_stop is not None:
            self._signal_stop.restore()
            self._signal_stop = None
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

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Keep malformed case files for the run record (controller only)."""
        if report.failed and not self.is_worker and report.nodeid.startswith("groundeval/"):
            self.collection_errors[report.nodeid] = {"nodeid": report.nodeid, "message": str(report.longrepr)}

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[Any]) -> None:
        """Keep only the cases named by node id on the command line, if any were, and leave out FHIR-only cases.

        Raises:
            pytest.UsageError: A named case does not exist; the message lists a few that do.
        """
        from groundeval.plugin.items import deselect_fhir_only

        wanted = getattr(config.option, "groundeval_select", None)
        if wanted:
            from groundeval.plugin.items import select_by_node_id

            select_by_node_id(config, items, wanted, self.settings.data_dir)
        deselect_fhir_only(config, items, self.task)  # whole records run only with --groundeval-fhir
        kept = self.resumed.kept if not self.is_worker else config.workerinput.get(RESUME_KEY)  # type: ignore[attr-defined]
        if kept:
            from groundeval.plugin.resuming import deselect_finished

            deselect_finished(config, items, kept)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Remember the selected cases (serial runs; the xdist controller hears them from workers)."""
        from groundeval.plugin.items import EvalItem

        if not self.is_worker:  # with the cases a resumed run keeps (their items were deselected)
            ran = [item.nodeid for item in session.items if isinstance(item, EvalItem)]
            self.selected = list(dict.fromkeys([*self.resumed.kept, *ran]))
        if self.runs_cases:
            self._order = [item for item in session.items if isinstance(item, EvalItem)]
            self._position = {item.nodeid: i for i, item in enumerate(self._order)}

    # -- gathering records ------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather case records on the controller and append each to the partial run file."""
        data = getattr(report, "groundeval", None)
        if self.is_worker or not isinstance(data, dict):
            return
        if report.nodeid in self.records and not self.resumed.replaces(report.nodeid):
            return
        record = CaseRecord.model_validate(data)
        if record.outcome == "auth_error":  # under xdist each worker may hit it once
            first = next((n for n, r in self.records.items() if r.outcome == "auth_error"), None)
            if first is not None:
                report.longrepr = f"auth_error: the same rejected credentials as {first} (see above)"
        self.records[report.nodeid] = self._keep(record)
        # pytest keeps every report to the end; the outcome is all its status hooks still read
        # one read-only dict per outcome, shared by every report (50,000 reports, 50,000 dicts otherwise)
        report.groundeval = _OUTCOME_ONLY.setdefault(record.outcome, {"outcome": record.outcome})  # type: ignore[attr-defined]

    def _keep(self, record: CaseRecord) -> CaseRecord:
        """Append the whole record to the partial file; return what the session keeps of it.

        A light copy (``records.light``) once the line is written: the run record is written
        from the partial file at the end. The whole record after a failed write (nothing more is
        appended then), for the final record.
        """
        if not self.output_failures:
            try:
                self.writer.append(record)
            except OSError as exc:
                self._output_failed(exc)
            else:
                from groundeval.records.light import light_copy

                return light_copy(record, keep_parsed=self.settings.counterfactual)
        return record

    def _output_failed(self, exc: OSError) -> None:
        """The partial file could not be written: say which and why, and stop the run on every process."""
        from groundeval.records.write_errors import describe

        self.output_failures.append(describe(exc))
        reason = f"groundeval: {self.output_failures[0]}; the run stopped so that no further case goes unrecorded"
        if self._session is not None:
            self._stop(self._session, reason)
        dsession = self.config.pluginmanager.getplugin("dsession")
        if dsession is not None:  # under xdist: workers start no further case (as after a signal)
            with contextlib.suppress(OSError):
                self.stop_file.touch()
            dsession.shouldstop = self.stop_reason

    # -- end of run -------------------------------------------------------------------------
    def build_record(self, exit_status: int | None = None) -> RunRecord:
        """The run record from everything gathered so far (``plugin.run_end.build_record``)."""
        from groundeval.plugin.run_end import build_record

        return build_record(self, exit_status)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Flush the LangSmith stream (every process); write the run record (controller only).

        Runs before pytest's junitxml plugin writes its file, so the run's headline figures can
        go into the ``<testsuite>`` properties.
        """
        if session.shouldfail or session.shouldstop or self.stop_reason or exitstatus == pytest.ExitCode.INTERRUPTED:
            throttle.stop_calls()  # a retry of a call still in flight must not go out now
        _warn(self.process.end())  # cancel calls ahead, close agent and task, end the limits, flush LangSmith
        if self.is_worker:
            from groundeval.plugin.worker_keys import CONCURRENCY_KEY, DROPPED_KEY, PEAK_KEY, SPEND_STOP_KEY

            self.config.workeroutput[DROPPED_KEY] = self.discarded_calls  # type: ignore[attr-defined]
            self.config.workeroutput[CONCURRENCY_KEY] = self.concurrency  # type: ignore[attr-defined]
            self.config.workeroutput[PEAK_KEY] = self.process.calls.peak  # type: ignore[attr-defined]
            self.config.workeroutput[SPEND_STOP_KEY] = self.spend_stop  # type: ignore[attr-defined]
        if self.is_worker or self.config.getoption("collectonly", default=False):
            return
        if exitstatus == pytest.ExitCode.USAGE_ERROR:  # e.g. a mistyped node id: nothing ran, nothing to record
            return
        if session.shouldfail and not self.stop_reason:
            self.stop_reason = str(session.shouldfail)
        from groundeval.plugin.run_end import finish_run

        finish_run(self, session, int(exitstatus))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> Any:
        """Print the groundeval table last, after pytest's own summary and short summary.

        Above ``MAX_FAILURE_BLOCKS`` failed cases, each is one line ('FAILED <node id> - <reason>',
        ``summary.write_failed``) rather than a block of pytest's FAILURES section, unless
        ``--groundeval-failure-blocks``: pytest looks up each failed item's teardown reports by
        scanning every report of the run, a cost of failures x tests that dominated a 5,000-case
        run (FRICTION.md), and thousands of blocks are unreadable anyway. Their reports are held
        out of ``stats["failed"]`` while pytest's summary sections run (so pytest's short summary
        does not list them twice), and put back before pytest counts them for its last line.
        """
        stats: dict[str, list[Any]] = getattr(terminalreporter, "stats", {})
        every_failed = stats.get("failed")
        held: list[Any] = []
        if not self.is_worker and every_failed and not self.settings.failure_blocks:
            ours = [str(getattr(r, "nodeid", "")).startswith("groundeval/") for r in every_failed]
            if sum(ours) > MAX_FAILURE_BLOCKS:
                held = [r for r, mine in zip(every_failed, ours, strict=True) if mine]
                stats["failed"] = [r for r, mine in zip(every_failed, ours, strict=True) if not mine]
        try:
            result = yield
        finally:
            if held and every_failed is not None:
                stats["failed"] = every_failed  # pytest's last line counts them
        if not self.is_worker and self.run_record is not None:
            from groundeval.plugin.summary import write_failed, write_summary

            write_failed(terminalreporter, held)
            write_summary(terminalreporter, self.run_record, self.record_path)
            if self.settings.batch is not None:
                from groundeval.run.batch_mode import batch_lines

                interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or self.stop_reason is not None
                for line in batch_lines(self.run_record.cases, self.batcher, interrupted=interrupted):
                    terminalreporter.write_line(line)
            for problem in self.output_failures:
                terminalreporter.write_line(f"groundeval: {problem}", red=True, bold=True)
            for line in self.gate.summary_lines() if self.gate is not None else ():
                terminalreporter.write_line(line, red=line.startswith(("REGRESSED", "LOST", "regression gate FAILED")))
        return result


def _warn(problems: list[str]) -> None:
    """Warn with each cleanup problem (a ``close()`` that raised): the run's results matter more."""
    import warnings

    for problem in problems:
        warnings.warn(problem, stacklevel=3)
