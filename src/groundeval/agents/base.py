"""The agent extension point.

An agent is anything with ``name``, ``model`` and ``run(request) -> AgentResult``. Agents known by
name (groundeval's own and those other packages register under the entry-point group
``groundeval.agents``) are looked up in the registry (``groundeval.registry``; their modules import
lazily); a user's own agent can also be named ``module:attribute``, where the attribute is

* a class: instantiated with an ``AgentConfig`` if its constructor takes an argument, else with
  none;
* an object with a ``run`` method: used as it is;
* a plain callable ``fn(request) -> str | AgentResult``: wrapped in ``FunctionAgent``.

The current working directory is importable for ``module:attribute`` specs (as with
``python -m pytest`` or uvicorn), so ``my_agents.py`` next to where you run works.

Agents declare what they need from a task, not which tasks they serve: ``requires`` is a set of
capability names (``groundeval.tasks.base.CAPABILITIES``) that the task must ``provide``:

* ``"text_prompt"``: a single-call text agent (``claude``, ``openai-compatible``, a plain
  function) runs any task that renders a text prompt;
* ``"tools"``: a tool-using agent runs only a task that offers tools;
* ``"fhir_bundle"``: an agent serving the case's Bundle through read-only tools (``langgraph-fhir``)
  runs only a task whose context holds it.

An agent with no ``requires`` is taken to need ``{"text_prompt"}``. An agent built for one task's
answer format only (a rule-based baseline) may also declare ``tasks``, a set of task names.
Either mismatch is a configuration error naming what is missing, rather than a run of identical
failures.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.errors import ConfigError
from groundeval.registry import AGENT_GROUP, Targets, builtin_agents, builtin_tasks, load_target

__all__ = [
    "AGENTS", "FUNCTION_DECLARATIONS", "Agent", "AgentConfig", "FunctionAgent", "agent_requires", "agent_target",
    "calls_no_model", "check_record_access", "check_task", "check_tool_transport", "declared_provider_model",
    "for_task", "make_agent", "offline_hint", "preflight_agent", "serving_agents",
]

DEFAULT_REQUIRES: frozenset[str] = frozenset({"text_prompt"})
"""What an agent that declares no ``requires`` needs: a text prompt."""


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Settings handed to an agent's constructor.

    Attributes:
        model: Model id (``--groundeval-model``), or None for the agent's default.
        options: Other agent settings (``temperature``, ``max_tokens`` (tokens), ``timeout``
            (seconds), ``max_retries``, ``base_url``, ``n_ctx`` (tokens)); each agent reads the
            ones it knows.
        out_dir: The run's ``--groundeval-out-dir``, where an agent may write files of its own
            (the ``local`` agent's server log), or None outside a run. Not part of the cache key.
    """

    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    out_dir: Path | None = None


@runtime_checkable
class Agent(Protocol):
    """Produces an answer for one request.

    Attributes:
        name: Short name recorded in the run record and junit properties.
        model: Model id, or None for rule-based agents.
    """

    name: str
    model: str | None

    def run(self, request: AgentRequest) -> AgentResult | str:
        """Answer one request: an ``AgentResult``, or the answer text alone.

        Returning None (no answer) is a failed case, scored as an empty answer (``no_answer``).

        Raises:
            AgentError: The agent could not answer (an ``InfraError`` for API trouble).
        """
        ...

    # Optional: ``network_calls = False`` (a class attribute) declares that ``run`` never calls a
    # model or any other network API but the case's own FHIR server (a rule-based agent, replay, a
    # scripted agent): the first call of a process then does not go alone (``execution.threaded``),
    # since no key, model or API can be wrong, and ``--groundeval-max-cost`` has nothing to spend
    # (``calls_no_model``). Absent means True.
    # Optional: ``provider_model``: the ``models.policy.PolicyModel`` the agent calls through
    # groundeval's single-call layer, one call per case (``claude``, ``openai-compatible``), or None
    # (a rule-based agent, replay, an agent that calls its model through another library). The
    # spend limit prices its calls and ``--groundeval-batch`` sends them in batches
    # (``declared_provider_model``); a wrapper (the result cache, the FHIR or MCP serving) forwards
    # the wrapped agent's. Its class declares it without being built with a classmethod
    # ``model_spec(config) -> "provider/model"``.
    # Optional: ``warmup(self) -> None`` is called once per process before the first case is
    # timed (import SDKs, load catalogs), so ``latency_s`` measures the agent, not its imports.
    # A ``ConfigError`` from it (a server that cannot start) is a ``config_error`` that stops the run.
    # Optional: ``close(self) -> None`` is called once per process when the session ends (and on
    # Ctrl-C), to release what ``warmup`` started (the ``local`` agent's server).
    # Optional: a classmethod ``check_config(cls, config: AgentConfig) -> None`` that raises
    # ``ConfigError`` for settings no case can survive (a missing key), without building the
    # agent; the pytest-xdist controller, which never builds the agent, calls it before workers
    # start. Keep ``__init__`` cheap and do heavy work in ``warmup()``.


AGENTS: Mapping[str, str] = Targets(AGENT_GROUP)
"""Every registered agent: name -> ``module:attribute``, read lazily from the registry
(``groundeval.registry``; groundeval's own are declared in ``groundeval.registry.builtins``). A
built-in that takes an argument (``replay:RUN.json``) is named ``NAME:ARGUMENT``; its class builds
itself with ``from_argument(argument, config)``."""


def serving_agents(task: str) -> list[str]:
    """The built-in agents that serve the built-in ``task`` (none for another task), in declaration order.

    Read from the declarations (``AgentEntry.tasks``), without importing any agent or task.
    """
    return [name for name, entry in builtin_agents().items() if task in entry.tasks and name != "replay"]


REPLAY_HINT = ("run offline with a replay of an earlier run's answers: --groundeval-agent=replay:RUN.json "
               "(CLI: --agent replay:RUN.json), or an agent of your own")
"""The offline advice for a task that has no rule-based agent of groundeval's."""


def offline_hint(task: str | None = None) -> str:
    """How to run offline, for the missing-key messages (one line, no final stop).

    Read from the declarations (``TaskEntry.offline_agent``, ``AgentEntry.needs_extra``).

    Args:
        task: The run's task spec. A built-in task names its own rule-based agent; another task
            (an outside one, ``module:Class``) is pointed to a replay of an earlier run (``REPLAY_HINT``); None
            (a message made before the task is known) lists every built-in task's agent.

    Returns:
        E.g. ``run offline with the task's rule-based agent: --groundeval-agent=baseline-labs (CLI:
        --agent baseline-labs)``; with None ``run offline with the task's rule-based agent:
        --groundeval-agent=baseline (extraction), --groundeval-agent=baseline-write (write), ...
        (CLI: --agent ...); baseline and baseline-write need the healthchain extra: pip install
        'groundeval[healthchain]'`` (each flag whole, to copy).
    """
    offline = {name: entry.offline_agent for name, entry in builtin_tasks().items()
               if entry.offline_agent and (task is None or name == task)}
    if not offline:  # another package's task, or a built-in one without a rule-based agent
        return REPLAY_HINT
    by_extra: dict[str, list[str]] = {}
    for agent in offline.values():
        extra = builtin_agents()[agent].needs_extra
        if extra:
            by_extra.setdefault(extra, []).append(agent)
    needs = "".join(
        f"; {' and '.join(names)} need{'s' if len(names) == 1 else ''} the {extra} extra: "
        f"pip install 'groundeval[{extra}]'"
        for extra, names in by_extra.items()
    )
    if task is not None:
        (agent,) = offline.values()
        return f"run offline with the task's rule-based agent: --groundeval-agent={agent} (CLI: --agent {agent}){needs}"
    agents = ", ".join(f"--groundeval-agent={agent} ({name})" for name, agent in offline.items())
    return f"run offline with the task's rule-based agent: {agents} (CLI: --agent ...){needs}"


def for_task(message: str, task: str | None) -> str:
    """``message`` with the every-task ``offline_hint()`` it carries narrowed to ``task``'s own."""
    generic = offline_hint()
    return message.replace(generic, offline_hint(task)) if task is not None and generic in message else message


FUNCTION_DECLARATIONS = (
    "requires", "tasks", "max_concurrency", "thread_safe", "record_access", "network_calls", "tool_transport",
    "provider_model",
)
"""The ``Agent`` declarations a plain function may carry as attributes (``fn.network_calls = False``)."""


class FunctionAgent:
    """Adapts a plain function ``fn(request) -> str | AgentResult`` to the ``Agent`` protocol.

    The declarations set on the function as attributes (``FUNCTION_DECLARATIONS``, e.g.
    ``fn.thread_safe = True`` or ``fn.network_calls = False``) are the agent's, as the
    pytest-xdist controller already reads them from the function (``preflight_agent``).
    """

    def __init__(self, fn: Callable[[AgentRequest], str | AgentResult], name: str) -> None:
        self._fn = fn
        self.name = name
        self.model: str | None = None
        for attr in FUNCTION_DECLARATIONS:
            if getattr(fn, attr, None) is not None:
                setattr(self, attr, getattr(fn, attr))

    def run(self, request: AgentRequest) -> str | AgentResult:
        """Call the function and hand back what it returned.

        The runner (``execution.call.call_agent``) turns a str into ``AgentResult(text=...)``, None into
        no answer, and anything else into ``AgentReturnedWrongType``, for every agent alike.
        """
        return self._fn(request)


def _missing_extra(spec: str) -> Callable[[ImportError], ConfigError | None]:
    """An agent whose import failed for want of an extra's package: the one-line extra message."""

    def check(exc: ImportError) -> ConfigError | None:
        from groundeval.extras import EXTRAS, extra_missing_message

        missing = (exc.name or "").split(".")[0]
        for extra, modules in EXTRAS.items():
            if missing and (missing in modules or (extra == "write" and missing == "langchain_core")):
                return ConfigError(extra_missing_message(extra, missing, f"agent {spec!r}"))
        return None

    return check


def _load_target(spec: str, name: str | None = None) -> Any:
    """Import an agent's target (``package.module:attribute``); ``name`` is the registered name it was given by."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        from groundeval.errors import did_you_mean

        known = ", ".join(sorted(AGENTS))
        raise ConfigError(
            f"unknown agent {spec!r}{did_you_mean(spec, AGENTS)}; use one of: {known}, or 'package.module:attribute' "
            "for your own agent"
        )
    builtin = any(spec == entry.target for entry in builtin_agents().values())
    given = name if name is not None else spec
    return load_target(given, spec, kind="agent", builtin=builtin, import_failed=_missing_extra(given))


def _builtin_with_argument(spec: str) -> tuple[Any, str] | None:
    """``(class, argument)`` for a ``NAME:ARGUMENT`` spec of a built-in agent, else None.

    Raises:
        ConfigError: The built-in agent takes no argument.
    """
    name, sep, argument = spec.partition(":")
    if not sep or name not in AGENTS:
        return None
    target = _load_target(AGENTS[name])
    own = _own_module(name)
    if not callable(getattr(target, "from_argument", None)):
        if own is not None:
            return None  # the user's priors.py as priors:fn: loaded as package.module:attribute
        raise ConfigError(f"agent {name!r} takes no argument; use --groundeval-agent={name} (for a module of "
                          f"your own named {name}.py, make it importable: run from its folder or put it on PYTHONPATH)")
    if own is not None and not Path(argument).exists():
        raise ConfigError(f"--groundeval-agent={spec}: {name!r} names both groundeval's built-in agent and your module "
                          f"{own}; rename your module, or give the built-in an existing file ({name}:RUN.json)")
    return target, argument


def _own_module(name: str) -> str | None:
    """Where an importable top-level module ``name`` lives (a user's ``priors.py``), or None.

    The working directory counts, as it does when a user's ``module:attribute`` is loaded
    (``registry.load_target`` puts it on ``sys.path`` then).
    """
    import importlib.machinery
    import importlib.util

    try:
        found = importlib.util.find_spec(name) or importlib.machinery.PathFinder.find_spec(name, [os.getcwd()])
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    return str(found.origin or name)


def calls_no_model(agent: object) -> bool:
    """True when ``agent`` (an agent or its class) declares that it calls no model (``network_calls = False``)."""
    return getattr(agent, "network_calls", True) is False


def declared_provider_model(agent: object) -> Any:
    """The ``PolicyModel`` a built agent declares as ``provider_model``, or None (see ``Agent``)."""
    model = getattr(agent, "provider_model", None)
    if model is None:
        return None
    from groundeval.models.policy import PolicyModel

    return model if isinstance(model, PolicyModel) else None


def agent_target(spec: str) -> Any:
    """What ``spec`` names, imported but not built: a class, an instance or a function.

    For a built-in that takes an argument (``replay:RUN.json``), its class. The pytest-xdist
    controller, which builds no agent, reads an agent's class-level declarations from it.

    Raises:
        ConfigError: Unknown name, unimportable module or missing attribute.
    """
    with_argument = _builtin_with_argument(spec)
    if with_argument is not None:
        return with_argument[0]
    return _load_target(AGENTS.get(spec, spec), spec)


def agent_requires(agent: object) -> frozenset[str]:
    """The capabilities ``agent`` needs: its ``requires``, or ``{"text_prompt"}`` if it has none."""
    declared = getattr(agent, "requires", None)
    return frozenset(declared) if declared else DEFAULT_REQUIRES


def check_task(agent: Agent, spec: str, task: Any) -> None:
    """Refuse an agent that needs something the task does not provide.

    Args:
        agent: The built agent.
        spec: The agent spec as given (for the message).
        task: The task object (or its class, or a task spec string, resolved with ``task_class``).

    Raises:
        ConfigError: The agent requires a capability the task does not provide, or declares
            ``tasks`` without this task; the message names what is missing.
    """
    if isinstance(task, str):
        from groundeval.tasks import task_class

        task = task_class(task)
    name = str(getattr(task, "name", task))
    provides = getattr(task, "provides", None)
    if not isinstance(provides, frozenset | set):  # a class: the property is not evaluated
        tools = getattr(task, "tools", ())
        declared = ("tools",) if isinstance(tools, tuple | list) and tools else ()
        bundle = ("fhir_bundle", "tools") if getattr(task, "bundle_in_context", False) is True else ()
        provides = frozenset({"text_prompt", *declared, *bundle})
    serving = serving_agents(name)
    pick = f"agents that serve {name}: {', '.join(serving)}" if serving else f"pick an agent for {name!r}"
    missing = sorted(agent_requires(agent) - set(provides))
    if missing:
        offered = ", ".join(sorted(provides)) or "nothing"
        raise ConfigError(
            f"agent {spec!r} requires {', '.join(missing)}, which the {name} task does not provide "
            f"(it provides: {offered}); {pick}"
        )
    tasks = getattr(agent, "tasks", None)
    if tasks and name not in tasks:
        names = ", ".join(sorted(tasks))
        raise ConfigError(f"agent {spec!r} answers the {names} task, not {name!r}; {pick}")


def check_tool_transport(agent: object, spec: str, tools: str) -> None:
    """Refuse an agent whose way of reaching its tools (``tool_transport``) is not the run's ``--groundeval-tools``.

    An agent declares ``tool_transport = "inprocess"`` (it builds LangChain tools in its own process:
    ``langgraph``, ``langgraph-fhir``) or ``"mcp"`` (it reaches ``request.tool_server``:
    ``langgraph-mcp``); an agent that declares neither (a user's own, a text agent) runs either way.

    Args:
        agent: The agent, or its class.
        spec: The agent spec as given (for the message).
        tools: The run's ``--groundeval-tools`` (``inprocess`` or ``mcp``).

    Raises:
        ConfigError: The two disagree; the message names the fix.
    """
    transport = getattr(agent, "tool_transport", None)
    if tools == "mcp" and transport == "inprocess":
        raise ConfigError(
            f"agent {spec!r} calls the task's tools in its own process, so with --groundeval-tools=mcp the case's "
            "MCP server would trace none of its calls; use --groundeval-agent=langgraph-mcp, an agent of your own "
            "that reads request.tool_server, or drop --groundeval-tools=mcp"
        )
    if tools != "mcp" and transport == "mcp":
        raise ConfigError(
            f"agent {spec!r} reaches the case's tools over MCP; add --groundeval-tools=mcp (CLI: --tools mcp)"
        )


def check_record_access(agent: object, spec: str, fhir: str | None) -> None:
    """Refuse an agent whose way of reading the record (``record_access``) is not the run's ``--groundeval-fhir``.

    An agent declares ``record_access = "fhir"`` when it reads the case's record over the FHIR REST
    API at ``request.fhir`` (``langgraph-rest``, the ``*-rest`` baselines); any other agent reads it
    from the prompt or the task's in-process tools (``"file"``, the default). Under
    ``--groundeval-fhir`` the prompt holds no record, so an agent that does not read over FHIR
    would fail every case for a reason that is not its answer.

    Args:
        agent: The agent, or its class.
        spec: The agent spec as given (for the message).
        fhir: The run's ``--groundeval-fhir`` (``sandbox`` or a URL), or None.

    Raises:
        ConfigError: The two disagree; the message names the fix.
    """
    access = getattr(agent, "record_access", None) or "file"
    if fhir is not None and access != "fhir":
        raise ConfigError(
            f"agent {spec!r} does not read the record over FHIR (it declares no record_access = 'fhir'), and with "
            "--groundeval-fhir the prompt holds no record; use --groundeval-agent=langgraph-rest, a *-rest baseline "
            "(baseline-rest, baseline-labs-rest, baseline-reconcile-rest, baseline-summary-rest, baseline-write-rest), "
            "an agent of your own that reads request.fhir and sets record_access = 'fhir', or drop --groundeval-fhir"
        )
    if fhir is None and access == "fhir":
        raise ConfigError(
            f"agent {spec!r} reads the record over FHIR (record_access = 'fhir'); add --groundeval-fhir=sandbox "
            "(CLI: --fhir sandbox) or --groundeval-fhir=URL of your FHIR server"
        )


def make_agent(
    spec: str, config: AgentConfig | None = None, tools: str | None = None, fhir: str | None = None,
) -> Agent:
    """Build an agent from a built-in name or a ``module:attribute`` spec.

    Args:
        spec: ``"claude"``, ``"baseline"``, ``"naive"``, ``"replay:RUN.json"``, or ``"pkg.module:attr"``.
        config: Model and options for the agent.
        tools: The run's ``--groundeval-tools``: when given, ``check_tool_transport`` runs on the
            agent's class before it is built, so a transport mismatch is named before what the
            constructor checks (an API key).
        fhir: The run's ``--groundeval-fhir`` (``sandbox`` or a URL; None: no FHIR serving), checked
            with ``check_record_access`` on the agent's class when ``tools`` is given (a run's
            settings), also before the constructor: a reading mismatch is named before a missing key.

    Returns:
        A ready agent.

    Raises:
        ConfigError: Unknown name, unimportable module, missing attribute, an attribute that is
            not an agent, or an agent that refuses the config (e.g. no API key).
    """
    config = config or AgentConfig()
    with_argument = _builtin_with_argument(spec)
    agent: Any
    if with_argument is not None:
        built_from: Agent = with_argument[0].from_argument(with_argument[1], config)
        return built_from
    target = _load_target(AGENTS.get(spec, spec), spec)
    if tools is not None:
        check_tool_transport(target, spec, tools)
        check_record_access(target, spec, fhir)
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
        raise ConfigError(
            f"agent {spec!r} is a value of type {type(target).__name__}, not a class or callable; name an "
            "agent class, an instance with run(), or a function"
        )
    if not callable(getattr(agent, "run", None)):
        raise ConfigError(f"agent {spec!r} has no run(request) method")
    if not isinstance(getattr(agent, "name", None), str):
        agent.name = spec
    if not hasattr(agent, "model"):
        agent.model = config.model
    built: Agent = agent
    return built


def preflight_agent(
    spec: str, config: AgentConfig, task: Any, tools: str = "inprocess", fhir: str | None = None,
) -> str:
    """Check an agent spec without building the agent (for the pytest-xdist controller).

    Imports the target, applies ``check_task`` and ``check_tool_transport`` to it (its class-level
    ``requires``/``tasks``/``tool_transport``), and calls the class's optional ``check_config(config)``.

    Args:
        spec: The agent spec as given.
        config: The settings the agent would be built with.
        task: The task object (as for ``check_task``).
        tools: The run's ``--groundeval-tools`` (``inprocess`` or ``mcp``).
        fhir: The run's ``--groundeval-fhir`` (``check_record_access``), or None.

    Returns:
        The agent's name as it will be recorded (the class's ``name``, else the spec).

    Raises:
        ConfigError: Unknown name, unimportable module, missing attribute, an agent the task
            cannot serve, or ``check_config`` refused the settings.
    """
    if _builtin_with_argument(spec) is not None:  # cheap to build (replay reads one file): build and check it
        agent = make_agent(spec, config)
        check_task(agent, spec, task)
        return agent.name
    target = _load_target(AGENTS.get(spec, spec), spec)
    check_task(target, spec, task)
    check_tool_transport(target, spec, tools)
    check_record_access(target, spec, fhir)
    check = getattr(target, "check_config", None)
    if inspect.isclass(target) and callable(check):
        check(config)
    name = getattr(target, "name", None)
    return name if isinstance(name, str) else spec
