"""A task written from outside groundeval: a patient's active conditions, on SNOMED CT codes.

Cases: Synthea Bundles cut to Patient + Condition (``make_fixtures.py``). Truth: the SNOMED CT
codes (picked by system) of the Patient's Conditions whose ``clinicalStatus`` is active or its
sub-codes recurrence/relapse (https://terminology.hl7.org/CodeSystem-condition-clinical.html)
and whose ``verificationStatus`` is not refuted or entered-in-error
(https://terminology.hl7.org/CodeSystem-condition-ver-status.html). See README.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from groundeval import (
    SNOMED_SYSTEM,
    AgentConfig,
    AgentRequest,
    AgentResult,
    BaseTask,
    Case,
    CodeSetScorer,
    DatasetError,
    Parsed,
    Prompt,
    TaskOption,
    codings_by_system,
    entry_resources,
    extract_json,
    find_patient,
    load_json,
    patient_case_id,
    patient_reference_matches,
    unit_interval,
    validate_entries,
    wrong_task_error,
)

CLINICAL = "http://terminology.hl7.org/CodeSystem/condition-clinical"
VERIFICATION = "http://terminology.hl7.org/CodeSystem/condition-ver-status"
ACTIVE = frozenset({"active", "recurrence", "relapse"})
NOT_TRUE = frozenset({"refuted", "entered-in-error"})
CLINICAL_CODES = ACTIVE | {"inactive", "remission", "resolved"}

SYSTEM = """You list a patient's active conditions from a FHIR R4 Bundle.
A condition is active when Condition.clinicalStatus is active, recurrence or relapse and its
verificationStatus is not refuted or entered-in-error. Give each one's SNOMED CT code
(system http://snomed.info/sct) exactly as coded in the Bundle, each code once.
Answer with only a JSON array, no prose: [{"snomed_code": "<code>", "display": "<display>"}].
An empty array means no active condition."""


def _codes(concept: Any, system: str) -> set[str]:
    return {c.code for c in codings_by_system(concept, system)}


def active_conditions(bundle: dict[str, Any], source: str) -> list[str]:
    """Sorted SNOMED CT codes of the Patient's active, not refuted conditions."""
    patient, full_url = find_patient(bundle, source)
    codes: set[str] = set()
    for condition in entry_resources(bundle, "Condition"):
        subject = (condition.get("subject") or {}).get("reference")
        if not patient_reference_matches(subject, patient, full_url):
            continue
        if _codes(condition.get("clinicalStatus"), CLINICAL) & ACTIVE and not (
            _codes(condition.get("verificationStatus"), VERIFICATION) & NOT_TRUE
        ):
            codes |= _codes(condition.get("code"), SNOMED_SYSTEM)
    return sorted(codes)


def _is_answer(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(i, dict) and "snomed_code" in i for i in value)


@dataclass(frozen=True, slots=True)
class ConditionsTask(BaseTask):
    """Active conditions of one patient, scored on SNOMED CT codes (precision, recall, F1)."""

    name: ClassVar[str] = "conditions"
    default_agent: ClassVar[str] = "claude"
    data_dir: ClassVar[Path | None] = Path(__file__).resolve().parent / "fixtures"
    options: ClassVar[tuple[TaskOption, ...]] = (
        TaskOption("min_f1", unit_interval, 1.0, "SNOMED CT F1 a case needs to pass.", "X"),
    )
    min_f1: float = 1.0

    @property
    def scorer(self) -> CodeSetScorer:
        return CodeSetScorer(min_f1=self.min_f1, label="SNOMED CT code")

    @classmethod
    def claims(cls, data: Mapping[str, Any]) -> bool:
        return data.get("resourceType") == "Bundle"

    def load_case(self, path: Path) -> Case:
        bundle, digest = load_json(path)
        if not self.claims(bundle) and (other := wrong_task_error(bundle, path, self.name)) is not None:
            raise other
        patient, _ = find_patient(bundle, str(path))
        validate_entries(bundle, ("Patient", "Condition"), path)  # R4B shapes, problems located
        for condition in entry_resources(bundle, "Condition"):  # a required binding fhir.resources skips
            if not _codes(condition.get("clinicalStatus"), CLINICAL) <= CLINICAL_CODES:
                raise DatasetError(str(path), f"Condition/{condition.get('id')} clinicalStatus is not one of "
                                   f"{', '.join(sorted(CLINICAL_CODES))} ({CLINICAL})")
        case_id = patient_case_id(patient, path, digest)
        return Case(case_id=case_id, source=path, sha256=digest, data=bundle, meta={"patient_id": patient.get("id")})

    def prompt(self, case: Case) -> Prompt:
        bundle = json.dumps(case.data, ensure_ascii=False, separators=(",", ":"))
        return Prompt(system=SYSTEM, user=f"Bundle:\n{bundle}")

    def truth(self, case: Case) -> list[str]:
        return active_conditions(case.data, str(case.source))

    def parse(self, case: Case, raw: str) -> Parsed:
        parsed = extract_json(raw, "[", _is_answer, [])
        codes = [str(item["snomed_code"]) for item in parsed.value]
        return Parsed(value=codes, format_ok=parsed.format_ok, error=parsed.error, found=parsed.found)


class BaselineConditionsAgent:
    """Rule-based reader of the Bundle in the prompt, on fhir.resources R4B models (no model)."""

    name = "conditions-baseline"
    model: str | None = None
    tasks = frozenset({"conditions"})
    every_condition = False

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config

    def run(self, request: AgentRequest) -> AgentResult:
        from fhir.resources.R4B.bundle import Bundle

        text = request.prompt.user
        bundle = Bundle.model_validate(json.JSONDecoder().raw_decode(text, text.index("{"))[0])
        answer = []
        for entry in bundle.entry or []:
            res: Any = entry.resource  # type: ignore[attr-defined]
            if type(res).__name__ != "Condition":
                continue
            clinical = {c.code for c in (res.clinicalStatus.coding if res.clinicalStatus else [])}
            verified = {c.code for c in (res.verificationStatus.coding if res.verificationStatus else [])}
            if self.every_condition or (clinical & ACTIVE and not verified & NOT_TRUE):
                answer += [{"snomed_code": c.code, "display": c.display}
                           for c in res.code.coding or [] if c.system == SNOMED_SYSTEM]
        # rule-based: no model call, nothing spent (as the built-in baselines say it)
        return AgentResult(text=json.dumps(answer), usage={"model_calls": 0, "cost_usd": 0.0})


class NaiveConditionsAgent(BaselineConditionsAgent):
    """Negative control: lists every condition ever recorded, resolved ones included."""

    name = "conditions-naive"
    every_condition = True
