"""The Claude agent inside real plugin runs (pytester), its HTTP transport mocked per patient.

A small agent module is written into each pytester directory: ``mock_claude:MockClaude`` is the
real ``ClaudeAgent`` over the shared fake Anthropic API (``tests/_fakes/fake_anthropic.py``). Per patient it answers:
Liz_Conn correctly (with a cache write), Max_Kris 429 then correctly (with a cache read),
Clemente_Kreiger 529 for ever, Garrett_Thompson cut off at max_tokens. ``MOCK_MODE=auth`` makes
every call a 401. Each HTTP call appends a line to ``$MOCK_CALLS``. A rejected key under ``-n 2``
is ``tests/plugin/test_outcomes.py``'s (the stop is the plugin's, whatever the agent).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests._fakes.fake_anthropic import FAKE_KEY, install
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"
PATIENTS = ("Liz_Conn", "Max_Kris", "Clemente_Kreiger", "Garrett_Thompson")

MOCK_MODULE = '''
import os
from fake_anthropic import api_error, message, mock_claude, prompt_of
from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.agent_io import AgentRequest, Prompt

BASE = BaselineExtractionAgent()
SEEN = set()


def reply(text, stop="end_turn", written=0, read=0):
    return message(text, stop_reason=stop, model="claude-opus-4-8-20260528", input_tokens=5000, output_tokens=50,
                   cache_creation=written, cache_read=read, request_id="req_200")


def handler(request):
    user = prompt_of(request)[1]
    if os.environ.get("MOCK_CALLS"):
        with open(os.environ["MOCK_CALLS"], "a") as fh:
            fh.write(str(os.getpid()) + "\\n")
    if os.environ.get("MOCK_MODE") == "auth":
        return api_error(401, "authentication_error")
    answer = BASE.run(AgentRequest(case_id="x", task="extraction", prompt=Prompt(system="", user=user))).text
    if "1484a42d" in user:  # Clemente_Kreiger
        return api_error(529, "overloaded_error")
    if "5a72e290" in user:  # Garrett_Thompson
        return reply(answer[:20], stop="max_tokens")
    if "f9120576" in user and "max" not in SEEN:  # Max_Kris: rate limited once
        SEEN.add("max")
        return api_error(429, "rate_limit_error", retry_after="2")
    if "f9120576" in user:
        return reply(answer, read=1000)
    return reply(answer, written=1000)


MockClaude = mock_claude(handler)
'''


@pytest.fixture
def run_dir(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("MOCK_CALLS", str(pytester.path / "calls.txt"))
    monkeypatch.delenv("MOCK_MODE", raising=False)
    copy_fixtures(pytester.path / "data", PATIENTS)
    install(pytester.path)
    pytester.makepyfile(mock_claude=MOCK_MODULE)
    pytester.syspathinsert()
    return pytester.path


def args(*extra: str) -> list[str]:
    return ["--groundeval-task=extraction", "--groundeval-agent=mock_claude:MockClaude",
            "--groundeval-data-dir=data", "-p", "no:cacheprovider", *extra]


def calls(base: Path) -> list[str]:
    path = base / "calls.txt"
    return path.read_text().split() if path.exists() else []


def record_of(base: Path) -> dict[str, Any]:
    (path,) = (base / "runs").glob("*.json")
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def test_summary_shows_tokens_cost_and_excluded_infra_errors(pytester: pytest.Pytester, run_dir: Path) -> None:
    result = pytester.runpytest(*args("--junitxml=out.xml"))
    result.assert_outcomes(passed=2, failed=1, errors=1)  # truncated is the agent's doing: a failure
    result.stdout.fnmatch_lines([
        "agent: claude  model: claude-opus-4-8  run: *",
        "scored 3 of 4 cases: 1 excluded (infra_error 1), 0 not run; pass rate over every case that ran: 0.500",
        "pass rate: 0.667 (2/3)  answer rate: 0.667*",
        "outcomes: passed: 2  truncated: 1  infra_error: 1",
        # Opus 4.8 list prices: Liz 5000 in + 50 out + 1000 cache write = $0.0325; Max with a
        # 1000-token cache read = $0.02675; Garrett, truncated but paid for, $0.02625;
        # Clemente (529 throughout) used nothing.
        "usage: input_tokens: 15000  output_tokens: 150  cache_creation_input_tokens: 1000  "
        "cache_read_input_tokens: 1000  cost_usd: 0.085500  price_source: groundeval Claude list prices (checked *)",
    ])
    assert len(calls(run_dir)) == 1 + 2 + 3 + 1  # Liz, Max (429 + retry), Clemente (3 tries), Garrett
    record = record_of(run_dir)
    cases = {c["case_id"].rsplit("_", 1)[0]: c for c in record["cases"]}
    liz, max_kris = cases["Liz_Conn"], cases["Max_Kris"]
    assert liz["outcome"] == "passed" and liz["model"] == "claude-opus-4-8-20260528"
    assert liz["attempts"] == 1 and liz["agent_meta"]["stop_reason"] == "end_turn"
    assert liz["agent_meta"]["request_id"] == "req_200" and liz["latency_s"] >= 0
    assert liz["usage"] == {"input_tokens": 5000, "output_tokens": 50, "cache_creation_input_tokens": 1000,
                            "cache_read_input_tokens": 0, "cost_usd": pytest.approx(0.0325),
                            "price_source": "groundeval Claude list prices (checked 2026-11-29)"}
    assert max_kris["attempts"] == 2 and max_kris["agent_meta"]["retry_wait_s"] == 2.0
    clemente = cases["Clemente_Kreiger"]
    assert clemente["outcome"] == "infra_error" and clemente["attempts"] == 3
    assert clemente["error"]["type"] == "InfraError"
    assert clemente["error"]["details"]["status_code"] == 529
    garrett = cases["Garrett_Thompson"]
    assert garrett["outcome"] == "truncated" and garrett["usage"]["output_tokens"] == 50
    assert garrett["error"]["details"]["stop_reason"] == "max_tokens"
    assert len(garrett["raw_output"]) == 20 and garrett["parsed"] is None  # kept, never parsed
    # The truncated case counts in the means as an empty answer; the infra error does not.
    assert record["aggregate"]["counted"] == 3 and record["aggregate"]["excluded"] == 1
    assert garrett["answered"] is False and garrett["metrics"]["recall"] == 0.0
    assert record["aggregate"]["usage"]["cost_usd"] == pytest.approx(0.0855)
    assert record["settings"]["agent_options"]["max_tokens"] == 4096
    assert record["settings"]["agent_options"]["temperature"] is None
    junit = (run_dir / "out.xml").read_text()
    assert 'name="outcome" value="infra_error"' in junit and 'name="stop_reason" value="max_tokens"' in junit


def test_no_key_or_auth_header_in_record_junit_or_logs(pytester: pytest.Pytester, run_dir: Path) -> None:
    result = pytester.runpytest(*args(
        "--junitxml=out.xml", "-o", "junit_logging=all", "--log-level=DEBUG",
        "--log-file=debug.log", "--log-file-level=DEBUG", "-rA",
    ))
    result.assert_outcomes(passed=2, failed=1, errors=1)
    log = (run_dir / "debug.log").read_text()
    assert "HTTP Request: POST https://api.anthropic.com/v1/messages" in log  # the SDK did log
    outputs = {
        "stdout": result.stdout.str(), "stderr": result.stderr.str(), "junit": (run_dir / "out.xml").read_text(),
        "log": log, "record": next((run_dir / "runs").glob("*.json")).read_text(),
    }
    for name, text in outputs.items():
        assert FAKE_KEY not in text and FAKE_KEY[:24] not in text, name
        assert "Bearer " not in text and "[REDACTED]" not in text, name  # redaction never had to act


def test_rejected_key_stops_a_serial_run_after_one_call(
    pytester: pytest.Pytester, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOCK_MODE", "auth")
    # -rN: no short summary, which repeats the message untruncated when CI is set.
    result = pytester.runpytest(*args("-rN"))
    result.assert_outcomes(errors=1)
    assert len(calls(run_dir)) == 1
    assert result.stdout.str().count("rejected the API key") == 1
    result.stdout.fnmatch_lines(["*Interrupted: groundeval: stopped after auth_error on *(see the error above)*"])
    (case,) = [c for c in record_of(run_dir)["cases"] if c["outcome"] != "not_run"]
    assert case["outcome"] == "auth_error" and case["attempts"] == 1


def test_deprecated_model_id_warns_once_per_run(pytester: pytest.Pytester, run_dir: Path) -> None:
    result = pytester.runpytest(*args("--groundeval-model=claude-sonnet-4-5", "-k", "Liz or Max"))
    result.assert_outcomes(passed=2)
    assert result.stdout.str().count("The model 'claude-sonnet-4-5' is deprecated") == 1
