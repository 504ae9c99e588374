"""The active run: built in ``pytest_configure`` when ``--groundeval-task`` is given.

Holds the task, the agent and the run info on every process. On the controlling process
(serial runs, or the xdist controller) it also gathers case records from the reports, writes the
run record and prints the summary; workers only run cases and ship records on their reports.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from groundeval.agents.base import Agent, AgentConfig, FunctionAgent, check_task, make_agent
from groundeval.datasets import sha256_file
from groundeval.errors import AgentError, ConfigError, GroundevalError
from groundeval.plugin.items import EvalDataset, EvalItem
from groundeval.plugin.options import Settings
from groundeval.plugin.summary import write_summary
from groundeval.records import AgentRequest
from groundeval.runner import RunInfo, ordered, summarize
from groundeval.tasks import make_task
from groundeval.tracing import RunRecord, RunWriter, new_run_id, package_versions, redact

if TYPE_CHECKING:
    from groundeval.langsmith_stream import LangSmithStream

__all__ = ["GroundevalSession", "XdistHooks"]

RUN_ID_KEY = "groundeval_run_id"


class GroundevalSession:
    """Plugin object registered as ``groundeval-session`` while a task is active.

    Raises:
        pytest.UsageError: The task options are invalid or the agent cannot be built
            (e.g. ``claude`` without ``ANTHROPIC_API_KEY``).
    """

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        assert settings.task is not None
        self.config = config
        self.settings = settings
        self.is_worker = hasattr(config, "workerinput")
        try:
            self.task = make_task(settings.task, settings.task_options)
            self.agent: Agent = self._build_agent(config, settings)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        run_id = config.workerinput[RUN_ID_KEY] if self.is_worker else new_run_id()  # type: ignore[attr-defined]
        self.info = RunInfo(run_id=run_id, task=self.task.name, agent=self.agent.name, model=self.agent.model)
        self.records: dict[str, dict[str, Any]] = {}
        self.answered = 0  # agent calls that returned, in this process
        self.warmed = False
        self.infra_before_first_answer = 0
        self.collection_errors: dict[str, dict[str, str]] = {}
        self.started = datetime.now(UTC)
        self.t0 = time.perf_counter()
        self.writer = RunWriter(settings.out_dir, run_id)
        self.record_path: Path | None = None
        self.complete = True
        self._previous_sigterm: Any = None
        self.stream: LangSmithStream | None = None  # imported only when a LangSmith key is set
        if os.environ.get("LANGSMITH_API_KEY"):
            from groundeval.langsmith_stream import LangSmithStream

            self.stream = LangSmithStream.from_env(self.info)

    @staticmethod
    def _build_agent(config: pytest.Config, settings: Settings) -> Agent:
        """Build the agent once per process; listing cases (``--collect-only``) needs none.

        Raises:
            ConfigError: Bad spec, an agent that refuses its config or this task, or a
                constructor that raised (its message is kept).
        """
        if config.getoption("collectonly", default=False):
            return FunctionAgent(_never_called, name=settings.agent)
        try:
            agent = make_agent(settings.agent, AgentConfig(model=settings.model, options=dict(settings.agent_options)))
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(f"agent {settings.agent!r} could not be built: {type(exc).__name__}: {exc}") from exc
        assert settings.task is not None
        check_task(agent, settings.agent, settings.task)
        return agent

    # -- signals -------------------------------------------------------------------------------
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Treat SIGTERM (a CI timeout, ``kill``) like Ctrl-C so the run record is still written."""
        if self.is_worker or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._previous_sigterm = signal.signal(signal.SIGTERM, _sigterm_to_interrupt)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Put the SIGTERM handler back."""
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    # -- collection -------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        """Collect the data directory as an ``EvalDataset`` with a location-free node id."""
        if path.resolve() != self.settings.data_dir:
            return None
        dataset = EvalDataset.from_parent(parent, path=path, nodeid=f"groundeval/{self.task.name}")
        dataset.gsession = self
        return dataset

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Keep malformed case files for the run record (controller only)."""
        if report.failed and not self.is_worker and report.nodeid.startswith("groundeval/"):
            self.collection_errors[report.nodeid] = {
                "nodeid": report.nodeid, "message": str(report.longrepr),
            }

    # -- reporting --------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """Attach the case record to the report that decides the case (setup error or call)."""
        report = yield
        if not isinstance(item, EvalItem):
            return report
        failed_setup = call.when == "setup" and report.failed
        if failed_setup and call.excinfo is not None and isinstance(call.excinfo.value, GroundevalError):
            # A classified agent/API error explains itself; the agent's source lines do not help.
            report.longrepr = f"{type(call.excinfo.value).__name__}: {call.excinfo.value}"
        if report.longrepr is not None:
            text = str(report.longrepr)
            if redact(text) != text:  # an agent put a secret in its error or answer
                report.longrepr = redact(text)
        if item.record is not None and not item.record_sent and (call.when == "call" or failed_setup):
            report.groundeval = item.record
            item.record_sent = True
        return report

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        """``partial`` (letter P) for partial credit; outcome names for classified errors."""
        record = getattr(report, "groundeval", None)
        if not isinstance(record, dict):
            return None
        outcome = record.get("outcome")
        if report.when == "call" and outcome == "partial":
            return "partial", "P", ("PARTIAL", {"yellow": True})
        if report.when == "setup" and report.failed and outcome not in (None, "error"):
            return "error", "E", (str(outcome).upper(), {"red": True})
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather case records on the controller and append each to the partial run file."""
        record = getattr(report, "groundeval", None)
        if self.is_worker or not isinstance(record, dict) or report.nodeid in self.records:
            return
        if record.get("outcome") == "auth_error":  # under xdist each worker may hit it once
            first = next((n for n, r in self.records.items() if r.get("outcome") == "auth_error"), None)
            if first is not None:
                report.longrepr = f"auth_error: the same rejected credentials as {first} (see above)"
        self.records[report.nodeid] = record
        self.writer.append(record)

    # -- end of run -------------------------------------------------------------------------
    def build_record(self, complete: bool = True, exit_status: int | None = None) -> RunRecord:
        """The run record from everything gathered so far.

        Args:
            complete: False when the run was interrupted or stopped early (``-x``, Ctrl-C,
                an auth error), so some selected cases never ran.
            exit_status: pytest's exit status, when known.
        """
        cases = ordered(list(self.records.values()))
        files = self.task.case_files(self.settings.data_dir)
        settings = self.settings
        return RunRecord(
            run_id=self.info.run_id,
            task=self.info.task,
            agent=self.info.agent,
            model=self.info.model,
            started_at=self.started.isoformat(),
            finished_at=datetime.now(UTC).isoformat(),
            duration_s=round(time.perf_counter() - self.t0, 3),
            complete=complete,
            exit_status=exit_status,
            settings={
                "agent_spec": settings.agent,
                "limit": settings.limit,
                "task_options": {k: v for k, v in settings.task_options.items() if hasattr(self.task, k)},
                "agent_options": settings.agent_options,
                "workers": self.config.getoption("numprocesses", default=None),
            },
            packages=package_versions(),
            data_dir=str(settings.data_dir),
            fixtures=[{"source": p.name, "sha256": sha256_file(p)} for p in files if p.is_file()],
            collection_errors=list(self.collection_errors.values()),
            cases=cases,  # type: ignore[arg-type]  # validated into CaseRecord by pydantic
            aggregate=summarize(self.task, cases),
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Flush the LangSmith stream (every process); write the run record (controller only)."""
        if self.stream is not None:
            self.stream.close()  # bounded wait; warns once on failure, never raises
        if self.is_worker or (not self.records and not self.collection_errors):
            return
        stopped = bool(session.shouldstop or session.shouldfail)
        broken = exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
        self.complete = not (stopped or broken)
        record = self.build_record(complete=self.complete, exit_status=int(exitstatus))
        self.record_path = self.writer.finish(record)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        """Print the groundeval table after pytest's own summary."""
        if self.is_worker or config.getoption("collectonly", default=False):
            return
        write_summary(terminalreporter, self)


def _sigterm_to_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"terminated by signal {signum}")


def _never_called(request: AgentRequest) -> str:
    raise AgentError("no agent is built under --collect-only")


class XdistHooks:
    """Hooks that exist only when pytest-xdist is installed (registered conditionally)."""

    def __init__(self, gsession: GroundevalSession) -> None:
        self.gsession = gsession

    def pytest_configure_node(self, node: Any) -> None:
        """Give every worker the controller's run id."""
        node.workerinput[RUN_ID_KEY] = self.gsession.info.run_id
