"""The built-in tasks and agents as Markdown tables, for the docs (imported only when rendered).

The same declarations (``groundeval.registry.builtins``) give the ``--groundeval-task`` and
``--groundeval-agent`` help, the CLI's ``--help`` and these tables, so no list is kept by hand;
``tests/test_registry.py`` checks that ``docs/reference/options.md`` holds ``tables_markdown()``.
"""

from __future__ import annotations

from groundeval.registry import AgentEntry, TaskEntry, builtins

__all__ = ["tables_markdown"]


def tables_markdown() -> str:
    """The tasks table (name, default agent, offline agent, about) and the agents table (name, tasks, about)."""
    tasks = [name for name, _ in builtins.declared(TaskEntry)]
    lines = ["| Task | Default agent | Offline agent | What it asks |", "| --- | --- | --- | --- |"]
    for name, task in builtins.declared(TaskEntry):
        lines.append(f"| `{name}` | `{task.default_agent}` | `{task.offline_agent}` | {task.about} |")
    lines += ["", "| Agent | Tasks | What it is |", "| --- | --- | --- |"]
    for name, agent in builtins.declared(AgentEntry):
        served = "every task" if list(agent.tasks) == tasks else ", ".join(f"`{t}`" for t in agent.tasks)
        extra = f" (needs the `{agent.needs_extra}` extra)" if agent.needs_extra else ""
        lines.append(f"| `{name}` | {served} | {agent.about}{extra} |")
    return "\n".join(lines) + "\n"
