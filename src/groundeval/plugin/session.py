"""The active run: built in ``pytest_configure`` when ``--groundeval-task`` is given.

Modelled on pytest-xdist's ``DSession``: the plugin module stays thin and the run's state lives
in this one class, registered only when a task is active. On every process that runs cases it
owns running a case (``run_case``) and the stop policy; on the controlling process (a serial run,
or the xdist controller) it gathers the case records from the reports, writes the run record and
prints the summary. Workers only run cases and ship their records on the reports.
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from groundeval.agents.base import (
    Agent,
    AgentConfig,
    check_record_access,
    check_task,
    check_tool_transport,
    for_task,
    make_agent,
    preflight_agent,
)
from groundeval.datasets import Case
from groundeval.errors import ConfigError, RunStopError, SpendLimitReached
from groundeval.execution import DEFAULT_CONCURRENCY, CallTally, Executor, Job, effective_concurrency, make_executor
from groundeval.execution.outcome_policy import CaseRun, RunInfo, setup_failed
from groundeval.models import server_logs, throttle
from groundeval.models.retry import call_policy_options
from groundeval.plugin.agent_setup import is_replay as _is_replay, preflight_replay, prepare_agent
from groundeval.plugin.preflight import check_cache_dir, check_data_dir_task, check_out_dir
from groundeval.plugin.stop_policy import StopPolicy
from groundeval.plugin.worker_keys import RESUME_KEY, RUN_ID_KEY
from groundeval.plugin.worker_stop import CallCut, WorkerStop
from groundeval.records.conversation import task_version
from groundeval.records.run_record import CaseRecord, RunRecord, new_run_id
from groundeval.records.run_writer import RunWriter
from groundeval.records.trial_stats import warm_up
from groundeval.redaction import clean_text
from groundeval.run.settings import Settings
from groundeval.tasks import make_task

if TYPE_CHECKING:
    from groundeval.models.batch import Batcher
    from groundeval.plugin.signals import SignalStop
    from groundeval.reporting import BaselineGate, GateResult
    from groundeval.reporting.langsmith import LangSmithStream
    from groundeval.shards import Shard
    from groundeval.tasks.base import Task

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
        self._agent: Agent | None = None
        self._agent_problem: ConfigError | None = None  # a worker whose agent could not be built
        agent_config = AgentConfig(model=settings.model, options=dict(settings.agent_options))
        if settings.task is None:  # pragma: no cover - the plugin builds a session only with a task
            raise pytest.UsageError("no --groundeval-task")
        self.batcher: Batcher | None = None  # --groundeval-batch: the agent's model sends batches
        from groundeval.models.pricing import use_prices

        use_prices({})  # every process sets its own, before any call is priced or the limit checked
        if settings.prices is not None:
            from groundeval.models.price_file import PriceFileError, load_price_file

            try:
                use_prices(load_price_file(settings.prices))
            except PriceFileError as exc:
                raise pytest.UsageError(f"--groundeval-prices: {exc}") from None
        if settings.batch is not None and distributed:
            from groundeval.plugin.batch_mode import NO_XDIST

            raise pytest.UsageError(NO_XDIST)
        server_logs.use_directory(settings.out_dir)  # a judge's or agent's model server logs in the out-dir
        try:
            # a task that calls a model itself (the summary judge) keeps the run's deadline and retries
            self.task = make_task(settings.task, settings.task_options,
                                  call_options=call_policy_options(settings.agent_options))
            if settings.fhir is not None:  # the record reaches the agent over FHIR REST (tasks.fhir_mode)
                from groundeval.tasks.fhir_mode import FhirModeTask

                self.task = cast("Task", FhirModeTask(self.task, settings.fhir))
            if distributed:
                agent_name = preflight_agent(settings.agent, agent_config, self.task, settings.tools,
                                             settings.fhir)
                preflight_replay(settings, self.task)  # a bad replay record: a usage error before workers start
            elif self.runs_cases:
                try:
                    self._agent = self._build_agent(settings, self.task)
                except ConfigError as exc:
                    if not self.is_worker:
                        raise
                    self._agent_problem = exc  # reported as config_error on this worker's first case
                if settings.batch is not None and self._agent is not None:
                    from groundeval.plugin.batch_mode import start_batches

                    self.batcher = start_batches(self._agent, settings.agent, settings.batch, config)
        except ConfigError as exc:
            raise pytest.UsageError(for_task(str(exc), settings.task)) from None
        if settings.max_cost is not None:
            self._check_max_cost(settings)
        if not self.is_worker:
            check_out_dir(settings.out_dir)
            check_cache_dir(settings.cache_dir)
            check_data_dir_task(self.task, settings.data_dir)
        cache = getattr(config, "cache", None)  # pytest's cacheprovider; absent with -p no:cacheprovider
        from groundeval import check_cache

        check_cache.use_directory(Path(cache.mkdir("groundeval-checked")) if cache is not None else None)
        self.baseline: RunRecord | None = None
        self.gate: GateResult | None = None
        self._baseline_gate: BaselineGate | None = None
        if settings.baseline is not None:
            from groundeval.reporting import BaselineGate, load_record

            try:
                self.baseline = load_record(settings.baseline)
            except (OSError, ValueError) as exc:
                raise pytest.UsageError(f"--groundeval-baseline: {exc}") from None
            if self.baseline.task != self.task.name:
                raise pytest.UsageError(
                    f"--groundeval-baseline={settings.baseline}: a run record of the {self.baseline.task} task; this "
                    f"run is {self.task.name}: give a baseline run of the same task"
                )
            self._baseline_gate = BaselineGate(self.baseline)
        run_id = config.workerinput[RUN_ID_KEY] if self.is_worker else new_run_id()  # type: ignore[attr-defined]
        resume_from = None  # --groundeval-resume: the interrupted run this one continues, under its run id
        if settings.resume is not None and not self.is_worker:
            from groundeval.plugin.resuming import open_resume

            resume_from = open_resume(settings)
            run_id = resume_from.run_id
        worker = config.workerinput.get("workerid") if self.is_worker else None  # type: ignore[attr-defined]
        if self._agent is not None:
            agent_name = self._agent.name
        elif not distributed:
            agent_name = settings.agent
        model = self._agent.model if self._agent is not None else settings.model
        # the order of a case's items and its twins' (``tasks.counterfactual.interleave``): the
        # option, else drawn from the run id, which every pytest-xdist worker shares
        self.twin_seed = settings.twin_seed if settings.twin_seed is not None else twin_seed_of(run_id)
        self.info = RunInfo(run_id=run_id, task=self.task.name, agent=agent_name, model=model, worker=worker,
                            conversation=settings.conversation,
                            task_version=task_version(type(getattr(self.task, "inner", self.task)).__module__)
                            if settings.conversation == "reference" else "")
        self.records: dict[str, CaseRecord] = {}
        self.selected: list[str] = []
        self.collection_errors: dict[str, dict[str, str]] = {}
        self.stop_policy = StopPolicy()  # answers and connection failures in this process
        self.calls = CallTally()  # this process's agent calls: in flight, peak, cut off by Ctrl-C
        self.workers_peak = 0  # xdist controller: the most calls in flight at once on any worker
        self.warmed = False
        self.started = datetime.now(UTC)
        self.t0 = time.perf_counter()
        self.writer = RunWriter(settings.out_dir, run_id)
        self.run_record: RunRecord | None = None
        self.record_path: Path | None = None
        self.stop_reason: str | None = None
        self.output_failures: list[str] = []  # files of this run that could not be written, and why
        self._signal_stop: SignalStop | None = None
        self._worker_stop: WorkerStop | None = None  # an xdist worker's SIGINT handling (plugin.worker_stop)
        self.concurrency = effective_concurrency(settings.concurrency, self._agent)
        if settings.batch is not None:  # calls in flight: as many as the batch executor starts ahead
            from groundeval.execution.batch import BATCHES_AHEAD

            self.concurrency = BATCHES_AHEAD * settings.batch.size
        self.executor: Executor | None = None  # how this process's agent calls are made (execution/)
        if self._agent is not None:
            self.executor = make_executor(self.task, self._agent, self.info, self.concurrency, self.calls,
                                          batcher=self.batcher)
        self._order: list[Any] = []  # this process's EvalItems in collection order
        self._position: dict[str, int] = {}
        self._session: pytest.Session | None = None
        self.discarded_calls = 0  # agent calls made ahead whose items never ran (the run stopped)
        self.worker_concurrency_heard = False  # xdist controller: a worker reported its effective N
        self.spend_stop: str | None = None  # the stop reason when --groundeval-max-cost stopped this process
        if self.runs_cases:
            throttle.configure(self.concurrency)
            if settings.max_cost is not None:
                from groundeval.models import spend
                from groundeval.plugin.spend_check import worker_share

                spend.configure(worker_share(settings.max_cost, config))
        self.stream: LangSmithStream | None = None  # imported only when a LangSmith key is set
        if os.environ.get("LANGSMITH_API_KEY") and self.runs_cases:
            from groundeval.reporting.langsmith import LangSmithStream

            directions = dict(getattr(self.task, "metric_directions", None) or {})
            self.stream = LangSmithStream.from_env(self.info, values=[k for k, d in directions.items() if d == "none"])
        from groundeval.plugin.resuming import Resumed, resume_run, start_partial

        self.resumed = Resumed(None, {})  # the cases kept from the run this one resumes (controller)
        if resume_from is not None:
            self.resumed = resume_run(self, resume_from)
        elif not self.is_worker:
            start_partial(self)

    @property
    def peak_in_flight(self) -> int:
        """The most agent calls that were in flight at once in one process (max over xdist workers)."""
        return max(self.calls.peak, self.workers_peak)

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

    def _check_max_cost(self, settings: Settings) -> None:
        """Refuse ``--groundeval-max-cost`` for calls that cannot be priced beforehand (``plugin.spend_check``)."""
        from groundeval.agents.base import AGENTS, _load_target
        from groundeval.plugin.spend_check import check_max_cost

        assert settings.max_cost is not None
        agent: Any = self._agent
        if agent is None and not settings.agent.startswith("replay:"):
            agent = _load_target(AGENTS.get(settings.agent, settings.agent), settings.agent)
        check_max_cost(settings.max_cost, settings.agent, agent, settings.model)

    @staticmethod
    def _build_agent(settings: Settings, task: Any) -> Agent:
        """Build the agent on a process that runs cases (never on the xdist controller).

        Raises:
            ConfigError: Bad spec, an agent that refuses its config or this task, or a
                constructor that raised (its message is kept).
        """
        try:
            config = AgentConfig(model=settings.model, options=dict(settings.agent_options), out_dir=settings.out_dir)
            agent = make_agent(settings.agent, config, tools=settings.tools, fhir=settings.fhir)
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(f"agent {settings.agent!r} could not be built: {type(exc).__name__}: {exc}") from exc
        check_task(agent, settings.agent, task)
        check_tool_transport(agent, settings.agent, settings.tools)
        if not _is_replay(settings.agent):  # a replayed answer keeps the facts it was made with
            check_record_access(agent, settings.agent, settings.fhir)
        return prepare_agent(agent, settings, task)  # the MCP tool servers; replay checks; the cache

    # -- running a case ----------------------------------------------------------------------
    def run_case(self, case: Case, nodeid: str, session: pytest.Session, trial: int = 0) -> CaseRun:
        """Run one case through this process's executor (after the agent's warm-up) and apply the stop policy.

        The executor (``groundeval.execution``) makes the agent call: when the item runs, or ahead
        in threads with ``--groundeval-concurrency`` above 1 (the jobs of the next items are handed
        to it first, ``plugin.upcoming``); this case's result is then scored and recorded here, in
        collection order.

        Raises:
            pytest.skip.Exception: The run was stopped before this case's call could start.
        """
        executor = self.executor
        if executor is None:
            problem = self._agent_problem or ConfigError("the agent was not built on this process")
            run = setup_failed(self.info, case, nodeid, RunStopError(str(problem)), "config_error")
            self._stop(session, f"groundeval: stopped after config_error on {case.case_id} (see the error above)")
            return run
        if not self.warmed:
            self.warmed = True
            warmup = getattr(self._agent, "warmup", None)
            if callable(warmup):
                progress = self.config.pluginmanager.get_plugin("groundeval-progress")
                try:
                    if progress is not None:
                        progress.set_phase("warming up the agent (imports, clients)")
                    warmup()  # imports and clients, before the first case is timed
                except Exception as warm_exc:  # a ConfigError (a server that cannot start) is config_error
                    outcome = "config_error" if isinstance(warm_exc, ConfigError) else "agent_error"
                    run = setup_failed(self.info, case, nodeid, warm_exc, outcome)
                    name = type(warm_exc).__name__
                    reason = f"the agent's warmup() raised {name}: {warm_exc}"
                    if outcome == "config_error":
                        reason = f"stopped after config_error on {case.case_id} (see the error above)"
                    self._stop(session, f"groundeval: {reason}")
                    return run
                finally:
                    if progress is not None:
                        progress.set_phase(None)
        window = executor.lookahead
        if window and not self.stop_requested():
            from groundeval.plugin.upcoming import upcoming

            executor.submit(upcoming(self._order, self._position, nodeid, session, window, worker=self.is_worker))
        worker_stop = self._worker_stop
        try:
            with worker_stop.cuttable() if worker_stop is not None else contextlib.nullcontext():
                finished = executor.result(Job(nodeid, case, trial))
        except CallCut as cut:  # Ctrl-C on a worker: the call is dropped (counted), the case not run
            self._stop(session, str(cut))
            pytest.skip(f"not run: {cut} while its agent call was in flight")
        if finished is None:
            pytest.skip("not run: the run was stopped before this case's agent call started")
        run = finished
        exc: BaseException | None = run.exc
        if isinstance(exc, SpendLimitReached):  # no call was made: this case and the rest are not_run
            self._stop(session, f"groundeval: {exc}")
            self.spend_stop = self.stop_reason
            return CaseRun(run.record, pytest.skip.Exception(f"not_run: {exc}"))
        if run.record.outcome == "not_run" and exc is not None:  # a batched request the provider never ran
            return CaseRun(run.record, pytest.skip.Exception(run.record.message))
        stop = self.stop_policy.after(run, case.case_id)  # plugin.stop_policy
        if stop is not None:
            self._stop(session, stop)
        if self.stream is not None:  # LangSmith; never raises
            self.stream.record_case(run.record.model_dump(mode="json"))
        return run

    def baseline_properties(self, record: CaseRecord) -> list[tuple[str, str]]:
        """The junit ``regression`` and ``lost`` of a case against ``--groundeval-baseline`` (none without a baseline).

        ``regression``: passed in the baseline, fails now; ``lost``: a verdict in the baseline, none
        now (excluded, ``invalid_case``, not run), whether or not its case file changed.
        """
        gate = self._baseline_gate
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
        if self.executor is not None:
            self.discarded_calls += self.executor.close()

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
        """Call the agent's and the task's optional ``close()``; warn if one raises.

        The ``local`` agent stops its server; the summary task stops its judge's (a ``local/<gguf>``
        judge), so no model server outlives the run.
        """
        for owner, what in ((self._agent, "the agent"), (getattr(self, "task", None), "the task")):
            close = getattr(owner, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception as exc:  # the run's results matter more than a failed cleanup
                import warnings

                warnings.warn(f"groundeval: {what}'s close() raised {type(exc).__name__}: {exc}", stacklevel=2)

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
        self._cancel_ahead()
        self.close_agent()
        self.discarded_calls += self.calls.interrupted  # cut off by Ctrl-C in the main thread: paid, never scored
        self.calls.interrupted = 0
        throttle.configure(None)  # ends this run's calls: none of them starts another attempt
        if self.settings.max_cost is not None:
            from groundeval.models import spend

            spend.configure(None)
        if self.is_worker:
            from groundeval.plugin.worker_keys import CONCURRENCY_KEY, DROPPED_KEY, PEAK_KEY, SPEND_STOP_KEY

            self.config.workeroutput[DROPPED_KEY] = self.discarded_calls  # type: ignore[attr-defined]
            self.config.workeroutput[CONCURRENCY_KEY] = self.concurrency  # type: ignore[attr-defined]
            self.config.workeroutput[PEAK_KEY] = self.calls.peak  # type: ignore[attr-defined]
            self.config.workeroutput[SPEND_STOP_KEY] = self.spend_stop  # type: ignore[attr-defined]
        if self.stream is not None:
            self.stream.close()  # bounded wait; warns once on failure, never raises
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
                from groundeval.plugin.batch_mode import batch_lines

                interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or self.stop_reason is not None
                for line in batch_lines(self.run_record.cases, self.batcher, interrupted=interrupted):
                    terminalreporter.write_line(line)
            for problem in self.output_failures:
                terminalreporter.write_line(f"groundeval: {problem}", red=True, bold=True)
            for line in self.gate.summary_lines() if self.gate is not None else ():
                terminalreporter.write_line(line, red=line.startswith(("REGRESSED", "LOST", "regression gate FAILED")))
        return result
