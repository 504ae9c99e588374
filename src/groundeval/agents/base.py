"""The agent extension point.

An agent is anything with ``name``, ``model`` and ``run(request) -> AgentResult``. Built-in agents
are looked up by name in ``AGENTS`` (their modules import lazily); a user's own agent is named
``module:attribute``, where the attribute is

* a class: instantiated with an ``AgentConfig`` if its constructor takes an argument, else with
  none;
* an object with a ``run`` method: used as it is;
* a plain callable ``fn(request) -> str | AgentResult``: wrapped in ``FunctionAgent``.

The current working directory is importable for ``module:attribute`` specs (as with
``python -m pytest`` or uvicorn), so ``my_agents.py`` next to where you run works.

An agent may declare ``tasks`` (a set of task names); asking it to run another task is a
configuration error rather than a run of identical failures.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from groundeval.errors import AgentReturnedWrongType, ConfigError
from groundeval.records import AgentRequest, AgentResult

__all__ = ["AGENTS", "Agent", "AgentConfig", "FunctionAgent", "check_task", "make_agent", "preflight_agent"]


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Settings handed to an agent's constructor.

    Attributes:
        model: Model id (``--groundeval-model``), or None for the agent's default.
        options: Other agent settings (``temperature``, ``max_tokens`` (tokens), ``timeout``
            (seconds), ``max_retries``, ``base_url``); each agent reads the ones it knows.
    """

    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Agent(Protocol):
    """Produces an answer for one request.

    Attributes:
        name: Short name recorded in the run record and junit properties.
        model: Model id, or None for rule-based agents.
    """

    name: str
    model: str | None

    def run(self, request: AgentRequest) -> AgentResult:
        """Answer one request.

        Raises:
            AgentError: The agent could not answer (an ``InfraError`` for API trouble).
        """
        ...

    # Optional: ``warmup(self) -> None`` is called once per process before the first case is
    # timed (import SDKs, load catalogs), so ``latency_s`` measures the agent, not its imports.
    # Optional: a classmethod ``check_config(cls, config: AgentConfig) -> None`` that raises
    # ``ConfigError`` for settings no case can survive (a missing key), without building the
    # agent; the pytest-xdist controller, which never builds the agent, calls it before workers
    # start. Keep ``__init__`` cheap and do heavy work in ``warmup()``.


AGENTS: dict[str, str] = {
    "claude": "groundeval.agents.claude:ClaudeAgent",
    "openai-compatible": "groundeval.agents.openai_compat:OpenAICompatibleAgent",
    "baseline": "groundeval.agents.baseline:BaselineExtractionAgent",
    "naive": "groundeval.agents.baseline:NaiveExtractionAgent",
    "langgraph": "groundeval.agents.langgraph_agent:LangGraphWriteAgent",
    "baseline-write": "groundeval.agents.baseline_write:BaselineWriteAgent",
}
"""Built-in agent name -> ``module:class``."""


class FunctionAgent:
    """Adapts a plain function ``fn(request) -> str | AgentResult`` to the ``Agent`` protocol."""

    def __init__(self, fn: Callable[[AgentRequest], str | AgentResult], name: str) -> None:
        self._fn = fn
        self.name = name
        self.model: str | None = None

    def run(self, request: AgentRequest) -> AgentResult:
        """Call the function; a string answer becomes ``AgentResult(text=...)``.

        Raises:
            AgentReturnedWrongType: The function returned something other than a str or an AgentResult.
        """
        out = self._fn(request)
        if isinstance(out, AgentResult):
            return out
        if isinstance(out, str):
            return AgentResult(text=out)
        raise AgentReturnedWrongType(
            f"{request.case_id}: agent {self.name!r} returned {type(out).__name__}; "
            "return a str or a groundeval.AgentResult"
        )


def _load_target(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        known = ", ".join(sorted(AGENTS))
        raise ConfigError(
            f"unknown agent {spec!r}; use one of: {known}, or 'package.module:attribute' "
            "for your own agent"
        )
    cwd = os.getcwd()
    if spec not in AGENTS.values() and cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"agent {spec!r}: cannot import {module_name!r} ({exc}); run from the directory that "
            "holds it, or add that directory to PYTHONPATH"
        ) from exc
    target = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(f"agent {spec!r}: {module_name!r} has no attribute {attr!r}") from None
    return target


def check_task(agent: Agent, spec: str, task: str) -> None:
    """Refuse an agent that declares ``tasks`` without ``task``.

    Raises:
        ConfigError: The agent is built for other tasks; the message names them.
    """
    tasks = getattr(agent, "tasks", None)
    if tasks and task not in tasks:
        names = ", ".join(sorted(tasks))
        raise ConfigError(f"agent {spec!r} answers the {names} task, not {task!r}; pick an agent for {task!r}")


def make_agent(spec: str, config: AgentConfig | None = None) -> Agent:
    """Build an agent from a built-in name or a ``module:attribute`` spec.

    Args:
        spec: ``"claude"``, ``"baseline"``, ``"naive"``, or ``"pkg.module:attr"``.
        config: Model and options for the agent.

    Returns:
        A ready agent.

    Raises:
        ConfigError: Unknown name, unimportable module, missing attribute, an attribute that is
            not an agent, or an agent that refuses the config (e.g. no API key).
    """
    config = config or AgentConfig()
    target = _load_target(AGENTS.get(spec, spec))
    agent: Any
    if inspect.isclass(target):
        params = [
            p for p in inspect.signature(target).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        factory: Any = target
        agent = factory(config) if params else factory()
    elif callable(getattr(target, "run", None)):
        agent = target
    elif callable(target):
        agent = FunctionAgent(target, name=spec)
    else:
        raise ConfigError(f"agent {spec!r} is a {type(target).__name__}, not a class or callable")
    if not callable(getattr(agent, "run", None)):
        raise ConfigError(f"agent {spec!r} has no run(request) method")
    if not isinstance(getattr(agent, "name", None), str):
        agent.name = spec
    if not hasattr(agent, "model"):
        agent.model = config.model
    built: Agent = agent
    return built


def preflight_agent(spec: str, config: AgentConfig, task: str) -> str:
    """Check an agent spec without building the agent (for the pytest-xdist controller).

    Imports the target, refuses a class that declares ``tasks`` without ``task``, and calls the
    class's optional ``check_config(config)``.

    Returns:
        The agent's name as it will be recorded (the class's ``name``, else the spec).

    Raises:
        ConfigError: Unknown name, unimportable module, missing attribute, another task's agent,
            or ``check_config`` refused the settings.
    """
    target = _load_target(AGENTS.get(spec, spec))
    tasks = getattr(target, "tasks", None)
    if tasks and task not in tasks:
        names = ", ".join(sorted(tasks))
        raise ConfigError(f"agent {spec!r} answers the {names} task, not {task!r}; pick an agent for {task!r}")
    check = getattr(target, "check_config", None)
    if inspect.isclass(target) and callable(check):
        check(config)
    name = getattr(target, "name", None)
    return name if isinstance(name, str) else spec
