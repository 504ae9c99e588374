"""Summary task: write a patient's handoff summary from the record, scored criterion by criterion.

Each case (``fixtures/summary/*.json``, made by ``scripts/make_summary.py``) is one patient's FHIR
Bundle, trimmed to what a summary draws on. The agent sees the Bundle (``prompt``; ``context`` has it
as ``"bundle"`` for tool-using agents) and writes plain text of at most ``max_words`` words. The
rubric is derived from the same Bundle at ``truth`` time (``tasks.summary.truth``); the scorer
decides each criterion by rule where text matching can and asks the judge (``--groundeval-judge``,
``tasks.summary.judge``) for the rest; the judge's measured reliability (its card,
``tasks.summary.calibration``) is printed beside the judged scores in every output.

Options (first-class flags ``--groundeval-judge``, ``--groundeval-judge-card``,
``--groundeval-max-words``, ``--groundeval-min-rubric-score``, with ini twins): see
``groundeval.registry.builtins.SUMMARY_OPTIONS``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from groundeval import check_cache
from groundeval.agent_io import Prompt
from groundeval.clinical.lab_thresholds import default_thresholds
from groundeval.datasets import Case
from groundeval.fhir.validation import OBSERVATION_CODES, check_bundle, check_name
from groundeval.options import TaskOption
from groundeval.records.scope import UNGATED_FACT
from groundeval.registry.builtins import SUMMARY_OPTIONS
from groundeval.scoring import Metric, Parsed
from groundeval.tasks.base import BaseTask
from groundeval.tasks.summary.card import find_card, reliability_metrics
from groundeval.tasks.summary.cases import has_record, read_case
from groundeval.tasks.summary.judge import Judge, make_judge
from groundeval.tasks.summary.prompt import system_prompt, user_prompt
from groundeval.tasks.summary.scorer import METRIC_NAMES, SummaryScorer
from groundeval.tasks.summary.truth import summary_rubric

__all__ = ["SUMMARY_READ_TOOLS", "SummaryTask"]

SUMMARY_READ_TOOLS: tuple[str, ...] = ("get_resources", "resolve_reference", "lookup_code", "get_observations")
"""The read-only FHIR tools a tool-using agent gets over the case's Bundle (``groundeval.fhir.read_tools``)."""



@functools.cache
def _system(max_words: int) -> str:
    return system_prompt(max_words)


@dataclass(frozen=True, slots=True)
class SummaryTask(BaseTask):
    """The handoff-summary task.

    Attributes:
        judge: The judge spec (``baseline``, a model spec, or ``package.module:attribute``).
        judge_card: Path of the judge card, or None for the packaged one of the same judge.
        judge_cache: Directory where a model judge keeps its replies, or None.
        max_words: Word limit of a summary.
        min_rubric_score: Rubric score a passing case reaches.
        call_options: The run's model-call policy (``max_retries``, ``timeout`` seconds:
            ``models.retry.call_policy_options``), which a model judge's calls keep as the agent's
            do; None: the model layer's defaults (``groundeval calibrate``, a task built in code).
    """

    name: ClassVar[str] = "summary"
    default_agent: ClassVar[str] = "claude"
    options: ClassVar[tuple[TaskOption, ...]] = SUMMARY_OPTIONS
    tools: ClassVar[tuple[str, ...]] = SUMMARY_READ_TOOLS
    bundle_in_context: ClassVar[bool] = True
    judge: str = "baseline"
    judge_card: str | None = None
    judge_cache: str | None = None
    max_words: int = 250
    min_rubric_score: float = 0.8
    call_options: Mapping[str, Any] | None = None
    scorer: Any = field(init=False, default=None)
    card: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        cache = None
        if self.judge_cache:
            from groundeval.models.cache_store import ResultCache

            cache = ResultCache(Path(self.judge_cache))
        judge = make_judge(self.judge, options=self.call_options, cache=cache)
        card, where = find_card(judge, Path(self.judge_card) if self.judge_card else None)
        object.__setattr__(self, "card", {"card": card, "source": where})
        metrics = reliability_metrics(judge, card)
        object.__setattr__(self, "scorer", SummaryScorer(
            judge, max_words=self.max_words, min_rubric_score=self.min_rubric_score,
            reliability=lambda: self._reliability(metrics),
        ))

    def _reliability(self, metrics: dict[str, Metric]) -> dict[str, Metric]:
        settings = self.judge_model.settings()
        return {**metrics, "judge_model": settings.get("model"), "judge_temperature": settings.get("temperature"),
                "judge_prompt_sha256": self.judge_model.prompt_sha256}

    def close(self) -> None:
        """Close the judge (a ``local/<gguf>`` judge stops its server); the session calls this at its end."""
        close = getattr(self.judge_model, "close", None)
        if callable(close):
            close()

    @property
    def judge_model(self) -> Judge:
        """The judge the scorer asks."""
        judge: Judge = self.scorer.judge
        return judge

    @property
    def grader_model(self) -> Any:
        """The model the judge asks (a ``models.base.Model``), or None for the rule-based judge.

        The task's declaration of its judge's model (as ``provider_model`` is an agent's): batch
        mode reads it to put the judge's calls in the agent's batches (``run.batch_mode``).
        """
        return getattr(self.scorer.judge, "model", None)

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Every per-case metric (``tasks.summary.scorer.METRIC_NAMES``)."""
        return METRIC_NAMES

    @classmethod
    def claims(cls, data: Mapping[str, Any]) -> bool:
        """A Bundle holding Conditions or MedicationRequests looks like a summary case (for hints)."""
        return has_record(data)

    def load_case(self, path: Path) -> Case:
        """Read a Bundle with exactly one Patient (the R4B check waits for the case to run).

        Raises:
            DatasetError: Invalid JSON, not a Bundle, or not exactly one Patient.
        """
        return read_case(path)

    def check_case(self, case: Case) -> None:
        """The whole Bundle as FHIR R4B and every Observation status in its value set, once per file's bytes.

        ``fhir.validation.check_bundle`` with ``OBSERVATION_CODES``, remembered by ``check_cache.check_once``.

        Raises:
            DatasetError: The first problems, located, with the fix.
        """
        check_cache.check_once(check_name(OBSERVATION_CODES), case.sha256,
                               lambda: check_bundle(case.data, case.source, OBSERVATION_CODES),
                               remember="counterfactual" not in case.meta)

    def prompt(self, case: Case) -> Prompt:
        """System: what a summary covers and its word limit; user: the Bundle JSON."""
        bundle = json.dumps(case.data, ensure_ascii=False, separators=(",", ":"), check_circular=False)
        return Prompt(system=_system(self.max_words), user=user_prompt(bundle))

    def context(self, case: Case) -> dict[str, Any]:
        """``{"bundle": <the case's Bundle>}`` for tool-using agents (not copied: the truth is derived first)."""
        return {"bundle": case.data}

    def fhir_record(self, case: Case) -> dict[str, Any]:
        """The Bundle served under ``--groundeval-fhir`` (``tasks.fhir_mode``): the case's own."""
        return dict(case.data)

    def fhir_prompt(self, case: Case) -> Prompt:
        """The system prompt as ever; the user turn says where the record is served."""
        from groundeval.tasks.fhir_record import FHIR_READ_NOTE

        del case
        return Prompt(system=_system(self.max_words), user=f"{FHIR_READ_NOTE}\n\nWrite the handoff summary.")

    def fhir_used(self, case: Case, truth: Any) -> list[str]:
        """The Patient and the Conditions, MedicationRequests and AllergyIntolerances the rubric is derived from."""
        del truth
        from groundeval.tasks.fhir_record import patient_of_record, resources_of

        return [*patient_of_record(case.data),
                *resources_of(case.data, ("Condition", "MedicationRequest", "AllergyIntolerance"))]

    def truth(self, case: Case) -> dict[str, Any]:
        """The rubric (``tasks.summary.truth.summary_rubric``).

        Raises:
            DatasetError: An Observation the labs table reads is malformed.
        """
        return summary_rubric(case.data, default_thresholds(), str(case.source))

    def parse(self, case: Case, raw: str) -> Parsed:
        """The summary is the text itself; an empty or blank text is no answer."""
        text = raw.strip()
        return Parsed(value=text, format_ok=bool(text), error=None if text else "empty summary", found=bool(text))

    def run_facts(self) -> dict[str, Any]:
        """The judge's settings and card, and ``UNGATED_FACT`` unless the judge is calibrated against people.

        Returns:
            ``{"judge": settings + prompt_sha256, "judge_card": {source, kappa, kappa_95ci, n, date,
            judge_identity, calibration_set}, "thresholds": ...}`` (plus ``ungated_verdicts``).
        """
        card = self.card["card"] or {}
        status = str(reliability_metrics(self.judge_model, self.card["card"])["judge_reliability"])
        ungated = {} if status.startswith("calibrated") else {
            UNGATED_FACT: f"the case verdicts rest on the judge {self.judge_model.spec}: {_status_words(status)}"}
        return {
            **ungated,
            "judge": self.judge_model.settings(),
            "judge_card": {"source": self.card["source"],
                           **{k: card.get(k) for k in ("kappa", "kappa_95ci", "n", "date", "judge_identity",
                                                       "calibration_set")}},
            "thresholds": default_thresholds().facts,
        }


def _status_words(status: str) -> str:
    """The status without its figures: ``judge unreliable for medication (kappa 0.00)``, ``judge not calibrated``."""
    for marker in (" (overall kappa ", " (kappa "):
        if marker in status:
            return status[:status.index(marker)]
    return status
