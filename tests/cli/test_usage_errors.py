"""Usage errors that cost nothing: the CLI finds them before pytest starts, with a suggestion."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from groundeval.agents.base import AGENTS, _load_target, check_task
from groundeval.cli import main as cli_main
from groundeval.cli.usage import did_you_mean, run_problem
from groundeval.errors import ConfigError
from groundeval.registry import builtin_agents, builtin_tasks
from groundeval.tasks import TASKS, task_class
from tests._paths import REPO

NO_KEY = {"PATH": "/usr/bin"}  # an environment with no ANTHROPIC_API_KEY and no PYTEST_ADDOPTS


@pytest.mark.parametrize(
    ("task", "given", "pairs", "expected"),
    [
        ("extractoin", {}, [], "--task='extractoin': unknown task (did you mean extraction?); choose one of: "),
        ("extraction", {"limit": "0"}, [], "--limit='0': must be 1 or more"),
        ("extraction", {"temperature": "hot"}, [], "--temperature='hot': not a number"),
        ("extraction", {"min-f1": "2"}, [], "--min-f1='2': must be between 0 and 1"),
        ("reconcile", {"min-f1": "0.5"}, [], "--min-f1 does not apply to the reconcile task; drop it"),
        ("extraction", {}, ["min_f=1"], "--option=min_f=1: the extraction task has no option 'min_f' (did you mean "
                                        "min_f1?)"),
        ("extraction", {}, ["min_f1"], "--option='min_f1': expected KEY=VALUE"),
        ("extraction", {"agent": "basline"}, [], "--agent='basline': unknown agent (did you mean baseline?)"),
        ("write", {"agent": "naive"}, [], "agent 'naive' answers the extraction task, not 'write'; agents that serve "
                                          "write: claude, openai-compatible, local, langgraph, langgraph-mcp, langgraph-rest, "
                                          "baseline-write"),
        ("extraction", {"agent": "claude"}, [], "ANTHROPIC_API_KEY is not set"),
        ("extraction", {}, [], "ANTHROPIC_API_KEY is not set"),  # the task's default agent
    ],
)
def test_usage_errors_are_found_before_pytest(
    tmp_path: Path, task: str, given: dict[str, str], pairs: list[str], expected: str
) -> None:
    problem = run_problem(task, given, pairs, env=NO_KEY, cwd=tmp_path)
    assert problem is not None and problem.startswith(expected), problem


def test_what_the_command_line_does_not_fix_is_left_to_the_plugin(tmp_path: Path) -> None:
    # an ini file may name the agent: the missing key of the default agent is not certain
    (tmp_path / "pytest.ini").write_text("[pytest]\ngroundeval_agent = baseline\n")
    assert run_problem("extraction", {}, [], env=NO_KEY, cwd=tmp_path) is None
    assert run_problem("extraction", {}, [], env={**NO_KEY, "PYTEST_ADDOPTS": "--groundeval-agent=naive"},
                       cwd=tmp_path.parent) is None
    assert run_problem("extraction", {}, [], ["-o", "groundeval_agent=naive"], env=NO_KEY, cwd=tmp_path.parent) is None
    # tasks and agents of your own are imported and checked by the plugin
    assert run_problem("mypkg.tasks:Mine", {"agent": "whatever"}, [], env=NO_KEY, cwd=tmp_path) is None
    assert run_problem("extraction", {"agent": "mypkg:agent"}, [], env=NO_KEY, cwd=tmp_path) is None
    assert run_problem("extraction", {"agent": "naive"}, [], env=NO_KEY, cwd=tmp_path) is None


def test_nothing_close_suggests_nothing() -> None:
    assert did_you_mean("deidentify", TASKS) == ""
    assert did_you_mean("reconcle", TASKS) == " (did you mean reconcile?)"


def test_the_cli_reports_a_usage_error_without_importing_pytest(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from groundeval.cli import main\n"
        "status = main(['--task', 'extractoin'])\n"
        "print(status, sorted(m for m in ('pytest', '_pytest', 'pydantic', 'anthropic') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                         cwd=tmp_path)
    assert out.stdout.strip() == "4 []"
    assert "ERROR: --task='extractoin': unknown task (did you mean extraction?)" in out.stderr


def test_what_the_declarations_say_without_importing_is_what_the_classes_decide() -> None:
    """The registry's facts (read by the CLI before pytest starts) are the classes' own."""
    tasks = builtin_tasks()
    for agent, entry in builtin_agents().items():
        target = _load_target(entry.target)
        serves = []
        for task in tasks:
            try:
                check_task(target, agent, task_class(task))
                serves.append(task)
            except ConfigError:
                pass
        assert sorted(serves) == sorted(entry.tasks), agent
        needs = getattr(target, "needs_extra", None)
        assert entry.needs_extra == (needs[0] if needs else None), agent
    for name, declared in tasks.items():
        cls = task_class(name)
        assert cls.default_agent == declared.default_agent, name
        assert set(declared.options) <= set(cls.options), name  # a flag only for an option the class reads
        assert declared.offline_agent is not None and name in builtin_agents()[declared.offline_agent].tasks
        assert _load_target(builtin_agents()[declared.offline_agent].target).model is None  # rule-based: no model


def test_an_agent_of_another_task_names_the_agents_that_serve_it() -> None:
    with pytest.raises(ConfigError, match="agents that serve reconcile: claude, openai-compatible, local, langgraph, "
                                          "langgraph-fhir, langgraph-mcp, langgraph-rest, baseline-reconcile, naive-reconcile"):
        check_task(_load_target(AGENTS["baseline"]), "baseline", task_class("reconcile"))


FIXTURES = REPO / "fixtures" / "extraction"


def test_an_eval_run_does_not_print_the_projects_testpaths(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests")
    (src,) = FIXTURES.glob("Johnie961_Connelly992_98ea7ef1*.json")
    data = pytester.mkdir("data")
    shutil.copy(src, data / src.name)
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=naive",
                                "--groundeval-data-dir=data", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    assert "testpaths:" not in result.stdout.str()
    plain = pytester.runpytest("-p", "no:randomly", "--co")  # the project's own run still says it
    assert "testpaths: tests" in plain.stdout.str()


def test_every_case_file_failing_collection_is_not_called_interrupted(pytester: pytest.Pytester) -> None:
    data = pytester.mkdir("data")
    (data / "a.json").write_text("{", encoding="utf-8")
    (data / "b.json").write_text("[1]", encoding="utf-8")
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=naive",
                                "--groundeval-data-dir=data", "--groundeval-out-dir=runs", "-p", "no:randomly")
    out = result.stdout.str()
    assert "INCOMPLETE" not in out and "interrupted;" not in out.lower()
    result.stdout.fnmatch_lines(["NOTHING SCORED: no case to run: all 2 case files failed collection*"])
    (path,) = (pytester.path / "runs").glob("*.json")
    assert json.loads(path.read_text())["stop_reason"] == "no case to run: all 2 case files failed collection"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("nope", "not JSON, line 1"),
        ("[1, 2]", "a JSON list, not an object"),
        ('{"a": 1}', "a JSON object without run_id or schema_version"),
        ('{"schema_version": 1, "run_id": "x"}', "schema_version 1; this groundeval reads schema_version 2"),
        ('{"schema_version": 2, "run_id": "x"}', "schema_version 2 but these fields are missing or malformed: agent, "),
    ],
)
def test_report_of_a_file_that_is_not_a_run_record_says_what_one_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, why: str
) -> None:
    path = tmp_path / "x.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        cli_main(["report", str(path), "-o", str(tmp_path / "r.html")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"x.json: not a groundeval run record ({why}" in err
    assert "A run record is the JSON file a groundeval run writes when it ends" in err
    assert "validation error" not in err and "pydantic" not in err
