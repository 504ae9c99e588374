"""``--groundeval-batch`` and the judge: a model judge on the agent's batch API sends its calls in the batches."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from groundeval.execution.score_stage import ScoreStage
from groundeval.models import get_model
from groundeval.models.batch import Batcher, BatchSettings
from groundeval.run.batch_mode import batch_judge, judge_model
from groundeval.scorers.model_graded import Question, Verdict
from groundeval.tasks.summary.judge import JUDGE_MAX_TOKENS, BaselineJudge, ModelJudge
from tests._fakes.fake_batches import FakeAnthropicBatches, FakeOpenAIBatches

BY_SIZE = BatchSettings(size=4, send_delay_s=300.0, poll_s=0.01, max_wait_s=30.0)
"""A batch goes only when 4 requests are in: one batch of 4 proves the 4 judge calls waited together."""

SUMMARY = "Active problems: asthma."


def _verdict(custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """The fake provider's judge: met, quoting the summary."""
    del custom_id
    return {"type": "succeeded", "text": json.dumps({"met": True, "evidence": "asthma"})}


def _judged(judge: Any) -> SimpleNamespace:
    """A summary task as batch mode sees it: its ``grader_model`` declaration, read by the real property."""
    from groundeval.tasks.summary.task import SummaryTask

    task = SimpleNamespace(scorer=SimpleNamespace(judge=judge))
    task.grader_model = SummaryTask.grader_model.fget(task)  # type: ignore[attr-defined]
    return task


def _task(model: Any) -> SimpleNamespace:
    """A model-graded task: a scorer whose judge asks ``model``."""
    return _judged(ModelJudge(model, "anthropic/claude-opus-4-8"))


def test_a_judge_on_the_agents_batch_api_asks_in_the_agents_batches(api_key: str) -> None:
    fake = FakeAnthropicBatches(answer=_verdict)
    agent_model = get_model("anthropic/claude-opus-4-8", http_client=fake.client())
    batcher = Batcher(agent_model.batch_api(), BY_SIZE)
    agent_model.use_batches(batcher)
    judge_model_ = get_model("anthropic/claude-opus-4-8", role="judge", http_client=fake.client(),
                             options={"max_tokens": JUDGE_MAX_TOKENS})
    task = _task(judge_model_)
    assert judge_model(task) is judge_model_
    assert batch_judge(task, batcher) and judge_model_.batcher is batcher
    judge = task.scorer.judge
    criteria = [{"id": f"c{i}", "statement": f"mentions item {i}"} for i in range(4)]
    stage = ScoreStage(4)
    try:
        out = stage.run([Question(c["id"], lambda c=c: judge.decide(c, SUMMARY, label=f"case/judge/{c['id']}"))
                         for c in criteria])
    finally:
        stage.close()
        batcher.close()
    assert all(isinstance(v, Verdict) and v.met and v.evidence == "asthma" for v in out.values()) and len(out) == 4
    assert len(fake.created) == 1  # one batch: the four judge calls, sent together
    _, requests = fake.created[0]
    assert len(requests) == 4 and all(r["max_tokens"] == JUDGE_MAX_TOKENS for r in requests.values())
    assert all(v.usage.get("input_tokens") is not None for v in out.values() if isinstance(v, Verdict))


def test_a_judge_elsewhere_or_by_rule_is_called_directly(api_key: str) -> None:
    fake = FakeAnthropicBatches(answer=_verdict)
    agent_model = get_model("anthropic/claude-opus-4-8", http_client=fake.client())
    batcher = Batcher(agent_model.batch_api(), BY_SIZE)
    try:
        other = get_model("openai-compatible/qwen@http://127.0.0.1:9/v1", role="judge",
                          http_client=FakeOpenAIBatches().client())
        assert not batch_judge(_task(other), batcher) and other.batcher is None  # another provider's batch API
        assert not batch_judge(_judged(BaselineJudge()), batcher)
        assert not batch_judge(SimpleNamespace(), batcher)  # a task graded by rule
    finally:
        batcher.close()
