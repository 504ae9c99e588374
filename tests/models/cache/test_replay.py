"""The replay agent on constructed run records: what each recorded case replays as, and the checks."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from groundeval import ExtractionTask
from groundeval.agent_io import AgentRequest, Prompt
from groundeval.agents.base import AgentConfig, make_agent, preflight_agent
from groundeval.agents.replay import ReplayAgent, ReplayCaseError
from groundeval.errors import AgentError, ConfigError, TruncatedError
from groundeval.records.run_record import MAX_RAW_OUTPUT_CHARS, CaseRecord, ErrorInfo, RunRecord

PROMPT = Prompt("sys", "bundle")
PROMPT_SHA = hashlib.sha256(PROMPT.text.encode()).hexdigest()


def case(case_id: str, outcome: str = "passed", **extra: Any) -> CaseRecord:
    fields: dict[str, Any] = {
        "case_id": case_id, "nodeid": f"groundeval/extraction::{case_id}", "run_id": "run-a", "task": "extraction",
        "agent": "claude", "model": "claude-opus-4-8", "outcome": outcome, "counted": True, "answered": True,
        "source": f"{case_id}.json", "fixture_sha256": "sha-1", "prompt_sha256": PROMPT_SHA,
        "raw_output": f"[answer of {case_id}]", "raw_output_chars": len(f"[answer of {case_id}]"),
        "usage": {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.002}, "attempts": 1,
        "agent_meta": {"stop_reason": "end_turn"},
    }
    fields.update(extra)
    return CaseRecord.model_validate(fields)


def write_record(path: Path, cases: list[CaseRecord], task: str = "extraction") -> Path:
    record = RunRecord(run_id="run-a", task=task, agent="claude", model="claude-opus-4-8",
                       started_at="2026-12-01T00:00:00Z", cases=cases)
    path.write_text(record.model_dump_json(), encoding="utf-8")
    return path


def req(case_id: str, trial: int = 0, prompt: Prompt = PROMPT) -> AgentRequest:
    return AgentRequest(case_id=case_id, task="extraction", prompt=prompt, trial=trial)


@pytest.fixture
def agent(tmp_path: Path) -> ReplayAgent:
    long = "x" * (MAX_RAW_OUTPUT_CHARS + 10)
    cases = [
        case("ok", trace=[{"tool": "lookup", "args": {}, "result": 1, "ok": True}]),
        case("ok", trial=1, raw_output="[trial one]", raw_output_chars=11),
        case("cut", "truncated", answered=False, raw_output="[{\"rx", raw_output_chars=5,
             error=ErrorInfo(type="TruncatedError", message="stopped at max_tokens", details={"usage": {"output_tokens": 9}})),
        case("mine", "no_answer", answered=False, raw_output=None, raw_output_chars=None,
             error=ErrorInfo(type="MyAgentError", message="gave up")),
        case("down", "infra_error", counted=False, answered=False, raw_output=None,
             error=ErrorInfo(type="InfraError", message="529")),
        case("long", raw_output=long[:MAX_RAW_OUTPUT_CHARS], raw_output_chars=len(long),
             raw_output_sha256=hashlib.sha256(long.encode()).hexdigest()),
    ]
    return ReplayAgent(AgentConfig(), record=write_record(tmp_path / "run.json", cases))


def test_answers_replay_with_their_usage_trace_and_facts(agent: ReplayAgent) -> None:
    assert (agent.name, agent.model) == ("claude", "claude-opus-4-8")
    result = agent.run(req("ok"))
    assert result.cached and result.text == "[answer of ok]" and result.attempts == 1
    assert result.usage == {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.002}
    assert result.trace[0]["tool"] == "lookup"
    assert result.meta == {"stop_reason": "end_turn", "replay_of": "run-a"}  # nothing flagged
    assert agent.run(req("ok", trial=1)).text == "[trial one]"
    assert agent.run(req("ok", prompt=Prompt("sys v2", "bundle"))).meta["prompt_changed"] is True


def test_agent_behaviour_failures_replay_as_their_class(agent: ReplayAgent) -> None:
    with pytest.raises(TruncatedError) as cut:
        agent.run(req("cut"))
    assert getattr(cut.value, "cached", False) is True and str(cut.value) == "stopped at max_tokens"
    assert cut.value.details["partial_text"] == "[{\"rx" and cut.value.details["usage"] == {"output_tokens": 9}
    with pytest.raises(AgentError) as mine:  # an agent's own AgentError subclass: the class its outcome stands for
        agent.run(req("mine"))
    assert type(mine.value) is AgentError and str(mine.value) == "gave up"


@pytest.mark.parametrize(("case_id", "trial", "words"), [
    ("absent", 0, "absent: not in the replayed run record"),
    ("ok", 2, "ok trial 2: not in the replayed run record"),
    ("down", 0, "no answer recorded"),
    ("long", 0, "only the first 200000"),
])
def test_cases_that_cannot_be_replayed_name_the_case(agent: ReplayAgent, case_id: str, trial: int, words: str) -> None:
    with pytest.raises(ReplayCaseError, match=words):
        agent.run(req(case_id, trial))
    assert not issubclass(ReplayCaseError, AgentError)  # outcome agent_error: excluded, not a wrong answer


def test_spec_and_bad_records(tmp_path: Path) -> None:
    path = write_record(tmp_path / "run.json", [case("ok")])
    built = make_agent(f"replay:{path}")
    assert isinstance(built, ReplayAgent) and built.name == "claude"
    assert preflight_agent(f"replay:{path}", AgentConfig(), ExtractionTask()) == "claude"
    with pytest.raises(ConfigError, match="needs a run record"):
        make_agent("replay")
    with pytest.raises(ConfigError, match="cannot read the run record"):
        make_agent(f"replay:{tmp_path / 'missing.json'}")
    (tmp_path / "bad.json").write_text('{"schema_version": 1}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not a groundeval run record"):
        make_agent(f"replay:{tmp_path / 'bad.json'}")
    with pytest.raises(ConfigError, match="takes no argument"):
        make_agent("baseline:extra")


def test_check_cases_refuses_another_task_and_changed_files(tmp_path: Path, extraction_fixtures: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (src,) = extraction_fixtures.glob("Liz_Conn_*.json")
    (other,) = extraction_fixtures.glob("Max_Kris_*.json")
    shutil.copy(src, data / src.name)
    shutil.copy(other, data / other.name)
    task = ExtractionTask()
    same = hashlib.sha256(src.read_bytes()).hexdigest()
    cases = [case("liz", source=src.name, fixture_sha256=same), case("max", source=other.name, fixture_sha256="old"),
             case("gone", source="deleted.json")]
    replay = ReplayAgent(record=write_record(tmp_path / "run.json", cases))
    with pytest.raises(ConfigError, match=r"1 case file\(s\) changed since that run \(Max_Kris.*--groundeval-replay-allow-changed"):
        replay.check_cases(task, data)
    replay.check_cases(task, data, allow_changed=True)
    assert replay.changed == {"max"}
    assert replay.run(req("max")).meta["fixture_changed"] is True and "fixture_changed" not in replay.run(req("liz")).meta
    write_task = ReplayAgent(record=write_record(tmp_path / "write.json", [case("w")], task="write"))
    with pytest.raises(ConfigError, match="the record is of the 'write' task, this run is 'extraction'"):
        write_task.check_cases(task, data, allow_changed=True)  # another task is never replayed
def test_replaying_fewer_trials_than_recorded_warns() -> None:
    from types import SimpleNamespace

    from groundeval.run.agent_setup import _warn_unreplayed_trials

    record = SimpleNamespace(cases=[SimpleNamespace(trial=t) for t in (0, 1, 2)])
    agent: Any = SimpleNamespace(record=record)
    with pytest.warns(UserWarning, match="holds 3 trials per case and this run replays 1"):
        _warn_unreplayed_trials(agent, 1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_unreplayed_trials(agent, 3)  # all of them: no warning
