"""The one registry of tasks and agents, and the one loader of ``module:attribute`` specs.

Every task and agent known by name is declared under an entry-point group, groundeval's own
exactly as another installed package declares its own, in its ``pyproject.toml``::

    [project.entry-points."groundeval.tasks"]
    conditions = "my_package.registry:conditions"          # a TaskEntry
    [project.entry-points."groundeval.agents"]
    conditions-baseline = "my_package.agents:BaselineAgent"  # or the class itself

An entry point names either a declaration (``TaskEntry`` / ``AgentEntry``: the target
``module:attribute`` plus the facts known without importing it) or the task class or agent
itself. groundeval's own declarations are in ``groundeval.registry.builtins``; a name groundeval
declares cannot be taken over by another package.

Entry points are read lazily (``importlib.metadata``, once per process, on the first lookup by
name); no task or agent module is imported until it is used, so the messages that list the
agents serving a task, a task's default agent or its offline agent cost no import of any task
or agent. Those facts are read from groundeval's own declarations only (another package's entry
point may name a class, whose facts are known only by importing it).

Tasks and agents are named the same three ways: a registered name, or ``package.module:attribute``.
For a spec that is not groundeval's own, the current working directory is importable (as with
``python -m pytest`` or uvicorn), so ``my_agents.py`` next to where you run works, in every
pytest-xdist worker too.

Standard library only (like ``groundeval.options``): the plugin and the CLI read it before any
task, agent or SDK is imported. The plugin's option table imports it in every pytest process
(through ``groundeval.registry.builtins``), so it imports ``importlib.metadata`` and
``groundeval.errors`` only when a name is looked up.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from groundeval.errors import ConfigError
    from groundeval.options import Option

__all__ = [
    "AGENT_GROUP",
    "TASK_GROUP",
    "AgentEntry",
    "Targets",
    "TaskEntry",
    "builtin_agents",
    "builtin_tasks",
    "clear_cache",
    "load_target",
    "registered",
]

TASK_GROUP = "groundeval.tasks"
"""Entry-point group of tasks: name -> a ``TaskEntry`` or a task class (``module:attribute``)."""

AGENT_GROUP = "groundeval.agents"
"""Entry-point group of agents: name -> an ``AgentEntry`` or an agent (``module:attribute``)."""

DISTRIBUTION = "groundeval"
"""The distribution whose entry points are the built-ins."""


@dataclass(frozen=True, slots=True)
class TaskEntry:
    """A task declared by name (``--groundeval-task=<name>``).

    Attributes:
        target: ``package.module:Class``, the task class; imported only when the task is used.
        default_agent: The agent used when none is given (the class's ``default_agent``), known
            without importing the task, for the checks the CLI makes before pytest starts.
        offline_agent: The agent that runs the task with no model, key or network (a rule-based
            baseline), named in the message a missing API key prints.
        options: Options that get first-class flags ``--groundeval-<name>`` (groundeval's own
            tasks only; the task class declares them in its ``options`` too). Every declared
            option can be given as ``--groundeval-option=KEY=VALUE``.
        about: What the task asks, in a few words, for the help and the docs' lists.
        bundle_in_context: The task's context holds the case's FHIR Bundle (the class's
            ``bundle_in_context``), so the agents that need one (``langgraph-fhir``) are listed as
            serving it without importing the task.
    """

    target: str
    default_agent: str | None = None
    offline_agent: str | None = None
    options: tuple[Option, ...] = ()
    about: str = ""
    bundle_in_context: bool = False


@dataclass(frozen=True, slots=True)
class AgentEntry:
    """An agent declared by name (``--groundeval-agent=<name>``).

    Attributes:
        target: ``package.module:attribute``, the agent class, instance or function; imported only
            when the agent is used.
        tasks: The tasks it serves (what ``agents.base.check_task`` decides from the class's
            ``requires``/``tasks``), for the messages that name the agents serving a task.
        needs_extra: The extra its import needs (``"healthchain"``), named in the missing-key
            message that suggests it as a task's offline agent.
        about: What the agent is, in a few words, for the help and the docs' lists.
    """

    target: str
    tasks: tuple[str, ...] = ()
    needs_extra: str | None = None
    about: str = ""


@cache
def _points(group: str) -> tuple[tuple[EntryPoint, ...], tuple[EntryPoint, ...]]:
    """``(groundeval's own, every other package's)`` entry points of ``group``.

    ``importlib.metadata`` is imported here, not at the top: the CLI's ``--help`` and the plugin's
    option table import this module and never look a name up.
    """
    from importlib.metadata import PackageNotFoundError, distribution, entry_points

    try:
        own = tuple(distribution(DISTRIBUTION).entry_points.select(group=group))
    except PackageNotFoundError:
        own = ()
    return own, tuple(p for p in entry_points(group=group) if p not in own)


def registered(group: str) -> dict[str, str]:
    """Every name registered under ``group``: name -> entry-point value, groundeval's own first (in declaration order).

    Another package's entry point with a name groundeval declares is left out (a built-in name
    cannot be taken over).

    Raises:
        ConfigError: groundeval's installed metadata declares none (a stale install).
    """
    own, others = _points(group)
    values = {p.name: p.value for p in own}
    names = {name: values[name] for name in (builtin_tasks() if group == TASK_GROUP else builtin_agents())}
    for point in others:
        names.setdefault(point.name, point.value)
    return names


def _builtins(group: str, kind: type[Any]) -> dict[str, Any]:
    own, _ = _points(group)
    if not own:
        from groundeval.errors import ConfigError

        raise ConfigError(
            f"groundeval's installed metadata declares no {group!r} entry points (an install older than its "
            "pyproject.toml); reinstall it: uv sync, or pip install -e ."
        )
    loaded: dict[str, Any] = {}
    for point in own:
        entry = point.load()
        if not isinstance(entry, kind):
            raise TypeError(f"entry point {point.name} = {point.value!r} is not a {kind.__name__}")
        loaded[point.name] = entry
    # installed metadata lists entry points alphabetically; messages list them as the module declares them
    order = {id(value): i for i, value in enumerate(vars(sys.modules[own[0].module]).values())}
    return dict(sorted(loaded.items(), key=lambda item: order.get(id(item[1]), len(order))))


@cache
def builtin_tasks() -> dict[str, TaskEntry]:
    """Groundeval's own tasks: name -> declaration, in declaration order (imports no task).

    Raises:
        ConfigError: The installed metadata declares none (a stale install; the message says to reinstall).
    """
    return _builtins(TASK_GROUP, TaskEntry)


@cache
def builtin_agents() -> dict[str, AgentEntry]:
    """Groundeval's own agents: name -> declaration, in declaration order (imports no agent).

    Raises:
        ConfigError: The installed metadata declares none (a stale install; the message says to reinstall).
    """
    return _builtins(AGENT_GROUP, AgentEntry)


def clear_cache() -> None:
    """Forget the entry points read so far (after installing a package in the same process, and in tests)."""
    _points.cache_clear()
    builtin_tasks.cache_clear()
    builtin_agents.cache_clear()


class Targets(Mapping[str, str]):
    """A read-only view of a group: registered name -> target (``module:attribute``), read lazily.

    groundeval's own names map to their declared target; another package's to its entry-point
    value (a declaration or the target itself; ``load_target`` follows either).
    """

    def __init__(self, group: str) -> None:
        self.group = group

    def _names(self) -> dict[str, str]:
        own = builtin_tasks() if self.group == TASK_GROUP else builtin_agents()
        return {name: own[name].target if name in own else value for name, value in registered(self.group).items()}

    def __getitem__(self, name: str) -> str:
        return self._names()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def _where_raised(exc: BaseException) -> str:
    """``FILE:LINE`` where ``exc`` was raised: a syntax error's own place, else the deepest frame outside importlib."""
    import traceback

    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<frozen")]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "an unknown place"


def load_target(
    spec: str, target: str, *, kind: str, builtin: bool,
    import_failed: Callable[[ImportError], ConfigError | None] | None = None,
) -> Any:
    """Import ``target`` (``package.module:attribute``, dotted attributes allowed) and return the attribute.

    A ``TaskEntry`` or ``AgentEntry`` found there is followed to its own target.

    Args:
        spec: What the user wrote (``--groundeval-agent=...``), for messages.
        target: ``package.module:attribute``.
        kind: ``"task"`` or ``"agent"``, for messages.
        builtin: True for groundeval's own targets (the working directory is then not put on ``sys.path``).
        import_failed: Turns an ``ImportError`` into a more precise ``ConfigError`` (a missing extra),
            or returns None for the generic message.

    Raises:
        ConfigError: The module cannot be imported (naming it, with the fix), raised while being
            imported (naming its file and line), or has no such attribute.
    """
    from groundeval.errors import ConfigError

    module_name, _, attr = target.partition(":")
    if not builtin and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        precise = import_failed(exc) if import_failed is not None else None
        if precise is not None:
            raise precise from exc
        missing = exc.name or ""
        if missing and missing != module_name and not module_name.startswith(missing + "."):
            # the module was found; something it imports was not
            raise ConfigError(
                f"{kind} {spec!r}: {module_name!r} was found but importing it failed ({exc}); install "
                f"{missing!r} or fix that import"
            ) from exc
        if spec != target and ":" not in spec:  # a name an installed package registers (entry point)
            raise ConfigError(
                f"{kind} {spec!r} is registered by an installed package as {target!r}, which cannot be imported "
                f"({exc}); reinstall or repair that package"
            ) from exc
        raise ConfigError(
            f"{kind} {spec!r}: cannot import {module_name!r} ({exc}); run from the directory that holds it, "
            "or add that directory to PYTHONPATH"
        ) from exc
    except Exception as exc:  # the module itself raised (or does not parse) while being imported
        raise ConfigError(
            f"{kind} {spec!r}: importing {module_name!r} raised {type(exc).__name__}: "
            f"{exc.msg if isinstance(exc, SyntaxError) else exc} "
            f"(at {_where_raised(exc)}); fix the module there"
        ) from exc
    found: Any = module
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigError(f"{kind} {spec!r}: {module_name!r} has no attribute {attr!r}") from None
    if isinstance(found, TaskEntry | AgentEntry):
        return load_target(spec, found.target, kind=kind, builtin=builtin, import_failed=import_failed)
    return found
