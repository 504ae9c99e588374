"""The groundeval CLI (one execution path with the plugin) and the agent loader."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from groundeval.agent_io import AgentRequest, AgentResult, Prompt
from groundeval.agents.base import AgentConfig, FunctionAgent, calls_no_model, make_agent
from groundeval.cli import main as cli_main, pytest_args
from groundeval.errors import AgentError, ConfigError
from groundeval.execution import effective_concurrency
from groundeval.execution.call import call_agent
from groundeval.testing.scripted_agent import ScriptedAgent
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"


def test_cli_flags_map_one_to_one_onto_plugin_options() -> None:
    args = pytest_args(["--agent", "baseline", "--limit", "3", "--data-dir", "d", "--min-f1", "0.9",
                        "-n", "2", "--", "--junitxml=o.xml", "-k", "Liz"])
    assert args[:5] == ["--groundeval-task=extraction", "--groundeval-agent=baseline",
                        "--groundeval-limit=3", "--groundeval-data-dir=d", "--groundeval-min-f1=0.9"]
    assert args[5:7] == ["-n", "2"] and args[-3:] == ["--junitxml=o.xml", "-k", "Liz"]


def test_cli_unknown_flag_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        pytest_args(["--agnet", "baseline"])
    assert info.value.code == 2
    assert "groundeval: error: unknown flag --agnet; did you mean --agent?" in capsys.readouterr().err


def test_cli_runs_the_plugin_end_to_end(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """``groundeval --agent baseline ...`` runs the plugin and writes the record where it was told.

    In this process, as pytester's in-process runs are (the ``pytester`` fixture puts back the
    working directory, ``sys.path`` and ``sys.modules``): ``python -m groundeval.cli`` itself, a
    fresh interpreter, is run by ``test_cli_without_key_fails_at_once_with_the_hint``.
    """
    data = pytester.mkdir("data")
    for prefix in ("Liz_Conn", "Clemente_Kreiger"):
        (src,) = FIXTURES.glob(f"{prefix}_*.json")
        shutil.copy(src, data)
    status = cli_main(["--agent", "baseline", "--data-dir", "data", "--out-dir", "out"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "outcomes: passed: 2" in out and "warning" not in out.lower()
    (record,) = (pytester.path / "out").glob("*.json")
    assert json.loads(record.read_text())["aggregate"]["counts"] == {"passed": 2}


def test_cli_without_key_fails_at_once_with_the_hint(tmp_path: Path) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if k != "ANTHROPIC_API_KEY"}
    run = subprocess.run([sys.executable, "-m", "groundeval.cli"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 4
    assert run.stderr.strip().splitlines() == [
        "ERROR: ANTHROPIC_API_KEY is not set: the agent 'claude' needs it. Set the key, or run offline with the "
        "task's rule-based agent: --groundeval-agent=baseline (CLI: --agent baseline); baseline needs the "
        "healthchain extra: pip install 'groundeval[healthchain]'."
    ]


REQUEST = AgentRequest(case_id="c1", task="extraction", prompt=Prompt(system="s", user="u"))


class NoArgAgent:
    name = "noarg"
    model = None

    def run(self, request: AgentRequest) -> AgentResult:
        return AgentResult(text="[]")


class ConfigAgent:
    def __init__(self, config: AgentConfig) -> None:
        self.model = config.model
        self.name = "configured"

    def run(self, request: AgentRequest) -> AgentResult:
        return AgentResult(text=f"model={self.model}")


def plain_function(request: AgentRequest) -> str:
    return f"answer for {request.case_id}"


def declared_function(request: AgentRequest) -> str:
    return "[]"


declared_function.network_calls = False  # type: ignore[attr-defined]
declared_function.thread_safe = True  # type: ignore[attr-defined]
declared_function.max_concurrency = 2  # type: ignore[attr-defined]


INSTANCE = NoArgAgent()
NOT_AN_AGENT = 42


@pytest.mark.parametrize(
    ("attr", "text"),
    [("NoArgAgent", "[]"), ("ConfigAgent", "model=m1"), ("plain_function", "answer for c1"), ("INSTANCE", "[]")],
)
def test_module_attribute_agents(attr: str, text: str) -> None:
    agent = make_agent(f"{__name__}:{attr}", AgentConfig(model="m1"))
    assert call_agent(agent, REQUEST).result.text == text
    assert isinstance(agent.name, str)


def test_a_function_agent_has_the_declarations_set_on_the_function() -> None:
    """``fn.network_calls = False`` and the rest are the agent's, as on a class (the controller reads them there)."""
    declared = make_agent(f"{__name__}:declared_function")
    plain = make_agent(f"{__name__}:plain_function")
    assert calls_no_model(declared) and not calls_no_model(plain)
    assert effective_concurrency(None, declared) == declared_function.max_concurrency  # type: ignore[attr-defined]
    assert effective_concurrency(None, plain) == 1  # not declared thread-safe: one call at a time


def test_function_agent_keeps_agent_results() -> None:
    result = AgentResult(text="x", attempts=2)
    assert FunctionAgent(lambda r: result, "f").run(REQUEST) is result


@pytest.mark.parametrize(
    ("spec", "message"),
    [("nope", "unknown agent 'nope'"), ("no_such_module:x", "cannot import"),
     (f"{__name__}:missing", "has no attribute 'missing'"), (f"{__name__}:NOT_AN_AGENT", "not a class or callable")],
)
def test_bad_agent_specs(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_agent(spec)


def test_scripted_agent_never_wraps_around_and_raises_scripted_errors() -> None:
    agent = ScriptedAgent(["one"])
    assert agent.run(REQUEST).text == "one"
    with pytest.raises(AgentError, match="ran out after 1"):
        agent.run(REQUEST)
    boom = ScriptedAgent({"c1": AgentError("boom")})
    with pytest.raises(AgentError, match="boom"):
        boom.run(REQUEST)
    with pytest.raises(AgentError, match="no scripted answer"):
        ScriptedAgent({}).run(REQUEST)
