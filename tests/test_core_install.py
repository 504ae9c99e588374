"""A plain install has no anthropic, openai or healthchain: what needs them is one line, before any case.

A missing extra is simulated by replacing ``groundeval.extras.has_module`` (what every
``require_extra`` asks), plus, for the paths that must work without them, an import of
HealthChain that fails; the real core-only install is checked end to end by
``scripts/check_core_install.py`` (it builds a venv, so it is not a test of this suite).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import groundeval.extras
from groundeval import _healthchain
from groundeval.agent_io import AgentRequest
from groundeval.agents.base import AgentConfig, make_agent, preflight_agent
from groundeval.datasets import default_data_dir
from groundeval.errors import ConfigError
from groundeval.extras import extra_missing_message
from groundeval.tasks import make_task

OPTIONAL = ("anthropic", "openai", "healthchain")
"""What the base install no longer brings (each brings anyio, and anyio's pytest plugin)."""

OPENAI = AgentConfig(model="m", options={"base_url": "http://127.0.0.1:9/v1"})


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``has_module`` report ``modules`` (top-level names) as not installed."""
    real: Callable[[str], bool] = groundeval.extras.has_module
    monkeypatch.setattr(groundeval.extras, "has_module", lambda m: m.partition(".")[0] not in modules and real(m))


def _no_healthchain_import(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str) -> object:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(_healthchain, "module", refuse)


NEEDS = [
    ("claude", AgentConfig(), "anthropic", "claude"),
    ("openai-compatible", OPENAI, "openai", "openai"),
    ("baseline", AgentConfig(), "healthchain", "healthchain"),
    ("naive", AgentConfig(), "healthchain", "healthchain"),
    ("baseline-write", AgentConfig(), "healthchain", "healthchain"),
    ("langgraph", AgentConfig(), "healthchain", "write"),
    ("langgraph", AgentConfig(), "langchain", "write"),
    ("langgraph-fhir", AgentConfig(), "langgraph", "write"),
]
"""(agent, config, the module that is missing, the extra the one-line error names)."""


@pytest.mark.parametrize(("spec", "config", "missing", "extra"), NEEDS)
def test_an_agent_without_its_extra_is_one_config_line(
    monkeypatch: pytest.MonkeyPatch, spec: str, config: AgentConfig, missing: str, extra: str
) -> None:
    _without(monkeypatch, missing)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with pytest.raises(ConfigError) as info:
        make_agent(spec, config)
    assert str(info.value) == extra_missing_message(extra, missing, f"the agent {spec!r}")
    assert "\n" not in str(info.value) and f"pip install 'groundeval[{extra}]'" in str(info.value)


@pytest.mark.parametrize(("spec", "config", "missing", "extra"), NEEDS)
def test_the_xdist_controller_preflight_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, spec: str, config: AgentConfig, missing: str, extra: str
) -> None:
    # the controller of an -n run never builds the agent: check_config must say it too
    _without(monkeypatch, missing)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    task = "write" if spec in ("langgraph", "baseline-write") else "extraction"
    with pytest.raises(ConfigError, match=rf"needs the '{extra}' extra \({missing} is not installed\)"):
        preflight_agent(spec, config, task)


def test_the_missing_sdk_is_named_before_the_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "anthropic")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"groundeval\[claude\]"):
        make_agent("claude", AgentConfig())


def test_the_write_task_without_healthchain_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "healthchain")
    with pytest.raises(ConfigError) as info:
        make_task("write")
    assert str(info.value) == extra_missing_message("healthchain", "healthchain", "the write task")


def test_the_fhir_read_tools_without_healthchain_are_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from groundeval.fhir.read_tools import BundleTools

    _without(monkeypatch, "healthchain")
    with pytest.raises(ConfigError, match=r"the FHIR read tools needs the 'healthchain' extra"):
        BundleTools({"resourceType": "Bundle", "type": "collection"}, lookup=None)


def _requests(task_name: str, limit: int) -> list[AgentRequest]:
    task = make_task(task_name)
    files = task.case_files(default_data_dir(task_name))[:limit]
    assert files, task_name
    out = []
    for path in files:
        case = task.load_case(path)
        out.append(AgentRequest(case_id=case.case_id, task=task_name, prompt=task.prompt(case),
                                context=task.context(case)))
    return out


@pytest.mark.parametrize(("spec", "task"), [
    ("baseline-reconcile", "reconcile"), ("naive-reconcile", "reconcile"), ("hedge-reconcile", "reconcile"),
])
def test_plain_install_agents_answer_without_any_optional_package(
    monkeypatch: pytest.MonkeyPatch, spec: str, task: str
) -> None:
    requests = _requests(task, 6)  # built first: the tasks' own code may use anything installed
    _without(monkeypatch, *OPTIONAL)
    _no_healthchain_import(monkeypatch)
    agent = make_agent(spec, AgentConfig())
    warmup = getattr(agent, "warmup", None)
    if callable(warmup):
        warmup()
    for request in requests:
        result = agent.run(request)
        text = result if isinstance(result, str) else result.text
        assert isinstance(json.loads(text or "null"), list | dict), (spec, request.case_id)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--groundeval-task=extraction"], extra_missing_message("claude", "anthropic", "the agent 'claude'")),
        (["--groundeval-task=extraction", "--groundeval-agent=baseline"],
         extra_missing_message("healthchain", "healthchain", "the agent 'baseline'")),
        (["--groundeval-task=write", "--groundeval-agent=baseline-write"],
         extra_missing_message("healthchain", "healthchain", "the write task")),
        (["--groundeval-task=reconcile", "--groundeval-agent=claude"],
         extra_missing_message("claude", "anthropic", "the agent 'claude'")),
    ],
)
def test_a_run_needing_a_missing_extra_stops_before_any_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], line: str
) -> None:
    _without(monkeypatch, *OPTIONAL)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    result = pytester.runpytest(*args, "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [x for x in result.errlines if x.startswith("ERROR:")] == [f"ERROR: {line}"]
    assert "Traceback" not in "\n".join(result.errlines + result.outlines)
    assert not list(Path(pytester.path).rglob("runs/*.json"))  # no case ran, no run record


def test_a_plain_install_run_collects_and_runs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, *OPTIONAL)
    _no_healthchain_import(monkeypatch)
    pytester.makepyfile(every_request=(
        "import json\n"
        "def agent(request):\n"
        "    entries = request.context['bundle']['entry']\n"
        "    codes = [c for e in entries if e['resource']['resourceType'] == 'MedicationRequest'\n"
        "             for c in e['resource'].get('medicationCodeableConcept', {}).get('coding', [])[:1]]\n"
        "    return json.dumps([{'rxnorm_code': c['code'], 'display': c.get('display', '')} for c in codes])\n"
    ))
    pytester.syspathinsert()
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=every_request:agent",
                                "-p", "no:randomly", "-k", "Liz or Max_Kris")
    outcomes = result.parseoutcomes()
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    assert sum(outcomes.get(k, 0) for k in ("passed", "failed", "partial")) >= 1
    assert "error" not in outcomes and "errors" not in outcomes


def test_under_xdist_the_controller_stops_before_starting_workers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the controller never builds the agent: the agent's check_config must raise the same line
    _without(monkeypatch, *OPTIONAL)
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=baseline", "-n", "2",
                                "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = extra_missing_message("healthchain", "healthchain", "the agent 'baseline'")
    assert [x for x in result.errlines if x.startswith("ERROR:")] == [f"ERROR: {line}"]
    assert not any("created: 2/2 workers" in x for x in result.outlines)
