"""The four dimension checks of the write task (rules: ``groundeval.tasks.write.scorer``).

Each ``check_*`` takes the parsed answer (a JSON dict) and the case's truth and returns a
``Check`` with the reasons it failed, each ``"<what>: expected <x>, got <y>"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundeval.fhir.bundle import RXNORM_SYSTEM, patient_reference_matches
from groundeval.tasks.write.r4b_raw_json import STATUS_CODES
from groundeval.terminology.systems import is_rxcui

__all__ = [
    "CODING_REASONS",
    "JSON",
    "Check",
    "Validator",
    "check_coding",
    "check_constraints",
    "check_schema",
    "dosages",
]

CODING_REASONS = ("display_mismatch", "wrong_drug", "not_in_catalog", "fabricated", "wrong_system", "missing")
"""Labels of a coding failure (``check_coding``), in report order."""

Validator = Callable[[Any], Mapping[str, Any]]
JSON = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Check:
    """The verdict on one dimension.

    Attributes:
        dimension: One of ``DIMENSIONS``.
        ok: True when the dimension passes.
        reasons: Why it failed, each ``"<what>: expected <x>, got <y>"``; empty when it passed.
        label: One word for why it failed, where the dimension has labels (coding:
            ``CODING_REASONS``); None when it passed.
        basis: How the dimension's figure was computed and the rules it was checked against
            (safety: the daily total, its arithmetic, the documented total and the ceiling with
            its source), pass or fail; None when there is no such figure.
    """

    dimension: str
    ok: bool
    reasons: list[str] = field(default_factory=list)
    label: str | None = None
    basis: str | None = None


# -- schema ----------------------------------------------------------------------------------

def check_schema(answer: JSON, validate: Validator, parse_error: str | None = None) -> Check:
    """Validate the answer as an R4B MedicationStatement.

    Args:
        answer: The parsed answer (``{}`` when nothing parsed).
        validate: ``validate_medication_statement`` or a stand-in returning
            ``{"ok": bool, "issues": [{"path", "problem", "fix", "severity"}]}``; only
            ``severity: "error"`` issues are given as reasons.
        parse_error: Why parsing found no answer, if it did not.
    """
    if not answer:
        why = parse_error or "empty answer"
        return Check("schema", False, [f"expected a MedicationStatement object, got none ({why})"])
    if answer.get("resourceType") != "MedicationStatement":
        got = answer.get("resourceType")
        return Check("schema", False, [f"resourceType: expected MedicationStatement, got {got!r}"])
    report = validate(dict(answer))
    if report.get("ok"):
        return Check("schema", True)
    issues = [i for i in report.get("issues") or [] if isinstance(i, Mapping)]
    errors = [i for i in issues if i.get("severity", "error") == "error"]
    # A coding error (an RxNorm OID, a non-digit RxCUI) is scored once, by the coding dimension.
    counted = [i for i in errors if i.get("kind") != "coding"]
    if errors and not counted:
        return Check("schema", True)
    reasons = []
    for issue in counted or issues:  # warnings (e.g. a text-only drug) are not why it failed
        fix = f" (fix: {issue['fix']})" if issue.get("fix") else ""
        reasons.append(f"{issue.get('path') or '(resource)'}: {issue.get('problem')}{fix}")
    return Check("schema", False, reasons or ["invalid R4B MedicationStatement"])


# -- coding ----------------------------------------------------------------------------------

def _concept(answer: JSON) -> tuple[JSON | None, str | None]:
    """The medication CodeableConcept, or None and why it could not be found."""
    concept = answer.get("medicationCodeableConcept")
    if isinstance(concept, Mapping):
        return concept, None
    ref = answer.get("medicationReference")
    if isinstance(ref, Mapping):
        target = str(ref.get("reference") or "")
        for res in answer.get("contained") or []:
            if not isinstance(res, Mapping) or target != f"#{res.get('id')}":
                continue
            if isinstance(res.get("code"), Mapping):
                return res["code"], None
        return None, f"medicationReference {target!r}: no contained Medication with a code"
    if "medication" in answer:
        return None, "got R5 'medication' (CodeableReference); R4B uses medicationCodeableConcept"
    return None, "got no medicationCodeableConcept"


def check_coding(answer: JSON, expected: JSON, catalog: Any = None) -> Check:
    """Check the drug code against ``expected`` (``{"rxcui", "display", "text"}``).

    Only the expected RxCUI under the RxNorm URI, with the catalog display, and no other RxNorm
    code, earns credit. The same coding repeated is neutral; the expected RxCUI repeated with
    another display is a contradiction (``display_mismatch``). The failure label (``Check.label``,
    one of ``CODING_REASONS``), first that applies: ``missing`` (no R4B medication concept, no
    code, or for an uncatalogued drug no text naming it), ``wrong_system`` (the expected code
    under another system, such as the RxNorm OID), then for the wrong RxNorm codes, the first
    that one of them earns: ``wrong_drug`` (a real RxCUI of another drug: the packaged RxNorm data,
    ``catalog``, holds it), ``fabricated`` (not an RxCUI at all: not of the form
    ``terminology.systems.RXCUI_PATTERN``, such as ``"RX-IBU-200"`` or ``"0310965"``),
    ``not_in_catalog`` (of an RxCUI's form, but outside the site catalog: a real code the site
    does not hold, or a number no concept has; the packaged data cannot tell which), then
    ``display_mismatch``.

    Args:
        answer: The parsed MedicationStatement.
        expected: The truth's ``medication``.
        catalog: Anything with ``get(rxcui)`` (``terminology.Catalog``: the packaged RxNorm
            data) to tell another drug from a code outside it; without it no code is
            ``wrong_drug``.
    """
    concept, problem = _concept(answer)
    if concept is None:
        return Check("coding", False, [f"medication: {problem}"], "missing")
    codings = [c for c in concept.get("coding") or [] if isinstance(c, Mapping)]
    coded = [c for c in codings if c.get("code") not in (None, "")]

    def known(code: object) -> bool:
        return catalog is not None and catalog.get(str(code)) is not None

    def other_label(codes: Sequence[object]) -> str:
        if any(known(c) for c in codes):
            return "wrong_drug"
        return "fabricated" if any(not is_rxcui(c) for c in codes) else "not_in_catalog"

    rxcui = expected.get("rxcui")
    if rxcui is None:
        reasons: list[str] = []
        labels: list[str] = []
        if coded:
            got = ", ".join(f"{c.get('system')}|{c.get('code')}" for c in coded)
            reasons.append(f"code: expected none (drug not in the catalog), got invented {got}")
            rx_codes = [c.get("code") for c in coded if c.get("system") == RXNORM_SYSTEM]
            labels.append(other_label(rx_codes) if rx_codes else "wrong_system")
        text = concept.get("text")
        want = str(expected.get("text") or "")
        if not isinstance(text, str) or want.casefold() not in text.casefold():
            reasons.append(f"text: expected to name {want!r}, got {text!r}")
            labels.insert(0, "missing")
        return Check("coding", not reasons, reasons, labels[0] if labels else None)
    rxnorm = [c for c in coded if c.get("system") == RXNORM_SYSTEM]
    hits = [c for c in rxnorm if str(c.get("code")) == rxcui]
    others = sorted({str(c.get("code")) for c in rxnorm} - {rxcui})
    if not hits:
        near = [c for c in coded if str(c.get("code")) == rxcui]
        if near:
            return Check("coding", False, [
                f"system: expected {RXNORM_SYSTEM}, got {near[0].get('system')!r}"], "wrong_system")
        if not rxnorm:
            shown = ", ".join(f"{c.get('system')}|{c.get('code')}" for c in coded)
            label = "wrong_system" if coded else "missing"
            return Check("coding", False, [
                f"RxCUI: expected {rxcui} ({expected.get('display')}), got no RxNorm code"
                + (f" ({shown})" if shown else "")], label)
        return Check("coding", False, [
            f"RxCUI: expected {rxcui} ({expected.get('display')}), got {', '.join(others)}"], other_label(others))
    if others:
        return Check("coding", False, [f"RxCUI: expected only {rxcui}, got also {', '.join(others)}"],
                     other_label(list(others)))
    # The codings are a set of labelled items (the rule of scorers.reconcile and scorers.extraction):
    # the right RxCUI repeated with the same display is neutral; repeated with another display it is a
    # contradiction, and the display counts as right only when every display given for it is.
    displays = list(dict.fromkeys(" ".join(str(h.get("display") or "").split()) for h in hits))
    if displays != [expected.get("display")]:
        got = " + ".join(repr(d) for d in displays) if len(displays) > 1 else repr(hits[0].get("display"))
        why = " (a contradiction: the same RxCUI with two displays)" if len(displays) > 1 else ""
        return Check("coding", False, [f"display: expected {expected.get('display')!r}, got {got}{why}"],
                     "display_mismatch")
    return Check("coding", True)


# -- constraints -----------------------------------------------------------------------------

def dosages(answer: JSON) -> list[JSON]:
    """The answer's ``dosage`` entries that are objects."""
    return [d for d in answer.get("dosage") or [] if isinstance(d, Mapping)]


def _as_needed(dosage: JSON) -> bool:
    concept = dosage.get("asNeededCodeableConcept")
    return dosage.get("asNeededBoolean") is True or isinstance(concept, Mapping)


def check_constraints(answer: JSON, truth: JSON) -> Check:
    """Check subject, status, dosage presence and the as-needed flag against ``truth``."""
    reasons: list[str] = []
    patient = truth["patient"]
    subject = answer.get("subject")
    ref = subject.get("reference") if isinstance(subject, Mapping) else None
    ref = ref if isinstance(ref, str) else None
    if not patient_reference_matches(ref, {"id": patient["id"]}, patient["full_url"]):
        malformed = ref is not None and ref.startswith("Patient/urn:")
        hint = " (malformed: an id cannot contain ':')" if malformed else ""
        pid = patient["id"]
        reasons.append(f"subject: expected urn:uuid:{pid} or Patient/{pid}, got {ref!r}{hint}")
    status = answer.get("status")
    if status != truth["status"]:
        note = "" if status in STATUS_CODES else " (not an R4B MedicationStatement status)"
        reasons.append(f"status: expected {truth['status']!r}, got {status!r}{note}")
    items = dosages(answer)
    expected = truth.get("dosage")
    if expected is None:
        if answer.get("dosage"):
            reasons.append("dosage: expected none (the note documents no dose), got a dosage")
    elif len(items) != 1:
        reasons.append(f"dosage: expected exactly 1 dosage, got {len(items)}")
    else:
        got = _as_needed(items[0])
        if got != expected["as_needed"]:
            reasons.append(f"as-needed: expected {expected['as_needed']}, got {got}")
    return Check("constraints", not reasons, reasons)
