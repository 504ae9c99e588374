"""Usage checks that cost nothing: run by the ``groundeval`` CLI before pytest starts.

A usage error (an unknown task, a bad option value, an agent made for another task, a missing
API key) found here is reported in a fraction of a second; the same errors found by the plugin
cost pytest's start and every installed plugin's imports first. The plugin still checks
everything (a ``pytest --groundeval-task=...`` run never passes here); the messages agree.

Only what the command line fixes for certain is checked: values given on it (they win over the
ini file), and the agent's API key only when no ini file or ``PYTEST_ADDOPTS`` could name
another agent. Tasks and agents from outside groundeval (``module:Class``) are left to the
plugin, which imports them. Standard library and groundeval's option tables only: no pytest,
no task module, no SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from groundeval.errors import closest, did_you_mean

__all__ = ["INI_FILES", "closest", "did_you_mean", "run_problem"]

INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
"""Files pytest reads its ini options from (any of them may set ``groundeval_*`` values)."""


def _ini_may_set(start: Path, extra: Sequence[str], env: Mapping[str, str]) -> bool:
    """True when an ini file, ``PYTEST_ADDOPTS`` or pytest's own arguments may set groundeval options."""
    if "groundeval" in env.get("PYTEST_ADDOPTS", "") or any(
        "groundeval" in a or a in ("-c", "-o", "--override-ini", "--config-file", "--rootdir") or
        a.startswith(("-o", "--override-ini=", "--config-file=", "--rootdir=", "-c")) for a in extra
    ):
        return True
    for folder in (start, *start.parents):
        for name in INI_FILES:
            try:
                if "groundeval_" in (folder / name).read_text(errors="replace"):
                    return True
            except OSError:
                continue
    return False


def run_problem(
    task: str,
    given: Mapping[str, str],
    task_pairs: Sequence[str],
    pytest_extra: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> str | None:
    """The first usage error in a CLI run's options, or None when none is certain.

    Args:
        task: The task name as given (``--task``).
        given: CLI flag name without dashes (``"limit"``) -> raw value, for the options given.
        task_pairs: ``--option`` entries, ``KEY=VALUE`` each.
        pytest_extra: Arguments passed on to pytest after ``--``.
        env: Environment (default: ``os.environ``), for the API key and ``PYTEST_ADDOPTS``.
        cwd: Working directory, where pytest looks for its ini file (default: the current one).

    Returns:
        One line naming the flag, the value and the fix (the CLI prints it after ``ERROR:``).
    """
    from groundeval.plugin.option_table import OPTIONS
    from groundeval.registry import TASK_GROUP, builtin_tasks, registered

    env = os.environ if env is None else env
    for opt in OPTIONS:
        raw = given.get(opt.name)
        if raw is None or opt.flag or opt.name == "task":
            continue
        try:
            opt.value(raw)
        except ValueError as exc:
            return f"--{opt.name}={raw!r}: {exc}"
    if ":" in task:
        return None  # a task of your own: the plugin imports and checks it
    from groundeval.errors import ConfigError

    try:
        own = builtin_tasks()
    except ConfigError as exc:  # an install whose metadata declares no tasks
        return str(exc)
    if task not in own:
        known = registered(TASK_GROUP)
        if task in known:
            return None  # another package's task: checked by the plugin
        return (f"--task={task!r}: unknown task{did_you_mean(task, known)}; choose one of: "
                f"{', '.join(sorted(known))}, or package.module:Class for your own task")
    declared = {o.name: o for o in own[task].options}
    for opt in OPTIONS:
        if opt.scope == "task" and opt.name in given and opt.key not in declared:
            return f"--{opt.name} does not apply to the {task} task; drop it"
        if opt.scope == "task" and opt.name in given:
            try:
                declared[opt.key].value(given[opt.name])
            except ValueError as exc:
                return f"--{opt.name}={given[opt.name]!r}: {exc}"
    for entry in task_pairs:
        key, sep, raw = entry.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            return f"--option={entry!r}: expected KEY=VALUE, e.g. min_f1=0.8"
        if key not in declared:
            known_keys = ", ".join(sorted(declared)) or "none"
            return (f"--option={key}={raw}: the {task} task has no option {key!r}{did_you_mean(key, declared)} "
                    f"(its options: {known_keys})")
        try:
            declared[key].value(raw.strip())
        except ValueError as exc:
            return f"--option {key}={raw.strip()!r}: {exc} (option {key} of the {task} task)"
    return _agent_problem(task, given.get("agent"), given, pytest_extra, env, cwd or Path.cwd())


def _agent_problem(
    task: str, agent: str | None, given: Mapping[str, str], extra: Sequence[str], env: Mapping[str, str], cwd: Path
) -> str | None:
    """A built-in agent that does not serve the built-in ``task``, or whose key is missing."""
    from groundeval.agents.base import serving_agents
    from groundeval.registry import AGENT_GROUP, builtin_agents, builtin_tasks, registered

    if agent is None:
        if _ini_may_set(cwd, extra, env):
            return None
        agent = builtin_tasks()[task].default_agent
        if agent is None:
            return None
    name = agent.strip()
    if ":" in name:
        return None  # replay:RUN.json or an agent of your own: the plugin checks it
    known = registered(AGENT_GROUP)
    if name not in known:
        return (f"--agent={name!r}: unknown agent{did_you_mean(name, known)}; use one of: "
                f"{', '.join(sorted(known))}, or 'package.module:attribute' for your own agent")
    own = builtin_agents().get(name)
    if own is None:
        return None  # another package's agent: the plugin imports and checks it
    if task not in own.tasks:
        return (f"agent {name!r} answers the {', '.join(own.tasks)} task, not {task!r}; "
                f"agents that serve {task}: {', '.join(serving_agents(task))}")
    from groundeval.agents.base import AgentConfig, _load_target, for_task
    from groundeval.errors import ConfigError

    try:
        target = _load_target(own.target)
    except ConfigError as exc:  # an extra the agent needs is not installed
        return for_task(str(exc), task)
    if "tools" in given or not _ini_may_set(cwd, extra, env):  # the transport first: before the key
        from groundeval.agents.base import check_tool_transport

        try:
            check_tool_transport(target, name, given.get("tools") or "inprocess")
        except ConfigError as exc:
            return str(exc)
    if "fhir" in given or not _ini_may_set(cwd, extra, env):  # how it reads the record: before the key too
        from groundeval.agents.base import check_record_access

        try:
            check_record_access(target, name, given.get("fhir"))
        except ConfigError as exc:
            return str(exc)
    check = getattr(target, "check_config", None)
    if not callable(check):
        return None
    from groundeval.plugin.option_table import RUN_OPTIONS

    options = {o.key: o.value(given.get(o.name))
               for o in RUN_OPTIONS if o.scope == "agent" and o.key != "model"}
    try:
        check(AgentConfig(model=given.get("model"), options=options))
    except ConfigError as exc:
        return for_task(str(exc), task)
    except Exception:  # a check that needs converted options: the plugin runs it with them
        return None
    return None
