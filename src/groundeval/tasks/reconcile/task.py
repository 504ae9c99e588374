"""Reconcile task: set a patient's admission report beside the FHIR record and name each discrepancy.

Each case (``fixtures/reconcile/*.json``, schema in ``tasks.reconcile.cases``, written by
``scripts/make_reconcile.py``) is a patient's Bundle (a pinned reference to an extraction fixture)
and what the patient says they take, as text and as structured content. The agent sees the
Bundle and the text (``prompt``; ``context`` has the Bundle as ``"bundle"`` and the text as
``"report"`` for tool-using agents), answers a JSON list of ``{"rxnorm_code", "display",
"status"}`` (``tasks.reconcile.prompt.ANSWER_FORMAT``); the truth is computed at ``truth`` time
from the record and the structured report by ``tasks.reconcile.truth`` (never read from the
file); ``tasks.reconcile.scorer`` scores it.

This task is built in but uses only what an outside task could: ``BaseTask``, a scorer with
``metric_names``/``score``/``aggregate``, ``Parsed``, ``Score``, ``Prompt``, ``extract_json``,
``load_json``, the extraction truth (``clinical.medication_list``) and the site catalog.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from groundeval import check_cache
from groundeval.agent_io import Prompt
from groundeval.datasets import Case, load_json
from groundeval.errors import ConfigError, DatasetError
from groundeval.fhir.read_tools import READ_TOOLS
from groundeval.fhir.validation import MEDICATION_REQUEST_CODES, check_bundle, check_name
from groundeval.parsing import extract_json
from groundeval.scorers.grounding import LookupPlan
from groundeval.scoring import Parsed
from groundeval.tasks.base import BaseTask, TaskOption, unit_interval
from groundeval.tasks.common import (
    describe_validation_error,
    find_bundle_file,
    find_patient,
    wrong_task_error,
)
from groundeval.tasks.reconcile import counterfactual as _counterfactual
from groundeval.tasks.reconcile.cases import ReconcileCase
from groundeval.tasks.reconcile.lookups import lookup_plan
from groundeval.tasks.reconcile.prompt import ANSWER_FORMAT, system_prompt, user_prompt
from groundeval.tasks.reconcile.scorer import METRIC_NAMES, ReconcileScorer
from groundeval.tasks.reconcile.truth import STATUSES, reconcile_truth

__all__ = ["ANSWER_FORMAT", "RECONCILE_OPTIONS", "ReconcileTask"]

RECONCILE_OPTIONS: tuple[TaskOption, ...] = (
    TaskOption("min_f1", unit_interval, 1.0, "Reconcile: discrepancy F1 and matched F1 a case needs to pass.", "X"),
)


@functools.cache
def _catalog_displays() -> dict[str, str]:
    """RxCUI -> display of the site catalog (the formulary shown in the prompt), read once."""
    from groundeval.terminology import Catalog

    return {e.rxcui: e.display for e in Catalog.load().entries}


@functools.cache
def _fixture_bundle(path: Path) -> tuple[dict[str, Any], str]:
    """A referenced Bundle and its SHA-256, read once per process (cases share patients)."""
    return load_json(path)


def _resolve_fixture(case_path: Path, name: str) -> Path:
    return find_bundle_file(
        case_path, name, "fixture.file", "name an extraction fixture there or give the Bundle inline as 'bundle'"
    )


def _is_answer(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, dict) and "rxnorm_code" in item and "status" in item for item in value
    )


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True, slots=True)
class ReconcileTask(BaseTask):
    """The medication-reconciliation task.

    Attributes:
        min_f1: Discrepancy F1 and matched F1 a case needs to pass, in [0, 1] (default 1.0).
    """

    name: ClassVar[str] = "reconcile"
    default_agent: ClassVar[str] = "claude"
    options: ClassVar[tuple[TaskOption, ...]] = RECONCILE_OPTIONS
    tools: ClassVar[tuple[str, ...]] = READ_TOOLS
    """The read-only FHIR tools over ``context["bundle"]`` (``groundeval.fhir.read_tools``)."""
    bundle_in_context: ClassVar[bool] = True
    perturbations: ClassVar[tuple[str, ...]] = _counterfactual.PERTURBATIONS
    """Counterfactual twins it makes (``--groundeval-counterfactual``; ``tasks.reconcile.counterfactual``)."""
    min_f1: float = 1.0
    scorer: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_f1 <= 1.0:
            raise ConfigError(f"min_f1 must be between 0 and 1, got {self.min_f1!r}")
        object.__setattr__(self, "scorer", ReconcileScorer(self.min_f1))

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Every per-case metric (``tasks.reconcile.scorer.METRIC_NAMES``)."""
        return METRIC_NAMES

    @classmethod
    def claims(cls, data: Mapping[str, Any]) -> bool:
        """A JSON object with a ``report`` and a ``fixture`` or ``bundle`` is a reconcile case."""
        return isinstance(data.get("report"), dict) and ("fixture" in data or "bundle" in data)

    def load_case(self, path: Path) -> Case:
        """Read a case file and resolve its Bundle; the R4B check and the truth wait for ``check_case``.

        Raises:
            DatasetError: Invalid JSON or schema, an id that is not the file stem, a fixture that is
                missing or whose SHA-256 differs from the pinned one, or a Bundle without exactly
                one Patient.
        """
        data, digest = load_json(path)
        if not self.claims(data) and (other := wrong_task_error(data, path, self.name)) is not None:
            raise other
        try:
            spec = ReconcileCase.model_validate(data)
        except ValidationError as exc:
            raise DatasetError(str(path), f"not a reconcile case: {describe_validation_error(exc)}") from None
        if spec.id != path.stem:
            raise DatasetError(str(path), f"id {spec.id!r} differs from the file name; name the file {spec.id}.json")
        bundle_file: str | None = None
        if spec.fixture is not None:
            found = _resolve_fixture(path, spec.fixture.file)
            bundle, bundle_sha = _fixture_bundle(found)
            bundle_file = str(found)
            if bundle_sha != spec.fixture.sha256:
                raise DatasetError(
                    str(path), f"fixture {found} has SHA-256 {bundle_sha}, the case pins {spec.fixture.sha256}; "
                    "if the Bundle changed on purpose, pin its new SHA-256 in fixture.sha256 (the packaged cases: "
                    "regenerate them with scripts/make_reconcile.py)",
                )
        else:
            bundle, bundle_sha = dict(spec.bundle or {}), digest
        patient, _ = find_patient(bundle, str(path))
        items = [i.model_dump(exclude_none=True) for i in spec.report.items]  # a key left out is "not said"
        meta = {"patient_id": str(patient.get("id") or ""), "fixture": spec.fixture.file if spec.fixture else None,
                "bundle_sha256": bundle_sha, "transformations": [t.kind for t in spec.transformations]}
        branded = {t.rxnorm_code for t in spec.transformations if t.kind in ("brand_name", "brand_rxcui")}
        brands = [i["name"] for i in items if i.get("rxnorm_code") in branded]  # said by a brand name (provenance)
        case_data = {"bundle": bundle, "report": spec.report.text, "items": items, "bundle_file": bundle_file,
                     "brands": brands}
        return Case(case_id=spec.id, source=path, sha256=digest, data=case_data, meta=meta)

    def check_case(self, case: Case) -> None:
        """Check the case's Bundle (inline or pinned fixture) as the extraction task does.

        The whole Bundle must be valid FHIR R4B and its MedicationRequests' status and intent codes
        of their value sets (``fhir.validation.check_bundle``); a pinned fixture's SHA-256 was checked
        at load, which says it is the file the case was made from, not that the file is valid.
        Runs when the case is about to run, before its truth and agent call (``BaseTask.check_case``;
        the truth is derived once, by ``execution.call.prepare``). A pass is remembered (``check_cache.check_once``) by
        the pinned fixture's SHA-256, so the cases that pin one Bundle, and the extraction task's
        check of that file, share one verdict; an inline Bundle's by the case file's SHA-256. A
        counterfactual twin reuses its file's verdict and never records one of its own.

        Raises:
            DatasetError: The Bundle is not valid R4B or a request code is outside its value set.
        """
        path = case.source
        pinned = case.data.get("bundle_file")
        # a pinned fixture: the verdict on its bytes (shared by every case that pins it, and by the
        # extraction task's check of the same file); an inline Bundle: the verdict on the case file
        check, digest = (check_name(MEDICATION_REQUEST_CODES), case.meta["bundle_sha256"]) if pinned \
            else ("reconcile", case.sha256)

        def run() -> None:
            try:
                check_bundle(case.data["bundle"], Path(pinned) if pinned else path, MEDICATION_REQUEST_CODES)
            except DatasetError as exc:
                if pinned:  # the bad data is in the pinned file: name it, and the case that pins it
                    raise DatasetError(exc.path, f"{exc.problem} (the Bundle that {path.name} pins)") from None
                raise

        # a twin's changed Bundle says nothing of the file's bytes: its pass is not remembered
        check_cache.check_once(check, digest, run, remember="counterfactual" not in case.meta)

    def prompt(self, case: Case) -> Prompt:
        """System: rules, format and formulary; user: the Bundle and the report text only."""
        bundle = json.dumps(case.data["bundle"], ensure_ascii=False, separators=(",", ":"), check_circular=False)
        return Prompt(system=system_prompt(sorted(_catalog_displays().items())),
                      user=user_prompt(bundle, case.data["report"]))

    def context(self, case: Case) -> dict[str, Any]:
        """``{"bundle": <the Bundle dict>, "report": <the report text>}`` for tool-using agents.

        The Bundle is a deep copy: cases of one patient share the loaded Bundle, and an agent that
        changed its copy must not change another case's truth.
        """
        return {"bundle": copy.deepcopy(case.data["bundle"]), "report": case.data["report"]}

    def fhir_record(self, case: Case) -> dict[str, Any]:
        """The Bundle served under ``--groundeval-fhir`` (``tasks.fhir_mode``): the one the case holds or pins."""
        return dict(case.data["bundle"])

    def fhir_prompt(self, case: Case) -> Prompt:
        """The system prompt as ever; the user turn: where the record is served, the report, the format."""
        from groundeval.tasks.fhir_record import FHIR_READ_NOTE
        from groundeval.tasks.reconcile.prompt import ANSWER_FORMAT, REPORT_CLOSE, REPORT_OPEN

        user = (f"{FHIR_READ_NOTE}\n\nPatient report at admission:\n{REPORT_OPEN}\n{case.data['report']}\n"
                f"{REPORT_CLOSE}\n\nAnswer format: {ANSWER_FORMAT}")
        return Prompt(system=system_prompt(sorted(_catalog_displays().items())), user=user)

    def fhir_used(self, case: Case, truth: Any) -> list[str]:
        """The Patient and each of its MedicationRequests: the truth reads each one's status and dose."""
        del truth
        from groundeval.tasks.fhir_record import patient_of_record, resources_of

        bundle = case.data["bundle"]
        return [*patient_of_record(bundle), *resources_of(bundle, ("MedicationRequest",))]

    def truth(self, case: Case) -> dict[str, Any]:
        """``{"entries": [TruthEntry...], "not_scored": [...]}`` (``tasks.reconcile.truth``)."""
        return reconcile_truth(case.data["bundle"], case.data["items"], _catalog_displays(), str(case.source))

    def counterfactual(self, case: Case, kind: str) -> Case | None:
        """The twin of ``case`` made by perturbation ``kind`` (``tasks.reconcile.counterfactual``), or None."""
        def truth(data: Mapping[str, Any]) -> dict[str, Any]:
            return reconcile_truth(data["bundle"], data["items"], _catalog_displays(), str(case.source))

        return _counterfactual.counterfactual(case, kind, truth, frozenset(_catalog_displays()))

    def observe(self, probe: Mapping[str, Any], parsed: Any) -> dict[str, str | None]:
        """``{drug: status the answer gives it}`` for a twin's probe (``tasks.reconcile.counterfactual.observe``)."""
        return _counterfactual.observe(probe, parsed)

    def lookups(self, case: Case, truth: Any, parsed: Parsed) -> LookupPlan:
        """What a tool-using agent's trace is checked for (``tasks.reconcile.lookups``, ``scorers.grounding``)."""
        del truth
        return lookup_plan(case.data["items"], parsed.value, case.data.get("brands") or ())

    def parse(self, case: Case, raw: str) -> Parsed:
        """Parse a JSON array of ``{"rxnorm_code", "display", "status", ...}`` (``extract_json``)."""
        parsed = extract_json(raw, "[", _is_answer, [])
        items = []
        for item in parsed.value:
            status = item.get("status")
            status = status.strip().lower() if isinstance(status, str) else None
            items.append({
                "rxnorm_code": None if item.get("rxnorm_code") is None else str(item["rxnorm_code"]).strip(),
                "display": item.get("display") if isinstance(item.get("display"), str) else "",
                "status": status if status in STATUSES else f"invalid: {item.get('status')!r}",
                "record_dose": _text(item.get("record_dose")),
                "reported_dose": _text(item.get("reported_dose")),
            })
        return Parsed(value=items, format_ok=parsed.format_ok, error=parsed.error, found=parsed.found)
