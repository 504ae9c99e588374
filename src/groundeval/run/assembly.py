"""What a run is made of before its first case, built from its settings without pytest.

``assemble`` does, in this order (the order the checks' messages come in): the run's prices
(``--groundeval-prices``), the task (served over FHIR with ``--groundeval-fhir``), the agent
(built and wrapped: replay checks, MCP or FHIR serving, the result cache: ``run.agent_setup``; on
the pytest-xdist controller only checked, never built), batch mode (``run.batch_mode``), the
spend limit's check (``run.spend_check``), the out-dir, cache and data-dir checks
(``run.preflight``, on the controlling process) and the baseline gate.

Every refusal is a ``ConfigError`` whose message names the option and the fix; a front end shows
it as its own usage error (the pytest plugin raises ``pytest.UsageError``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from groundeval.agents.base import (
    Agent,
    AgentConfig,
    agent_target,
    check_record_access,
    check_task,
    check_tool_transport,
    for_task,
    make_agent,
    preflight_agent,
)
from groundeval.errors import ConfigError
from groundeval.models import server_logs
from groundeval.models.retry import call_policy_options
from groundeval.run.agent_setup import is_replay, preflight_replay, prepare_agent
from groundeval.run.settings import Settings
from groundeval.tasks import make_task

if TYPE_CHECKING:
    from groundeval.models.batch import Batcher
    from groundeval.records.run_record import RunRecord
    from groundeval.reporting import BaselineGate
    from groundeval.tasks.base import Task

__all__ = ["Assembly", "Role", "assemble", "build_agent"]


@dataclass(frozen=True, slots=True)
class Role:
    """What this process does in the run.

    Attributes:
        distributed: The pytest-xdist controller of a run with workers: it checks the agent but
            builds none, and runs no case.
        runs_cases: This process runs cases (a serial run, or a worker), so it builds the agent.
        worker: A pytest-xdist worker: an agent that cannot be built is reported on its first
            case (``config_error``) rather than raised; the controller has checked the rest.
        workers: The run's xdist workers (each gets an equal share of ``--groundeval-max-cost``),
            or None when serial.
    """

    distributed: bool = False
    runs_cases: bool = True
    worker: bool = False
    workers: int | None = None


@dataclass(slots=True)
class Assembly:
    """A run's parts, built before its first case.

    Attributes:
        task: The task (wrapped in ``tasks.fhir_mode.FhirModeTask`` with ``--groundeval-fhir``).
        agent: The agent to run, wrapped, on a process that runs cases; else None.
        agent_problem: Why the agent could not be built on this worker (its first case reports it).
        agent_name: The agent's name as recorded.
        model: The model id recorded (the agent's, else ``--groundeval-model``).
        batcher: The batcher of the agent's model (``--groundeval-batch``), or None.
        baseline: The ``--groundeval-baseline`` run record, or None.
        baseline_gate: Its regression gate, or None.
    """

    task: Task
    agent: Agent | None = None
    agent_problem: ConfigError | None = None
    agent_name: str = ""
    model: str | None = None
    batcher: Batcher | None = None
    baseline: RunRecord | None = None
    baseline_gate: BaselineGate | None = None

    def close(self) -> list[str]:
        """Call the agent's and the task's optional ``close()``; return what each that raised said.

        The ``local`` agent stops its server; the summary task stops its judge's (a
        ``local/<gguf>`` judge), so no model server outlives the run.
        """
        problems: list[str] = []
        for owner, what in ((self.agent, "the agent"), (self.task, "the task")):
            close = getattr(owner, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception as exc:  # the run's results matter more than a failed cleanup
                problems.append(f"groundeval: {what}'s close() raised {type(exc).__name__}: {exc}")
        return problems


def assemble(settings: Settings, role: Role, show: Callable[[str], None] | None = None) -> Assembly:
    """Build the run's parts for this process (see the module docstring for the order).

    Args:
        settings: The run's settings (``settings.task`` must be set).
        role: What this process does in the run.
        show: Where a batch's progress goes while it is out (the status line), or None.

    Raises:
        ConfigError: A price file, task, agent, batch, spend-limit, directory or baseline problem;
            the message names the option and the fix.
    """
    if settings.task is None:
        raise ConfigError("no task: give --groundeval-task")
    _use_prices(settings)
    if settings.batch is not None and role.distributed:
        from groundeval.run.batch_mode import NO_XDIST

        raise ConfigError(NO_XDIST)
    server_logs.use_directory(settings.out_dir)  # a judge's or agent's model server logs in the out-dir
    try:
        # a task that calls a model itself (the summary judge) keeps the run's deadline and retries
        task = make_task(settings.task, settings.task_options, call_options=call_policy_options(settings.agent_options))
        if settings.fhir is not None:  # the record reaches the agent over FHIR REST (tasks.fhir_mode)
            from groundeval.tasks.fhir_mode import FhirModeTask

            task = cast("Task", FhirModeTask(task, settings.fhir))
        parts = Assembly(task=task, agent_name=settings.agent, model=settings.model)
        if role.distributed:
            parts.agent_name = preflight_agent(settings.agent, _config(settings), task, settings.tools, settings.fhir)
            preflight_replay(settings, task)  # a bad replay record: a usage error before workers start
        elif role.runs_cases:
            try:
                parts.agent = build_agent(settings, task)
            except ConfigError as exc:
                if not role.worker:
                    raise
                parts.agent_problem = exc  # reported as config_error on this worker's first case
            if settings.batch is not None and parts.agent is not None:
                from groundeval.run.batch_mode import start_batches

                parts.batcher = start_batches(parts.agent, settings.agent, settings.batch, show, task)
    except ConfigError as exc:
        raise ConfigError(for_task(str(exc), settings.task)) from None
    if parts.agent is not None:
        parts.agent_name, parts.model = parts.agent.name, parts.agent.model
    if settings.max_cost is not None:
        from groundeval.run.spend_check import check_max_cost

        target: Any = parts.agent
        if target is None:
            target = agent_target(settings.agent)
        check_max_cost(settings.max_cost, settings.agent, target, _config(settings))
    if not role.worker:
        from groundeval.run.preflight import check_cache_dir, check_data_dir_task, check_out_dir

        check_out_dir(settings.out_dir)
        check_cache_dir(settings.cache_dir)
        check_data_dir_task(task, settings.data_dir)
    if settings.baseline is not None:
        parts.baseline, parts.baseline_gate = _baseline(settings, task)
    return parts


def _config(settings: Settings) -> AgentConfig:
    return AgentConfig(model=settings.model, options=dict(settings.agent_options))


def _use_prices(settings: Settings) -> None:
    """Every process sets its own prices, before any call is priced or the limit checked.

    Raises:
        ConfigError: The ``--groundeval-prices`` file cannot be read.
    """
    from groundeval.models.pricing import use_prices

    use_prices({})
    if settings.prices is not None:
        from groundeval.models.price_file import PriceFileError, load_price_file

        try:
            use_prices(load_price_file(settings.prices))
        except PriceFileError as exc:
            raise ConfigError(f"--groundeval-prices: {exc}") from None


def _baseline(settings: Settings, task: Task) -> tuple[RunRecord, BaselineGate]:
    """The ``--groundeval-baseline`` record and its gate.

    Raises:
        ConfigError: The record cannot be read, or it is of another task.
    """
    from groundeval.reporting import BaselineGate, load_record

    assert settings.baseline is not None
    try:
        baseline = load_record(settings.baseline)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--groundeval-baseline: {exc}") from None
    if baseline.task != task.name:
        raise ConfigError(
            f"--groundeval-baseline={settings.baseline}: a run record of the {baseline.task} task; this "
            f"run is {task.name}: give a baseline run of the same task"
        )
    return baseline, BaselineGate(baseline)


def build_agent(settings: Settings, task: Any) -> Agent:
    """Build the agent on a process that runs cases (never on the xdist controller), wrapped for the run.

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
    if not is_replay(settings.agent):  # a replayed answer keeps the facts it was made with
        check_record_access(agent, settings.agent, settings.fhir)
    return prepare_agent(agent, settings, task)  # the MCP tool servers; replay checks; the cache
