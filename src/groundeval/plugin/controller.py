"""The controlling process's hooks: gathering the case records, the run record, the summary.

Registered beside ``plugin.session.GroundevalSession`` on the process that controls the run (a
serial run, or the pytest-xdist controller), as pytest-xdist keeps its controller (``dsession.py``)
apart from its workers (``remote.py``). The session runs cases on every process that has any;
the controller hears every case's record from the reports, appends each to the partial run
file, handles SIGINT/SIGTERM, and at the end writes the run record and prints the summary.
Workers never build one.
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from groundeval.models import stop_switch
from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.records.run_writer import RunWriter

if TYPE_CHECKING:
    from groundeval.execution.outcome_policy import RunInfo
    from groundeval.plugin.session import GroundevalSession
    from groundeval.plugin.signals import SignalStop
    from groundeval.reporting import GateResult
    from groundeval.run.settings import Settings
    from groundeval.tasks.base import Task

__all__ = ["MAX_FAILURE_BLOCKS", "RunController"]

MAX_FAILURE_BLOCKS = 25
"""Failed cases shown as pytest's FAILURES blocks at most; above it, one line each (``--groundeval-failure-blocks``)."""

_OUTCOME_ONLY: dict[str, dict[str, str]] = {}
"""One read-only ``{"outcome": ...}`` per outcome, shared by every logged report (what pytest keeps of ours)."""


class RunController:
    """Plugin object registered as ``groundeval-controller`` on the controlling process.

    Args:
        gsession: This process's session (its settings, task, run facts and stop).

    Raises:
        pytest.UsageError: ``--groundeval-resume`` names a run that cannot be continued.
    """

    def __init__(self, gsession: GroundevalSession) -> None:
        self.gs = gsession
        self.config: pytest.Config = gsession.config
        self.settings: Settings = gsession.settings
        self.task: Task = gsession.task
        self.info: RunInfo = gsession.info
        self.baseline = gsession.baseline
        self.twin_seed = gsession.twin_seed
        self.runs_cases = gsession.runs_cases  # False on the pytest-xdist controller (its workers run them)
        self.records: dict[str, CaseRecord] = {}
        self.selected: list[str] = []
        self.collection_errors: dict[str, dict[str, str]] = {}
        self.workers_peak = 0  # xdist controller: the most calls in flight at once on any worker
        self.worker_concurrency_heard = False  # xdist controller: a worker reported its effective N
        self.started = datetime.now(UTC)
        self.t0 = time.perf_counter()
        self.writer = RunWriter(self.settings.out_dir, self.info.run_id)
        self.run_record: RunRecord | None = None
        self.record_path: Path | None = None
        self.gate: GateResult | None = None
        self.output_failures: list[str] = []  # files of this run that could not be written, and why
        self._signal_stop: SignalStop | None = None
        self._session: pytest.Session | None = None
        from groundeval.plugin.resuming import Resumed, resume_run, start_partial

        self.resumed = Resumed(None, {})  # the cases kept from the run this one resumes
        if gsession.resume_from is not None:
            self.resumed = resume_run(self, gsession.resume_from)
        else:
            start_partial(self)

    # -- what the session holds, read (and set) here -------------------------------------------
    @property
    def stop_reason(self) -> str | None:
        """Why the run stopped early (the session's), or None."""
        return self.gs.stop_reason

    @stop_reason.setter
    def stop_reason(self, reason: str | None) -> None:
        self.gs.stop_reason = reason

    @property
    def concurrency(self) -> int:
        """Agent calls in flight at once per process (under xdist, as the workers report it)."""
        return self.gs.concurrency

    @concurrency.setter
    def concurrency(self, value: int) -> None:
        self.gs.concurrency = value

    @property
    def discarded_calls(self) -> int:
        """Agent calls made ahead whose items never ran (every worker's, added up)."""
        return self.gs.discarded_calls

    @discarded_calls.setter
    def discarded_calls(self, value: int) -> None:
        self.gs.discarded_calls = value

    @property
    def peak_in_flight(self) -> int:
        """The most agent calls that were in flight at once in one process (max over xdist workers)."""
        return max(self.gs.process.calls.peak, self.workers_peak)

    @property
    def stop_file(self) -> Path:
        """The run's stop file, which workers watch (``GroundevalSession.stop_file``)."""
        return self.gs.stop_file

    @property
    def cooldown_file(self) -> Path:
        """The run's shared pause after a rate-limit answer (``GroundevalSession.cooldown_file``)."""
        return self.gs.cooldown_file

    def case_file_count(self) -> int:
        """Case files in the data directory (for the start-up note while they are collected)."""
        return len(self.task.case_files(self.settings.data_dir))

    # -- the run's start and signals --------------------------------------------------------------
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Handle SIGTERM and, under xdist, SIGINT so the run record is written (``plugin.signals``)."""
        self._session = session
        from groundeval.plugin.signals import SignalStop

        self._signal_stop = SignalStop(self.config, self.stop_file, self._signalled)
        self._signal_stop.install()

    def _signalled(self, reason: str) -> None:
        """The first SIGINT/SIGTERM: keep the reason and let no agent call start from now on."""
        self.stop_reason = reason
        stop_switch.stop_calls()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Put the signal handlers back."""
        if self._signal_stop is not None:
            self._signal_stop.restore()
            self._signal_stop = None

    # -- collection -------------------------------------------------------------------------------
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Keep malformed case files for the run record."""
        if report.failed and report.nodeid.startswith("groundeval/"):
            self.collection_errors[report.nodeid] = {"nodeid": report.nodeid, "message": str(report.longrepr)}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[Any]) -> None:
        """Under ``--groundeval-resume``, leave out the cases the resumed run finished (after the selection)."""
        if self.resumed.kept:
            from groundeval.plugin.resuming import deselect_finished

            deselect_finished(config, items, self.resumed.kept)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Remember the selected cases and those a resumed run keeps (under xdist the workers report them)."""
        from groundeval.plugin.items import EvalItem

        ran = [item.nodeid for item in session.items if isinstance(item, EvalItem)]
        self.selected = list(dict.fromkeys([*self.resumed.kept, *ran]))

    # -- gathering records ------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather case records and append each to the partial run file."""
        data = getattr(report, "groundeval", None)
        if not isinstance(data, dict):
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
        """Append the whole record to the partial file; return what the controller keeps of it.

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
            self.gs.stop(self._session, reason)
        dsession = self.config.pluginmanager.getplugin("dsession")
        if dsession is not None:  # under xdist: workers start no further case (as after a signal)
            with contextlib.suppress(OSError):
                self.stop_file.touch()
            dsession.shouldstop = self.stop_reason

    # -- end of run -------------------------------------------------------------------------------
    def build_record(self, exit_status: int | None = None) -> RunRecord:
        """The run record from everything gathered so far (``plugin.run_end.build_record``)."""
        from groundeval.plugin.run_end import build_record

        return build_record(self, exit_status)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """End this process's calls (the session's part, first), then write the run record.

        Runs before pytest's junitxml plugin writes its file, so the run's headline figures can
        go into the ``<testsuite>`` properties.
        """
        self.gs.end_process(session, exitstatus)  # the calls cut off and dropped are counted before the record
        if self.config.getoption("collectonly", default=False):
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
        if every_failed and not self.settings.failure_blocks:
            ours = [str(getattr(r, "nodeid", "")).startswith("groundeval/") for r in every_failed]
            if sum(ours) > MAX_FAILURE_BLOCKS:
                held = [r for r, mine in zip(every_failed, ours, strict=True) if mine]
                stats["failed"] = [r for r, mine in zip(every_failed, ours, strict=True) if not mine]
        try:
            result = yield
        finally:
            if held and every_failed is not None:
                stats["failed"] = every_failed  # pytest's last line counts them
        if self.run_record is not None:
            self._write_summary(terminalreporter, held, exitstatus)
        return result

    def _write_summary(self, terminalreporter: Any, held: list[Any], exitstatus: int) -> None:
        """The failed cases held out of pytest's blocks, the groundeval table, batches, output problems, the gate."""
        from groundeval.plugin.summary import write_failed, write_summary

        assert self.run_record is not None
        write_failed(terminalreporter, held)
        write_summary(terminalreporter, self.run_record, self.record_path)
        if self.settings.batch is not None:
            from groundeval.run.batch_mode import batch_lines

            interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or self.stop_reason is not None
            for line in batch_lines(self.run_record.cases, self.gs.batcher, interrupted=interrupted):
                terminalreporter.write_line(line)
        for problem in self.output_failures:
            terminalreporter.write_line(f"groundeval: {problem}", red=True, bold=True)
        for line in self.gate.summary_lines() if self.gate is not None else ():
            terminalreporter.write_line(line, red=line.startswith(("REGRESSED", "LOST", "regression gate FAILED")))
