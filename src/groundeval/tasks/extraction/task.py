"""Extraction task: list a patient's active medications from a FHIR Bundle.

Each case is one Synthea (or user) Bundle with exactly one Patient. The agent sees the whole
Bundle JSON and answers with a JSON array of ``{"rxnorm_code", "display"}`` objects; the truth is
derived from the same Bundle by ``clinical.medication_list``; ``tasks.extraction.scorer`` compares them.

The Bundle is also in ``context(case)["bundle"]``, so a tool-using agent (``langgraph``,
``langgraph-fhir``) can read it through the read-only FHIR tools (``groundeval.fhir.read_tools``).
With the option ``bundle_in_prompt=false`` the prompt leaves the Bundle out and says where to read
it; the task then no longer provides ``text_prompt``, so a single-call agent is refused before
any case runs instead of answering every case blind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from groundeval import check_cache
from groundeval.agent_io import Prompt
from groundeval.clinical.medication_list import find_patient, medication_truth
from groundeval.datasets import Case, case_id_from_stem, load_json
from groundeval.errors import ConfigError
from groundeval.fhir.read_tools import READ_TOOLS
from groundeval.fhir.validation import MEDICATION_REQUEST_CODES, check_bundle, check_name
from groundeval.parsing import extract_json
from groundeval.registry.builtins import EXTRACTION_OPTIONS
from groundeval.scorers.grounding import LookupPlan
from groundeval.scoring import Direction, Metric, Parsed, Score
from groundeval.tasks.base import FHIR_BUNDLE, TEXT_PROMPT, TOOLS, BaseTask, TaskOption, is_manifest
from groundeval.tasks.common import patient_case_id, wrong_task_error
from groundeval.tasks.extraction import counterfactual as _counterfactual
from groundeval.tasks.extraction.lookups import lookup_plan
from groundeval.tasks.extraction.prompt import ANSWER_FORMAT, system_prompt
from groundeval.tasks.extraction.scorer import aggregate_medications, score_medications
from groundeval.tasks.fhir_only import record_access_of

__all__ = ["ANSWER_FORMAT", "TOOLS_NOTE", "ExtractionTask", "case_id_from_stem", "is_manifest"]

TOOLS_NOTE = (
    "The patient's Bundle is not pasted here: read it with your tools. get_resources lists the resources "
    "of one type (Patient, MedicationRequest, Medication), each with its entry fullUrl; resolve_reference "
    "follows a medicationReference (for a contained '#id', pass the request's id as parent_resource_id)."
)
"""The user turn's text instead of the Bundle when ``bundle_in_prompt`` is false."""


def _check_structure(bundle: dict[str, Any], path: Path) -> None:
    """Check the Bundle as FHIR R4B with its request codes (``fhir.validation.check_bundle``).

    Bad data must fail before the agent is called, naming the file and the field, not after an
    agent has been paid for an answer, and never by silently yielding an empty truth (an ``id``
    given as a number, a ``subject`` given as a string, ``coding`` given as an object, a
    misspelled ``resourceType``). The truth itself is derived once, right after, by
    ``execution.call.prepare``; a ``DatasetError`` it raises is an ``invalid_case`` too.

    Raises:
        DatasetError: The first few validation problems, with their locations.
    """
    check_bundle(bundle, path, MEDICATION_REQUEST_CODES)


def _is_answer(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, dict) and "rxnorm_code" in item for item in value
    )


@dataclass(frozen=True, slots=True)
class ExtractionTask(BaseTask):
    """The medication-extraction task.

    Attributes:
        min_f1: RxNorm F1 a case needs to pass, in [0, 1] (default 1.0).
        min_display_accuracy: Display accuracy a case needs to pass, in [0, 1] (default 1.0).
        case_ids: ``"name"`` (default): the file stem with a trailing UUID cut to 8 characters
            (``case_id_from_stem``), so the id is a prefix of the file name; ``"file"``: the
            whole file stem. Neither reads the Patient's name: on real data, name the files
            without patient names.
        bundle_in_prompt: True (default): the user prompt holds the Bundle JSON. False: it
            holds ``TOOLS_NOTE`` instead, and only a tool-using agent can answer.
    """

    name: ClassVar[str] = "extraction"
    default_agent: ClassVar[str] = "claude"
    options: ClassVar[tuple[TaskOption, ...]] = EXTRACTION_OPTIONS
    metric_names: ClassVar[tuple[str, ...]] = (
        "precision", "recall", "f1", "display_accuracy", "tp", "fp", "fn", "duplicates", "contradictions",
        "display_checked", "display_correct",
    )
    metric_directions: ClassVar[Mapping[str, Direction]] = {
        "fp": "lower", "fn": "lower", "duplicates": "lower", "contradictions": "lower", "display_checked": "none",
    }
    """Metrics for which higher is not better (``display_checked`` counts what could be checked)."""
    min_f1: float = 1.0
    min_display_accuracy: float = 1.0
    tools: ClassVar[tuple[str, ...]] = READ_TOOLS
    bundle_in_context: ClassVar[bool] = True
    case_ids: str = "name"
    bundle_in_prompt: bool = True
    perturbations: ClassVar[tuple[str, ...]] = _counterfactual.PERTURBATIONS
    """Counterfactual twins it makes (``--groundeval-counterfactual``; ``tasks.extraction.counterfactual``)."""

    def __post_init__(self) -> None:
        for field_name in ("min_f1", "min_display_accuracy"):
            value = getattr(self, field_name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{field_name} must be between 0 and 1, got {value!r}")
        if self.case_ids not in ("name", "file"):
            raise ConfigError(f"case_ids must be 'name' or 'file', got {self.case_ids!r}")

    def load_case(self, path: Path) -> Case:
        """Read a Bundle; the case id comes from the file name (see ``case_ids``).

        Only what collection needs: the JSON, the Bundle, its one Patient. The FHIR R4B checks
        wait for ``check_case``, when the case is about to run.

        Raises:
            DatasetError: Invalid JSON, not a Bundle, or not exactly one Patient.
        """
        bundle, digest = load_json(path)
        if not self.claims(bundle) and (other := wrong_task_error(bundle, path, self.name)) is not None:
            raise other
        patient, _ = find_patient(bundle, str(path))
        pid = str(patient.get("id") or digest)
        case_id = patient_case_id(patient, path, digest, self.case_ids)
        meta: dict[str, Any] = {
            "patient_id": pid, "deceased": "deceasedDateTime" in patient or bool(patient.get("deceasedBoolean")),
        }
        if (access := record_access_of(path)) is not None:  # a whole record: served over FHIR only
            meta["record_access"] = access
        return Case(case_id=case_id, source=path, sha256=digest, data=bundle, meta=meta)

    def check_case(self, case: Case) -> None:
        """Validate the Bundle as FHIR R4B and check its requests' status and intent codes.

        About 5 ms a trimmed fixture (plus about 0.3 s to import the R4B models, once per process); a file
        whose bytes passed under the same code is not checked again (``check_cache.check_once``), by this
        task or by the reconcile task for a case that pins the file.

        Raises:
            DatasetError: The first few validation problems, with their locations and the fix.
        """
        # a twin's changed Bundle says nothing of the file's bytes: its pass is not remembered
        check_cache.check_once(check_name(MEDICATION_REQUEST_CODES), case.sha256,
                               lambda: _check_structure(case.data, case.source),
                               remember="counterfactual" not in case.meta)

    @classmethod
    def claims(cls, data: Mapping[str, Any]) -> bool:
        """A FHIR Bundle is an extraction case (for other tasks' wrong-task hints)."""
        return data.get("resourceType") == "Bundle"

    @property
    def provides(self) -> frozenset[str]:
        """``text_prompt`` (unless ``bundle_in_prompt`` is false), ``tools`` and ``fhir_bundle``."""
        return frozenset({*((TEXT_PROMPT,) if self.bundle_in_prompt else ()), TOOLS, FHIR_BUNDLE})

    def prompt(self, case: Case) -> Prompt:
        """System: instructions and a worked example (``extraction_prompt``); user: the Bundle.

        With ``bundle_in_prompt=false`` the user turn is ``TOOLS_NOTE`` and the answer format;
        the system prompt is the same either way (its rules and worked example still apply).
        """
        if not self.bundle_in_prompt:
            return Prompt(system=system_prompt(), user=f"{TOOLS_NOTE}\n\nAnswer format: {ANSWER_FORMAT}")
        bundle = json.dumps(case.data, ensure_ascii=False, separators=(",", ":"), check_circular=False)
        return Prompt(system=system_prompt(), user=f"Bundle:\n{bundle}\n\nAnswer format: {ANSWER_FORMAT}")

    def context(self, case: Case) -> dict[str, Any]:
        """``{"bundle": <the case's Bundle as JSON>}``: the loaded dict itself, not a copy.

        Not copied because a deep copy of a raw Synthea Bundle costs about 0.25 s (4 MB) on every
        case of every agent. An agent that edits it cannot change its own score: the runner
        derives the truth before the agent runs (``execution.call.prepare``), and the run record's
        ``fixture_sha256`` is of the file's bytes. A later trial of the same case would see the
        edits, so agents must still treat the context as read-only (the read tools do).
        """
        return {"bundle": case.data}

    def fhir_record(self, case: Case) -> dict[str, Any]:
        """The Bundle served under ``--groundeval-fhir`` (``tasks.fhir_mode``): the case's own."""
        return dict(case.data)

    def fhir_prompt(self, case: Case) -> Prompt:
        """The system prompt as ever; the user turn says where the record is served, then the format."""
        from groundeval.tasks.fhir_record import FHIR_READ_NOTE

        del case
        return Prompt(system=system_prompt(), user=f"{FHIR_READ_NOTE}\n\nAnswer format: {ANSWER_FORMAT}")

    def fhir_used(self, case: Case, truth: Any) -> list[str]:
        """The Patient (whose requests count) and the MedicationRequests behind the truth's active medications."""
        from groundeval.tasks.fhir_record import patient_of_record

        requests = sorted({f"MedicationRequest/{r}" for med in truth["medications"] for r in med["requests"]})
        return [*patient_of_record(case.data), *requests]

    def truth(self, case: Case) -> dict[str, Any]:
        """``{"medications": [TruthMedication...], "inactive_codes": {rxcui: [status...]}}``."""
        medications, inactive = medication_truth(case.data, str(case.source))
        return {"medications": medications, "inactive_codes": inactive}

    def counterfactual(self, case: Case, kind: str) -> Case | None:
        """The twin of ``case`` made by perturbation ``kind`` (``tasks.extraction.counterfactual``), or None."""
        return _counterfactual.counterfactual(case, kind)

    def observe(self, probe: Mapping[str, Any], parsed: Any) -> dict[str, bool]:
        """``{rxcui: listed?}`` of an answer for a twin's probe (``tasks.extraction.counterfactual.observe``)."""
        return _counterfactual.observe(probe, parsed)

    def lookups(self, case: Case, truth: Any, parsed: Parsed) -> LookupPlan:
        """What a tool-using agent's trace is checked for (``tasks.extraction.lookups``, ``scorers.grounding``)."""
        del truth
        return lookup_plan(case, parsed.value)

    def parse(self, case: Case, raw: str) -> Parsed:
        """Parse a JSON array of ``{"rxnorm_code", "display"}``; see ``groundeval.parsing``."""
        parsed = extract_json(raw, "[", _is_answer, [])
        items = [
            {"rxnorm_code": None if i.get("rxnorm_code") is None else str(i["rxnorm_code"]),
             "display": i.get("display") if isinstance(i.get("display"), str) else ""}
            for i in parsed.value
        ]
        return Parsed(value=items, format_ok=parsed.format_ok, error=parsed.error, found=parsed.found)

    def score(self, case: Case, truth: Any, parsed: Parsed) -> Score:
        """Delegate to ``score_medications`` with this task's thresholds.

        A parse problem (no list found, or one recovered from prose) leads the failure text.
        """
        score = score_medications(
            truth["medications"],
            parsed.value,
            min_f1=self.min_f1,
            min_display_accuracy=self.min_display_accuracy,
            inactive=truth["inactive_codes"],
            found=parsed.found,
        )
        score = replace(score, metrics={**score.metrics, "format_ok": parsed.format_ok})
        if not parsed.found:
            # No list at all is not the answer "none": even with no active medication it fails.
            message = f"answer format: {parsed.error}; an answer without a JSON array cannot pass"
            return replace(score, message=f"{message}\n{score.message}".strip())
        if parsed.error and score.message:
            return replace(score, message=f"answer format: {parsed.error}\n{score.message}")
        return score

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """Micro/macro precision, recall, F1, display accuracy; n/a skipped per metric; counts.

        See ``aggregate_medications``: macro means skip n/a values metric by metric; micro pools
        tp/fp/fn; plus ``format_not_ok``, ``duplicates`` and ``cases_with_duplicates``.
        """
        return aggregate_medications(metrics)
