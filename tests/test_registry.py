"""The registry: another installed package registers a task and an agent the way groundeval registers its own."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoints
from pathlib import Path
from types import SimpleNamespace

import pytest

from groundeval import registry
from groundeval.agents.base import AGENTS, make_agent, serving_agents
from groundeval.cli.usage import run_problem
from groundeval.errors import ConfigError
from groundeval.tasks import available_tasks, make_task, task_class
from groundeval.tasks.extraction.task import ExtractionTask

ACME = '''
from typing import ClassVar

from groundeval import BaseTask, Case, CodeSetScorer, TaskOption, unit_interval
from groundeval.registry import AgentEntry, TaskEntry


class AcmeTask(BaseTask):
    name: ClassVar[str] = "acme"
    default_agent: ClassVar[str] = "acme-echo"
    options: ClassVar[tuple[TaskOption, ...]] = (TaskOption("min_f1", unit_interval, 1.0, "F1 to pass.", "X"),)
    scorer = CodeSetScorer()

    def load_case(self, path):
        return Case(case_id=path.stem, source=path, sha256="", data={})


class HijackTask(AcmeTask):
    name: ClassVar[str] = "extraction"


def echo(request):
    return request.prompt.user


acme = TaskEntry("acme_evals:AcmeTask", default_agent="acme-echo")
acme_echo = AgentEntry("acme_evals:echo", tasks=("acme",))
'''

ENTRY_POINTS = """\
[groundeval.tasks]
acme = acme_evals:acme
acme-short = acme_evals:AcmeTask
extraction = acme_evals:HijackTask

[groundeval.agents]
acme-echo = acme_evals:acme_echo
acme-short = acme_evals:echo
"""


@pytest.fixture
def acme_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A package ``acme-evals`` installed in ``tmp_path``: a module and its dist-info with entry points."""
    (tmp_path / "acme_evals.py").write_text(ACME, encoding="utf-8")
    info = tmp_path / "acme_evals-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-evals\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.clear_cache()
    yield
    registry.clear_cache()
    sys.modules.pop("acme_evals", None)


@pytest.mark.usefixtures("acme_installed")
def test_an_installed_package_registers_a_task_and_an_agent_by_name() -> None:
    acme = sys.modules.get("acme_evals")
    assert acme is None  # listing names imports nothing
    assert list(available_tasks())[:4] == ["extraction", "write", "reconcile", "labs"]
    assert {"acme", "acme-short"} <= set(available_tasks()) and "acme_evals" not in sys.modules
    cls = task_class("acme")  # a TaskEntry, followed to its class
    assert cls.__name__ == "AcmeTask" and task_class("acme-short") is cls
    assert make_task("acme", {"min_f1": "0.5"}).min_f1 == 0.5  # type: ignore[attr-defined]
    assert task_class("extraction") is ExtractionTask  # a built-in name cannot be taken over
    assert {"acme-echo", "acme-short"} <= set(AGENTS)
    agent = make_agent("acme-echo")  # an AgentEntry naming a function
    assert agent.name == "acme-echo" and make_agent("acme-short").name == "acme-short"
    assert "acme-echo" not in serving_agents("acme")  # the no-import listings name groundeval's own only
    # the CLI leaves another package's task and agent to the plugin, and still refuses a typo
    assert run_problem("acme", {"agent": "acme-echo"}, [], env={"PATH": "/usr/bin"}) is None
    assert run_problem("extraction", {"agent": "acme-echo"}, [], env={"PATH": "/usr/bin"}) is None
    problem = run_problem("extraction", {"agent": "acme-ecoh"}, [], env={"PATH": "/usr/bin"})
    assert problem is not None and problem.startswith("--agent='acme-ecoh': unknown agent (did you mean acme-echo?)")


def test_a_stale_install_without_groundevals_entry_points_says_to_reinstall(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: SimpleNamespace(entry_points=EntryPoints(())))
    registry.clear_cache()
    try:
        with pytest.raises(ConfigError, match=r"declares no 'groundeval.tasks' entry points .*reinstall it: uv sync"):
            available_tasks()
        problem = run_problem("extraction", {}, [], env={"PATH": "/usr/bin"})  # the CLI says it in one line
        assert problem is not None and "reinstall it: uv sync, or pip install -e ." in problem
    finally:
        monkeypatch.undo()
        registry.clear_cache()
    assert "extraction" in available_tasks()


@pytest.mark.usefixtures("acme_installed")
def test_an_agent_whose_package_or_whose_import_is_broken_is_named_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "acme_evals.py").unlink()  # the package's module is gone: its registration is stale
    with pytest.raises(ConfigError, match=r"^agent 'acme-echo' is registered by an installed package as "
                                          r"'acme_evals:acme_echo', which cannot be imported .*; reinstall or repair"):
        make_agent("acme-echo")
    (tmp_path / "acme_evals.py").write_text("import acme_helpers_not_installed\n" + ACME, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^agent 'acme-echo': 'acme_evals' was found but importing it failed "
                                          r".*; install 'acme_helpers_not_installed' or fix that import"):
        make_agent("acme-echo")


def test_every_list_of_tasks_and_agents_comes_from_the_declarations() -> None:
    """issue 32: help, CLI help and docs name every built-in task and agent, each with its ``about``, from one source."""
    from groundeval.cli import build_parser
    from groundeval.plugin.option_table import OPTIONS
    from groundeval.registry import builtins
    from groundeval.registry.listing import tables_markdown
    from tests._paths import REPO

    registry.clear_cache()
    tasks, agents = registry.builtin_tasks(), registry.builtin_agents()
    # the names the help reads without importlib.metadata are the names pyproject.toml registers, in order
    assert [n for n, _ in builtins.declared(registry.TaskEntry)] == list(tasks)
    assert [n for n, _ in builtins.declared(registry.AgentEntry)] == list(agents)
    helps = {opt.name: opt.help for opt in OPTIONS}
    cli_help = re.sub(r"-\s+", "-", " ".join(build_parser().format_help().split()))  # argparse breaks at hyphens
    for name, entry in [*tasks.items(), *agents.items()]:
        assert entry.about, f"{name} has no about"
        listed = helps["task"] if name in tasks else helps["agent"]
        assert f"{name} (" in listed and entry.about in listed, name
    for name, task in tasks.items():
        assert f"{name} ({task.about})" in cli_help, name
        assert task.default_agent in helps["agent"].rpartition("Default:")[2]
    assert tables_markdown() in (REPO / "docs" / "reference" / "options.md").read_text(encoding="utf-8")


def test_the_declared_facts_of_each_task_are_its_classs() -> None:
    """A declaration's facts (read without importing the task) agree with the class they describe.

    The agents serving every task, those serving the tasks with a Bundle in their context, and the
    tasks the ``--groundeval-fhir`` messages name are derived from these declarations (``builtins.ANY_TASK``, ``builtins.BUNDLE_TASKS``), not listed.
    """
    from groundeval.registry import builtins
    from groundeval.tasks import task_class
    from groundeval.tasks.fhir_mode import serves_over_fhir

    registry.clear_cache()
    for name, entry in registry.builtin_tasks().items():
        cls = task_class(name)
        assert serves_over_fhir(cls), name  # the --groundeval-fhir messages name every built-in task
        assert entry.default_agent == cls.default_agent, name
        assert entry.bundle_in_context == cls.bundle_in_context, name
    assert tuple(registry.builtin_tasks()) == builtins.ANY_TASK
    assert tuple(n for n, e in registry.builtin_tasks().items() if e.bundle_in_context) == builtins.BUNDLE_TASKS


def test_the_tasks_each_agent_is_declared_to_serve_are_the_tasks_its_class_accepts() -> None:
    """"Agents that serve <task>" (read from the declarations, no import) is what ``check_task`` decides from the class."""
    from groundeval.agents.base import _load_target, check_task
    from groundeval.errors import ConfigError
    from groundeval.tasks import task_class

    registry.clear_cache()
    tasks = {name: task_class(name) for name in registry.builtin_tasks()}
    for name, entry in registry.builtin_agents().items():
        cls = _load_target(entry.target, name)
        accepted = []
        for task_name, task in tasks.items():
            try:
                check_task(cls, name, task)
            except ConfigError:
                continue
            accepted.append(task_name)
        assert tuple(accepted) == entry.tasks, name
