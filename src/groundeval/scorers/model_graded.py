"""A model-graded scorer: a model of role ``judge`` decides criteria, one request per criterion.

Any task can grade with it (in the spirit of inspect_ai's ``model_graded_qa``): the task gives the
prompt (a system prompt and a user message per criterion, with its SHA-256), the verdict parser
and the text the evidence must quote; ``ModelGrader`` owns the rest, once:

* the call goes through the model layer (``models.get_model(spec, role="judge")``: the run's
  retries, deadline, pricing, spend limit and redaction, as an agent's calls);
* the reply is cached by request, model settings and role (``models.response_cache``), never
  through an agent entry; a reply that holds no verdict is not stored (asked again next time);
* a model that fails to connect on its first ``UNREACHABLE_AFTER`` calls, with no verdict yet,
  stops the run (``models.reachability``: the same rule as an agent's);
* a model failure is a ``JudgeError`` (a ``ScorerModelError``: the runner classes the case by the
  model's error, never as a wrong answer);
* the verdict carries its usage (tokens, USD), which the task reports in the case's ``usage``
  under the role's prefix (``role_usage``: ``judge_calls``, ``judge_input_tokens``...).

Which calls run when is the executor's business (``execution.score_stage``): a task's scorer that
has ``questions(case, truth, parsed)`` (the criteria its rules leave to the judge) and takes
``score(..., grades=...)`` has them asked concurrently, under the run's ``--groundeval-concurrency``
(an optional ``asks_model`` False says its judge calls no model: nothing to ask ahead).
``grade_case`` is that seam.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from groundeval.errors import AgentError, InfraError, RunStopError, ScorerModelError
from groundeval.models.base import ModelRequest, ModelResponse
from groundeval.models.pricing import total_cost
from groundeval.models.reachability import UNREACHABLE_AFTER, Reachability

if TYPE_CHECKING:
    from groundeval.datasets import Case
    from groundeval.models.response_cache import ResponseCache
    from groundeval.scoring import Parsed, Score

__all__ = [
    "NO_VERDICT_FLAGS",
    "GradeStage",
    "GraderModel",
    "JudgeError",
    "ModelGrader",
    "Question",
    "SerialGrades",
    "Verdict",
    "VerdictParser",
    "grade_case",
    "role_usage",
]

NO_VERDICT_FLAGS = ("no_answer", "format_not_ok")
"""``Verdict.flag`` of a reply that holds no verdict: ``no_answer`` (empty) or ``format_not_ok``
(text without a verdict). Named as the agent outcomes of the same kind."""


class JudgeError(ScorerModelError):
    """The judge's model failed (a reply that is not a verdict is a ``Verdict`` flagged ``no_answer``).

    Raised from the scorer; the runner classes the case by ``error`` (the model's ``AgentError``)
    as it classes an agent call's failure: ``infra_error`` excluded and counted, ``auth_error`` and
    ``config_error`` stop the run. Never a wrong answer.
    ``cause_outcome`` is the model failure's outcome when there was one.
    """

    def __init__(self, message: str, cause_outcome: str | None = None, *, error: AgentError | None = None,
                 metrics: dict[str, object] | None = None, called: bool = True) -> None:
        super().__init__(message, error, metrics)
        self.cause_outcome = cause_outcome or (error.outcome if error is not None else None)
        self.called = called  # False: never asked (the run stopped first), so no call to count


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judge's decision on one criterion.

    Attributes:
        met: True when the text does what the criterion describes.
        evidence: The quote the judge gave ("" when none).
        flag: ``evidence_not_in_summary`` when a ``met`` verdict's quote is not in the text
            (then ``met`` is False); ``no_answer`` or ``format_not_ok`` (``NO_VERDICT_FLAGS``) when
            the reply held no verdict (then ``met`` is False and the evidence is the reply's first
            200 characters); else None.
        usage: ``input_tokens``, ``output_tokens`` (tokens) and ``cost_usd`` (USD, None when
            unpriced) of the call; empty for a judge that calls no model and for a cached reply.
        cached: True when the model's reply came from the response cache (no call, no cost now).
    """

    met: bool
    evidence: str = ""
    flag: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    cached: bool = False


VerdictParser = Callable[[str, str], tuple[bool, str, "str | None"]]
"""``parse(reply, text) -> (met, evidence, flag)``: the task's reading of one reply, ``text`` being
what the evidence must quote (flags as ``Verdict.flag``)."""


class GraderModel(Protocol):
    """What ``ModelGrader`` needs of a ``Model`` (read-only ``spec``: providers expose it as a property)."""

    @property
    def spec(self) -> str:
        """The model's spec."""
        ...

    def generate(self, request: ModelRequest) -> ModelResponse:
        """As ``Model.generate``."""
        ...

    def settings(self) -> dict[str, Any]:
        """As ``Model.settings``."""
        ...


class ModelGrader:
    """Asks a model (role ``judge``) one criterion per request and reads its verdict.

    Args:
        model: The model (``models.get_model(spec, role="judge")``, or a ``ScriptedModel``).
        spec: The spec to record (default: the model's own).
        system: The system prompt (the task's grading instructions).
        prompt_sha256: SHA-256 of the system prompt and user template (part of the cache key).
        parse: Reads one reply (``VerdictParser``).
        max_tokens: Output limit of one call, tokens.
        cache: Where replies are kept (``--groundeval-judge-cache``), or None.

    Attributes:
        reachability: This grader's answers and connection failures (``models.reachability``).
    """

    def __init__(self, model: GraderModel, *, spec: str | None = None, system: str, prompt_sha256: str,
                 parse: VerdictParser, max_tokens: int, cache: ResponseCache | None = None) -> None:
        self.model = model
        self.spec = spec or model.spec
        self.system = system
        self.prompt_sha256 = prompt_sha256
        self.parse = parse
        self.max_tokens = max_tokens
        self.cache = cache
        self.reachability = Reachability()

    def settings(self) -> dict[str, Any]:
        """The model's settings (``spec``, ``role``, ``model``, ``max_tokens``, ``temperature``) and prompt hash."""
        return {**self.model.settings(), "spec": self.spec, "prompt_sha256": self.prompt_sha256}

    def request(self, user: str, *, label: str) -> ModelRequest:
        """The request for one criterion: the system prompt and ``user``."""
        return ModelRequest.single(user, system=self.system, label=label, max_tokens=self.max_tokens)

    def grade(self, user: str, text: str, *, label: str) -> Verdict:
        """One criterion: a cached reply, or one model call; parsed by ``parse`` against ``text``.

        Safe to call from several threads at once.

        Raises:
            JudgeError: The model raised an ``AgentError`` (kept as ``error``). After
                ``UNREACHABLE_AFTER`` connection failures with no verdict yet, the error is a
                ``RunStopError`` (``config_error``): the judge looks unreachable and the run stops,
                as for an unreachable agent.
        """
        request = self.request(user, label=label)
        settings = self.settings()
        hit = self.cache.get(settings, request) if self.cache is not None else None
        if hit is not None:
            met, evidence, flag = self.parse(hit.text, text)
            return Verdict(met, evidence, flag, {}, cached=True)
        try:
            response = self.model.generate(request)
        except AgentError as exc:
            error: AgentError = exc
            if isinstance(exc, InfraError) and self.reachability.note_failure(exc.connection):
                error = RunStopError(
                    f"its first {UNREACHABLE_AFTER} calls failed to connect and none answered: it looks "
                    f"unreachable; check the endpoint, network and key (last: {exc})", attempts=exc.attempts)
            raise JudgeError(f"the judge {self.spec} failed ({error.outcome}): {error}", error=error) from exc
        self.reachability.note_answer()
        met, evidence, flag = self.parse(response.text, text)
        usage = {k: response.usage.get(k) for k in ("input_tokens", "output_tokens", "cost_usd")}
        if self.cache is not None and flag not in NO_VERDICT_FLAGS:  # a non-verdict is asked again next time
            self.cache.put(settings, request, response)
        return Verdict(met, evidence, flag, usage)


@dataclass(frozen=True, slots=True)
class Question:
    """One criterion a scorer leaves to its judge.

    Attributes:
        key: The criterion's id in the scorer's rubric (unique in the case).
        ask: Asks the judge (one call at most); returns its ``Verdict`` or raises ``JudgeError``.
        costs_nothing: True when asking calls no model (a rule-based judge): it is asked inline.
        alone: True while the judge has not answered yet in this process: this question goes
            alone, before the case's others, so a rejected key or an unreachable endpoint stops
            the run after one call, not N (as an agent's first call, ``execution.protocol``).
    """

    key: str
    ask: Callable[[], Verdict]
    costs_nothing: bool = False
    alone: bool = False


class GradeStage(Protocol):
    """Asks a case's questions and hands back each one's verdict or failure (``execution.score_stage``)."""

    def run(self, questions: Sequence[Question]) -> dict[str, Verdict | JudgeError]:
        """Ask the questions; a ``JudgeError`` is kept as that question's result, never raised.

        After a failure no further question starts (those are absent from the result).

        Raises:
            KeyboardInterrupt: Ctrl-C while waiting.
        """
        ...


class SerialGrades:
    """Asks the questions one after another in the calling thread (``groundeval calibrate``, tests)."""

    def run(self, questions: Sequence[Question]) -> dict[str, Verdict | JudgeError]:
        """See ``GradeStage.run``."""
        out: dict[str, Verdict | JudgeError] = {}
        for question in questions:
            try:
                out[question.key] = question.ask()
            except JudgeError as exc:
                out[question.key] = exc
                break
        return out


def grade_case(task: Any, case: Case, truth: Any, parsed: Parsed, stage: GradeStage | None = None) -> Score:
    """Score one case, its judge's questions asked by ``stage`` when the task's scorer has any.

    A scorer with ``questions(case, truth, parsed) -> Sequence[Question]`` and
    ``score(case, truth, parsed, grades=...)`` is model-graded: its questions go to ``stage`` (the
    executor's, concurrent) or are asked in turn here, and its ``score`` reads the answers. Any
    other task is scored by ``task.score``.

    Raises:
        JudgeError: From the scorer (a question the judge's model failed).
        Exception: Whatever the task's scorer raised.
    """
    scorer = getattr(task, "scorer", None)
    questions = getattr(scorer, "questions", None)
    if not callable(questions) or getattr(scorer, "asks_model", True) is False:  # nothing a stage could overlap
        score: Score = task.score(case, truth, parsed)
        return score
    asked: Sequence[Question] = questions(case, truth, parsed)
    grades = (stage or SerialGrades()).run(asked)
    graded: Score = scorer.score(case, truth, parsed, grades=grades)  # type: ignore[union-attr]
    return graded


def role_usage(verdicts: Iterable[Verdict | JudgeError], *, role: str = "judge",
               costs_nothing: bool = False) -> dict[str, Any]:
    """What a judge's calls of one case cost, under the role's prefix, for the case's ``usage``.

    Args:
        verdicts: The case's verdicts and failures (a ``JudgeError`` counts as one call made,
            unless it was never asked: ``called`` False).
        role: The model's role (``models.base.ROLES``), the keys' prefix.
        costs_nothing: True for a judge that calls no model: then there is no usage at all.

    Returns:
        ``{role}_calls`` (calls made), ``{role}_cached`` (replies read from the cache),
        ``{role}_input_tokens``, ``{role}_output_tokens`` (tokens), ``{role}_cost_usd`` (USD, None
        when any call is unpriced); empty for a judge that costs nothing.
    """
    if costs_nothing:
        return {}
    calls = cached = input_tokens = output_tokens = 0
    costs: list[Any] = []
    for verdict in verdicts:
        if isinstance(verdict, JudgeError):
            calls += verdict.called
            continue
        if verdict.cached:
            cached += 1
            continue
        calls += 1
        input_tokens += int(verdict.usage.get("input_tokens") or 0)
        output_tokens += int(verdict.usage.get("output_tokens") or 0)
        costs.append(verdict.usage.get("cost_usd"))
    return {f"{role}_calls": calls, f"{role}_cached": cached, f"{role}_input_tokens": input_tokens,
            f"{role}_output_tokens": output_tokens, f"{role}_cost_usd": total_cost(costs) if costs else 0.0}

