"""``FhirModeTask``: a task whose record reaches the agent over FHIR REST (``--groundeval-fhir``).

It wraps the run's task and changes only what the agent is given and what is scored beside the
task's own figures:

* ``prompt``: the task's ``fhir_prompt(case)``: its instructions, with the record replaced by where
  it is served (``{fhir_base_url}`` and ``{fhir_patient}``, filled in per case by
  ``fhir.serving.FhirServingAgent``);
* ``context``: the task's context without the Bundle, plus the record to serve
  (``fhir_record``, taken out again before the agent is called) and its SHA-256
  (``fhir_record_sha256``, so a cached answer is reused only for the same served state);
* ``score_result``: the task's own parse and score of the answer, except on a task that writes
  (``fhir_writes``: the write task), where the answer is the resource the server holds after the
  agent stopped; then the retrieval figures from the access log (``scorers.fhir_access``), and a
  create, update or delete on a read task fails the case (MedAgentBench's rule).

A task serves over FHIR when it has ``fhir_record(case) -> Bundle dict``, ``fhir_prompt(case) ->
Prompt`` and ``fhir_used(case, truth) -> [Type/id...]`` (the resources its truth was derived
from); ``fhir_writes = "MedicationStatement"`` names the type a writing task's answer is. Every
other attribute (name, options, counterfactual twins, aggregate) is the wrapped task's, so a run
over FHIR and a run over the file compare case by case.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from groundeval.agent_io import AgentResult, Prompt
from groundeval.datasets import Case
from groundeval.errors import ConfigError
from groundeval.fhir.serving import RECORD_KEY, RECORD_SHA_KEY, record_sha256
from groundeval.scorers.fhir_access import FHIR_DIRECTIONS, FHIR_METRICS, with_fhir_access, written_answer
from groundeval.scorers.model_graded import GradeStage, grade_case
from groundeval.scoring import Direction, Metric, Parsed, Score
from groundeval.tasks.base import TEXT_PROMPT
from groundeval.tasks.fhir_record import FHIR_READ_NOTE, FHIR_WRITE_NOTE

__all__ = ["FHIR_READ_NOTE", "FHIR_WRITE_NOTE", "FhirModeTask", "serves_over_fhir"]

_SERVING = ("fhir_record", "fhir_prompt", "fhir_used")


def serves_over_fhir(task: Any) -> bool:
    """True when ``task`` has ``fhir_record``, ``fhir_prompt`` and ``fhir_used`` (see the module docstring)."""
    return all(callable(getattr(task, name, None)) for name in _SERVING)


class FhirModeTask:
    """The wrapped task, its record served over FHIR REST (see the module docstring).

    Args:
        task: The run's task; it must serve over FHIR (``serves_over_fhir``).
        mode: ``sandbox`` or the URL of the user's server (recorded; the serving is the agent side's).

    Raises:
        ConfigError: The task does not serve its record over FHIR.
    """

    lookups = None
    """No tool plan: the in-process tools' grounding does not apply to FHIR calls (retrieval does)."""

    def __init__(self, task: Any, mode: str) -> None:
        if not serves_over_fhir(task):
            from groundeval.registry.builtins import ANY_TASK  # every built-in task serves (tests/test_registry.py)

            raise ConfigError(
                f"--groundeval-fhir: the {getattr(task, 'name', task)} task does not serve its record over FHIR "
                f"(it needs {', '.join(_SERVING)}); drop the option or give a task that does "
                f"({', '.join(sorted(ANY_TASK))})"
            )
        self.inner = task
        self.mode = mode
        self.name: str = task.name
        self.default_agent: str = task.default_agent
        self.options = task.options

    def __getattr__(self, name: str) -> Any:
        # counterfactual, observe, perturbations, run_facts, scorer, case_files, load_case, check_case, claims...
        return getattr(self.inner, name)

    @property
    def writes(self) -> str | None:
        """The resource type a writing task's answer is (``MedicationStatement``), None for a read task."""
        value = getattr(self.inner, "fhir_writes", None)
        return value if isinstance(value, str) else None

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The task's metrics, then the retrieval metrics (``scorers.fhir_access.FHIR_METRICS``)."""
        return (*self.inner.metric_names, *FHIR_METRICS)

    @property
    def metric_directions(self) -> Mapping[str, Direction]:
        """The task's directions and the retrieval metrics'."""
        return {**FHIR_DIRECTIONS, **dict(getattr(self.inner, "metric_directions", None) or {})}

    @property
    def tools(self) -> tuple[str, ...]:
        """None in-process: the agent's tools are the FHIR REST API."""
        return ()

    @property
    def provides(self) -> frozenset[str]:
        """A text prompt only: no Bundle in the context, no in-process tools."""
        return frozenset({TEXT_PROMPT})

    def prompt(self, case: Case) -> Prompt:
        """The task's ``fhir_prompt``: instructions, and where the record is served instead of the record."""
        prompt: Prompt = self.inner.fhir_prompt(case)
        return prompt

    def context(self, case: Case) -> dict[str, Any]:
        """The task's context without ``bundle``, plus ``fhir_record`` (not copied) and ``fhir_record_sha256``."""
        inner = {k: v for k, v in self.inner.context(case).items() if k != "bundle"}
        record = self.inner.fhir_record(case)
        return {**inner, RECORD_KEY: record, RECORD_SHA_KEY: record_sha256(record)}

    def truth(self, case: Case) -> Any:
        """The task's own truth."""
        return self.inner.truth(case)

    def parse(self, case: Case, raw: str) -> Parsed:
        """The task's own parse (used for an agent that failed: its empty answer)."""
        parsed: Parsed = self.inner.parse(case, raw)
        return parsed

    def score(self, case: Case, truth: Any, parsed: Parsed) -> Score:
        """The task's own score (an agent that failed), with no retrieval figures."""
        score: Score = self.inner.score(case, truth, parsed)
        return score

    def score_result(
        self, case: Case, truth: Any, result: AgentResult, *, answered: bool = True,
        stage: GradeStage | None = None,
    ) -> tuple[Parsed, Score]:
        """Parse and score the whole result: the answer (or what the server holds), then retrieval and writes.

        Args:
            case: The case.
            truth: Its truth.
            result: The agent's result (``meta["fhir"]``: the serving's facts).
            answered: False for an agent that failed (the runner passes the failure's details as
                ``meta``): its answer is empty whatever the server holds, and its retrieval is
                scored from the calls it made (none when the facts are missing), so that failing
                never raises a retrieval mean.
            stage: The executor's score stage, which asks a model-graded scorer's questions
                (``scorers.model_graded.grade_case``); None asks them in turn.

        Raises:
            ValueError: The result carries no ``meta["fhir"]`` (a replayed answer made without
                ``--groundeval-fhir``) or one of another served record (a harness error).
        """
        facts = result.meta.get("fhir")
        if not answered:
            empty = self.inner.parse(case, "")
            score = self.inner.score(case, truth, empty)
            made = facts if isinstance(facts, Mapping) else {"calls": [], "writes": []}
            return empty, with_fhir_access(score, made, list(self.inner.fhir_used(case, truth)), writes=self.writes)
        if not isinstance(facts, Mapping):
            raise ValueError(
                "the answer carries no FHIR access log (meta['fhir']): it was not made over --groundeval-fhir "
                "(a replayed run record of a file run?); replay a run made with --groundeval-fhir"
            )
        expected = record_sha256(self.inner.fhir_record(case))
        if facts.get("record_sha256") != expected:
            raise ValueError(
                f"the answer was made on another served record (SHA-256 {facts.get('record_sha256')}, this case "
                f"serves {expected}): re-run the case instead of replaying it"
            )
        if self.writes is not None:
            parsed = written_answer(facts, self.writes, str(facts.get("patient") or ""))
            if not parsed.found:
                parsed = dataclasses.replace(parsed, value=self.inner.parse(case, "").value)
        else:
            parsed = self.inner.parse(case, result.text)
        score = grade_case(self.inner, case, truth, parsed, stage)
        used = list(self.inner.fhir_used(case, truth))
        return parsed, with_fhir_access(score, facts, used, writes=self.writes)

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """The task's own aggregate (the retrieval figures are the run's: ``records.fhir_figures``)."""
        result: dict[str, Metric] = self.inner.aggregate(metrics)
        return result
