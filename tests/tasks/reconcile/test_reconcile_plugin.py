"""The reconcile task through the pytest plugin (in-process pytester runs, offline).

``baseline-reconcile`` runs every packaged case; the naive control fails; ``claude`` (its HTTP
transport mocked) and ``openai-compatible`` (a loopback server on 127.0.0.1) run the task
unchanged, answering with what the baseline would say for the prompt they were sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.baselines.reconcile import BaselineReconcileAgent
from tests._fakes.fake_anthropic import FAKE_KEY, install
from tests._fakes.fake_openai import ChatServer, Reply, completion, serve_chat

BASELINE = BaselineReconcileAgent()
SELECTED = "exact--Liz or dose-high-alert or no-medication--Clemente"
HIGH_ALERT = "dose-high-alert or omission-high-alert"


def _record(base: Path) -> dict[str, Any]:
    (path,) = (base / "runs").glob("*.json")
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def test_baseline_runs_every_packaged_case_offline(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--groundeval-task=reconcile", "--groundeval-agent=baseline-reconcile",
                                "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("partial", 0) + outcomes.get("failed", 0) == 46
    assert "error" not in outcomes and "errors" not in outcomes
    result.stdout.fnmatch_lines(["*groundeval reconcile*", "agent: baseline-reconcile  model: -  run: *",
                                 "pass rate: * (*/46)  answer rate: 1.000*"])
    record = _record(pytester.path)
    cases = {c["case_id"]: c for c in record["cases"]}
    assert record["task"] == "reconcile" and len(cases) == 46
    assert all(c["outcome"] == "passed" for i, c in cases.items() if i.startswith(("exact--", "no-medication")))
    # Honest floor: it passes the simple cases and misses brand names and unit conversions.
    assert cases["brand-name--Delores12_Cronin387_0d154268"]["outcome"] == "partial"
    unit = cases["unit-equivalent--variant-medref-contained--Trey_Berge_99153850"]
    assert unit["outcome"] == "partial" and unit["metrics"]["discrepancy_precision"] == 0.0
    assert 0.5 < record["aggregate"]["pass_rate"] < 1.0
    assert set(unit["metrics"]) >= {"discrepancy_f1", "recall_omission", "high_alert_missed", "matched_f1"}


def test_the_naive_control_fails(pytester: pytest.Pytester) -> None:
    """Through the plugin on the high-alert dose and omission cases; its figures over every packaged
    case: tests/records/test_degenerate_agents.py."""
    result = pytester.runpytest("--groundeval-task=reconcile", "--groundeval-agent=naive-reconcile",
                                "-p", "no:cacheprovider", "--junitxml=out.xml", "-k", HIGH_ALERT)
    assert result.ret == 1
    record = _record(pytester.path)
    assert len(record["cases"]) == 3 and record["aggregate"]["pass_rate"] == 0.0
    assert record["aggregate"]["metrics"]["micro_discrepancy_recall"] == 0.0
    assert record["aggregate"]["metrics"]["answers_high_alert_missed"] == 3
    dose = next(c for c in record["cases"] if c["case_id"].startswith("dose-high-alert"))
    assert dose["outcome"] == "failed" and dose["metrics"]["high_alert_missed"] is True
    xml = (pytester.path / "out.xml").read_text()
    assert '<property name="high_alert_missed" value="true"' in xml
    assert '<property name="recall_commission" value=""' in xml  # n/a on a case without commission


MOCK_CLAUDE = '''
from fake_anthropic import message, mock_claude, prompt_of
from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.baselines.reconcile import BaselineReconcileAgent

BASE = BaselineReconcileAgent()
SEEN = []


def handler(request):
    system, user = prompt_of(request)
    SEEN.append(("Site formulary" in system, "<report>" in user))
    answer = BASE.run(AgentRequest(case_id="x", task="reconcile", prompt=Prompt(system=system, user=user))).text
    return message(answer, input_tokens=9000, output_tokens=80, request_id="req_1")


class MockClaude(mock_claude(handler)):
    def run(self, request):
        assert set(request.context) == {"bundle", "report"}
        return super().run(request)
'''


def test_claude_runs_the_task_unchanged(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    install(pytester.path)
    pytester.makepyfile(mock_claude=MOCK_CLAUDE)
    pytester.syspathinsert()
    result = pytester.runpytest("--groundeval-task=reconcile", "--groundeval-agent=mock_claude:MockClaude",
                                "-p", "no:cacheprovider", "-k", SELECTED)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["agent: claude  model: claude-opus-4-8  run: *"])
    record = _record(pytester.path)
    assert all(c["attempts"] == 1 and c["usage"]["input_tokens"] == 9000 for c in record["cases"])


def _baseline_reply(body: dict[str, Any]) -> Reply:
    """The baseline's answer for the prompt the server is sent."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    text = BASELINE.run(AgentRequest(case_id="x", task="reconcile", prompt=Prompt(system=system, user=user))).text
    return completion(text, prompt=700, out=20, cached=None, model="local-model")


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    yield from serve_chat([_baseline_reply])


def test_openai_compatible_runs_the_task_unchanged(pytester: pytest.Pytester, chat_server: ChatServer) -> None:
    result = pytester.runpytest(
        "--groundeval-task=reconcile", "--groundeval-agent=openai-compatible", f"--groundeval-base-url={chat_server.url}",
        "--groundeval-model=local-model", "-p", "no:cacheprovider", "-k", SELECTED,
    )
    result.assert_outcomes(passed=3)
    assert len(chat_server.bodies) == 3
    system = chat_server.bodies[0]["messages"][0]
    assert system["role"] == "system" and "Site formulary (RxCUI: display):" in system["content"]
    assert all("<report>" in b["messages"][-1]["content"] for b in chat_server.bodies)
