"""The conversation in the record: the prompt sent, every reply and tool result, capped, redacted, by reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundeval.agent_io import AgentResult
from groundeval.agents.langgraph_agent import LangGraphWriteAgent
from groundeval.datasets import default_data_dir
from groundeval.execution.call import request_for
from groundeval.execution.outcome_policy import RunInfo
from groundeval.records.conversation import MAX_MESSAGE_CHARS
from groundeval.records.run_record import RunRecord
from groundeval.tasks import make_task
from groundeval.tasks.prompt_reference import PromptReferenceError, render_prompt
from groundeval.tasks.write.task import WriteTask
from groundeval.testing.one_case import run_case
from groundeval.testing.scripted_chat import ScriptedChatModel, answer_with_last_result, call

INFO = RunInfo(run_id="r1", task="write", agent="langgraph", model="scripted")


def test_a_tool_using_case_keeps_its_prompt_every_reply_and_tool_result_with_timing() -> None:
    task = WriteTask()
    case = task.load_case(default_data_dir("write") / "tylenol-brand-lookup.json")
    model = ScriptedChatModel(
        steps=[
            call("lookup_rxnorm", query="Tylenol 325 mg"),
            call(
                "build_medication_statement",
                status="active",
                rxcui="209387",
                dose_value=650,
                dose_unit="mg",
                frequency=1,
                period=6,
                period_unit="h",
                as_needed=True,
            ),
            answer_with_last_result("build_medication_statement", "resource"),
        ]
    )
    record = run_case(task, LangGraphWriteAgent(chat_model=model), case, INFO, "groundeval/write::x").record
    conv = record.conversation
    assert conv is not None and conv.prompt == "full"
    prompt = request_for(task, case).prompt
    roles = [m.role for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert conv.messages[0].content == prompt.system and conv.messages[1].content == prompt.user
    first = conv.messages[2]
    assert first.tool_calls[0]["name"] == "lookup_rxnorm" and first.tool_calls[0]["args"] == {"query": "Tylenol 325 mg"}
    assert first.call is not None and first.call.started_at and first.call.latency_s is not None
    tool = conv.messages[3]
    assert tool.name == "lookup_rxnorm" and tool.ok is True and "209387" in (tool.content or "")
    assert tool.tool_call_id == first.tool_calls[0]["id"]
    assert conv.messages[-1].content == record.raw_output  # the final reply is the answer scored
    assert [m.call.attempts for m in conv.replies if m.call] == [1, 1, 1]


class _Talker:
    name = "talker"
    model: str | None = None

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages

    def run(self, request: Any) -> AgentResult:
        return AgentResult(text="[]", messages=self.messages)


def test_the_conversation_is_capped_and_redacted_like_the_rest_of_the_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVIDER_API_KEY", "sk-very-secret-value-123")
    task = make_task("extraction")
    case = task.load_case(sorted(default_data_dir("extraction").glob("*.json"))[0])
    long = "x" * (MAX_MESSAGE_CHARS + 10)
    agent = _Talker(
        [
            {"role": "assistant", "content": "key sk-very-secret-value-123"},
            {"role": "tool", "name": "t", "content": long, "ok": True},
        ]
    )
    info = RunInfo(run_id="r1", task="extraction", agent="talker", model=None)
    record = run_case(task, agent, case, info, "groundeval/extraction::x").record
    assert record.conversation is not None
    replies = record.conversation.replies
    assert replies[0].content == "key [REDACTED]"
    assert (replies[1].content or "").startswith("x" * MAX_MESSAGE_CHARS + "… [cut: ") and record.capped[
        f"conversation.messages[{len(record.conversation.messages) - 1}].content"
    ] == len(long)
    assert "sk-very-secret" not in record.model_dump_json()


def _run(pytester: pytest.Pytester, *args: str) -> RunRecord:
    result = pytester.runpytest(
        "--groundeval-task=extraction",
        "--groundeval-agent=baseline",
        "--groundeval-limit=3",
        "--groundeval-out-dir=runs",
        "-p",
        "no:cacheprovider",
        *args,
    )
    result.assert_outcomes(passed=3)
    (path,) = (pytester.path / "runs").glob("*.json")
    return RunRecord.model_validate_json(path.read_text(encoding="utf-8"))


def test_by_reference_the_prompt_is_left_out_and_rendered_again_exactly(pytester: pytest.Pytester) -> None:
    full = _run(pytester)
    task = make_task("extraction")
    for case in full.cases:
        assert case.conversation is not None and case.conversation.prompt == "full"
        sent = request_for(task, task.load_case(Path(full.data_dir) / str(case.source))).prompt
        assert [m.content for m in case.conversation.messages] == [sent.system, sent.user]
    for path in (pytester.path / "runs").glob("*.json"):
        path.unlink()
    ref = _run(pytester, "--groundeval-conversation=reference")
    assert ref.settings["conversation"] == "reference"
    for case, whole in zip(ref.cases, full.cases, strict=True):
        conv = case.conversation
        assert conv is not None and conv.prompt == "reference" and conv.messages == []
        assert conv.reference is not None and conv.reference.prompt_sha256 == case.prompt_sha256
        assert whole.conversation is not None
        assert case.conversation is not None
        rendered = render_prompt(ref, case)
        assert [rendered.system, rendered.user] == [m.content for m in whole.conversation.messages]
    assert ref.cases[0].conversation.reference.task_version == full.packages["groundeval"]  # type: ignore[union-attr]
    assert str(full.cases[0].conversation.messages[1].content) not in json.dumps(ref.model_dump())  # type: ignore[union-attr]


def test_a_changed_case_file_cannot_render_the_referenced_prompt(pytester: pytest.Pytester, tmp_path: Path) -> None:
    ref = _run(pytester, "--groundeval-conversation=reference")
    case = ref.cases[0]
    data = tmp_path / "data"
    data.mkdir()
    original = Path(ref.data_dir) / str(case.source)
    (data / str(case.source)).write_text(original.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    with pytest.raises(PromptReferenceError, match="changed since the run"):
        render_prompt(ref, case, data)
