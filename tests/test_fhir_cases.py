"""Truth derivation on the inputs of fault case 01, 03 and 05, with their expected values."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from groundeval.clinical.medication_list import active_medications, find_patient
from groundeval.errors import DatasetError
from groundeval.fhir.bundle import BundleIndex, patient_reference_matches, rxnorm_codings
from groundeval.tasks.extraction.scorer import score_medications

RX = "http://www.nlm.nih.gov/research/umls/rxnorm"
PID = "00000000-0000-4000-8000-000000000001"
SUBJECT = {"reference": f"urn:uuid:{PID}"}
JSON = dict[str, Any]


def _entry(resource: JSON, full_url: str | None = None) -> JSON:
    entry: JSON = {"resource": resource}
    if full_url:
        entry["fullUrl"] = full_url
    return entry


# Case 01 input, verbatim in content.
CASE_01: JSON = {
    "resourceType": "Bundle", "type": "collection", "entry": [
        _entry({"resourceType": "Patient", "id": PID}, f"urn:uuid:{PID}"),
        _entry({"resourceType": "Medication", "id": "00000000-0000-4000-8000-0000000000a1", "status": "active",
                "code": {"coding": [{"system": RX, "code": "313782", "display": "Acetaminophen 325 MG Oral Tablet"}]}},
               "urn:uuid:00000000-0000-4000-8000-0000000000a1"),
        _entry({"resourceType": "MedicationRequest", "id": "mr-a", "status": "active", "intent": "order",
                "subject": SUBJECT,
                "medicationReference": {"reference": "urn:uuid:00000000-0000-4000-8000-0000000000a1"}},
               "urn:uuid:00000000-0000-4000-8000-0000000000b1"),
        _entry({"resourceType": "MedicationRequest", "id": "mr-b", "status": "active", "intent": "order",
                "contained": [{"resourceType": "Medication", "id": "medB", "code": {"coding": [
                    {"system": RX, "code": "213469", "display": "celecoxib 200 MG Oral Capsule [Celebrex]"},
                    {"system": RX, "code": "205323", "display": "celecoxib 200 MG Oral Capsule"}]}}],
                "subject": SUBJECT, "medicationReference": {"reference": "#medB"}},
               "urn:uuid:00000000-0000-4000-8000-0000000000b2"),
        _entry({"resourceType": "MedicationRequest", "id": "mr-c", "status": "active", "intent": "order",
                "contained": [{"resourceType": "Medication", "id": "medC", "code": {"text": "ondansetron 4 mg tablet"}}],
                "subject": SUBJECT, "medicationReference": {"reference": "#medC"}},
               "urn:uuid:00000000-0000-4000-8000-0000000000b3"),
        _entry({"resourceType": "MedicationRequest", "id": "mr-d", "status": "active", "intent": "order",
                "subject": SUBJECT,
                "medicationCodeableConcept": {"coding": [{"system": RX, "code": "310965", "display": "Ibuprofen 200 MG Oral Tablet"}]}},
               "urn:uuid:00000000-0000-4000-8000-0000000000b4"),
    ],
}


def test_case01_four_active_medications_through_every_reference_form() -> None:
    meds = active_medications(CASE_01)
    coded = {tuple(m["codes"]): m for m in meds if m["kind"] == "coded"}
    assert len(meds) == 4
    assert coded[("313782",)]["displays"]["313782"] == ["Acetaminophen 325 MG Oral Tablet"]
    assert coded[("205323", "213469")]["displays"] == {
        "213469": ["celecoxib 200 MG Oral Capsule [Celebrex]"], "205323": ["celecoxib 200 MG Oral Capsule"],
    }
    assert coded[("310965",)]["displays"]["310965"] == ["Ibuprofen 200 MG Oral Tablet"]
    uncoded = [m for m in meds if m["kind"] == "uncoded"]
    assert uncoded == [{"codes": [], "displays": {}, "text": "ondansetron 4 mg tablet", "kind": "uncoded", "requests": ["mr-c"]}]


def test_case01_codeable_concept_only_reader_scores_recall_one_quarter() -> None:
    truth = active_medications(CASE_01)
    answer = [{"rxnorm_code": "310965", "display": "Ibuprofen 200 MG Oral Tablet"}]
    score = score_medications(truth, answer)
    assert score.metrics["recall"] == pytest.approx(0.25)
    assert score.metrics["precision"] == 1.0
    assert score.outcome == "partial"


@pytest.mark.parametrize("code", ["213469", "205323"])
def test_case01_either_celecoxib_code_matches(code: str) -> None:
    truth = active_medications(CASE_01)
    display = {"213469": "celecoxib 200 MG Oral Capsule [Celebrex]", "205323": "celecoxib 200 MG Oral Capsule"}[code]
    answer: list[JSON] = [
        {"rxnorm_code": "313782", "display": "Acetaminophen 325 MG Oral Tablet"},
        {"rxnorm_code": code, "display": display},
        {"rxnorm_code": None, "display": "Ondansetron 4 mg tablet"},
        {"rxnorm_code": "310965", "display": "Ibuprofen 200 MG Oral Tablet"},
    ]
    score = score_medications(truth, answer, min_display_accuracy=0.0)
    assert score.metrics["tp"] == 4 and score.metrics["fp"] == 0 and score.metrics["fn"] == 0
    # The uncoded drug matches case-insensitively but its display is compared exactly.
    assert score.metrics["display_correct"] == 3


def test_case01_code_for_uncoded_drug_is_unverifiable_not_correct() -> None:
    truth = active_medications(CASE_01)
    answer = [{"rxnorm_code": "312086", "display": "ondansetron 4 MG Oral Tablet"}]
    score = score_medications(truth, answer)
    assert score.metrics["tp"] == 0 and score.metrics["fp"] == 1
    assert score.details["extra"][0]["note"].startswith("unverifiable")


def test_case01_variant_e_unresolvable_reference_is_kept_unresolved_and_never_raises() -> None:
    bundle = copy.deepcopy(CASE_01)
    bundle["entry"].append(_entry({
        "resourceType": "MedicationRequest", "id": "mr-e", "status": "active", "intent": "order",
        "subject": SUBJECT, "medicationReference": {"reference": "Medication/does-not-exist"}}))
    meds = active_medications(bundle)
    unresolved = [m for m in meds if m["kind"] == "unresolved"]
    assert [m["text"] for m in unresolved] == ["Medication/does-not-exist"]
    # Unresolved entries are not scored: a perfect answer for the other four still passes.
    answer: list[JSON] = [
        {"rxnorm_code": "313782", "display": "Acetaminophen 325 MG Oral Tablet"},
        {"rxnorm_code": "213469", "display": "celecoxib 200 MG Oral Capsule [Celebrex]"},
        {"rxnorm_code": None, "display": "ondansetron 4 mg tablet"},
        {"rxnorm_code": "310965", "display": "Ibuprofen 200 MG Oral Tablet"},
    ]
    assert score_medications(meds, answer).outcome == "passed"


# Case 03: NDC first, branded RxNorm second, generic RxNorm without display third.
CASE_03_CONCEPT: JSON = {
    "coding": [
        {"system": "http://hl7.org/fhir/sid/ndc", "code": "99999-9999-99", "display": "SYNTHETIC NDC placeholder"},
        {"system": RX, "code": "209387", "display": "Acetaminophen 325 MG Oral Tablet [Tylenol]"},
        {"system": RX, "code": "313782"},
    ],
    "text": "Tylenol 325 mg tablet",
}


def _case03_bundle(system: str = RX, *, with_lookup: bool = False) -> JSON:
    concept = copy.deepcopy(CASE_03_CONCEPT)
    for coding in concept["coding"][1:]:
        coding["system"] = system
    entries = [
        _entry({"resourceType": "Patient", "id": "pt-001"}, "urn:uuid:pt-001"),
        _entry({"resourceType": "MedicationRequest", "id": "mr-multi", "status": "active", "intent": "order",
                "subject": {"reference": "Patient/pt-001"}, "medicationCodeableConcept": concept}),
    ]
    if with_lookup:  # another request in the same bundle gives 313782 its display
        entries.append(_entry({"resourceType": "MedicationRequest", "id": "mr-old", "status": "completed",
                               "intent": "order", "subject": {"reference": "Patient/pt-001"},
                               "medicationCodeableConcept": {"coding": [{"system": RX, "code": "313782",
                                                                         "display": "Acetaminophen 325 MG Oral Tablet"}]}}))
    return {"resourceType": "Bundle", "type": "collection", "entry": entries}


def test_case03_rxnorm_picked_by_system_never_the_ndc() -> None:
    (med,) = active_medications(_case03_bundle())
    assert med["codes"] == ["209387", "313782"]
    assert "99999-9999-99" not in med["codes"]


def test_case03_missing_display_filled_from_text_never_empty() -> None:
    (med,) = active_medications(_case03_bundle())
    assert med["displays"]["313782"] == ["Tylenol 325 mg tablet"]
    assert med["displays"]["209387"] == ["Acetaminophen 325 MG Oral Tablet [Tylenol]"]


def test_case03_missing_display_is_never_borrowed_from_another_request() -> None:
    # The completed request's display for 313782 is not this request's: its own text stays the truth.
    (med,) = active_medications(_case03_bundle(with_lookup=True))
    assert med["displays"]["313782"] == ["Tylenol 325 mg tablet"]


def test_a_coding_with_neither_display_nor_text_is_not_display_checked() -> None:
    bundle = _case03_bundle(with_lookup=True)
    concept = bundle["entry"][1]["resource"]["medicationCodeableConcept"]
    del concept["text"]
    (med,) = active_medications(bundle)
    assert med["displays"]["313782"] == []
    score = score_medications([med], [{"rxnorm_code": "313782", "display": "Acetaminophen 325 MG Oral Tablet"}])
    assert score.metrics["display_checked"] == 0 and score.metrics["display_accuracy"] is None


def test_two_displays_for_one_rxcui_on_active_requests_are_both_accepted() -> None:
    bundle = copy.deepcopy(CASE_01)
    refill = copy.deepcopy(bundle["entry"][-1])
    refill["resource"]["id"] = "mr-d2"
    refill["resource"]["medicationCodeableConcept"]["coding"][0]["display"] = "ibuprofen 200 MG Oral Tablet"
    bundle["entry"].append(refill)
    (ibuprofen,) = [m for m in active_medications(bundle) if m["codes"] == ["310965"]]
    assert ibuprofen["displays"]["310965"] == ["Ibuprofen 200 MG Oral Tablet", "ibuprofen 200 MG Oral Tablet"]
    for shown in ibuprofen["displays"]["310965"]:
        score = score_medications([ibuprofen], [{"rxnorm_code": "310965", "display": shown}])
        assert score.metrics["display_accuracy"] == 1.0, shown
    wrong = score_medications([ibuprofen], [{"rxnorm_code": "310965", "display": "IBUPROFEN 200 MG Oral Tablet"}])
    assert wrong.metrics["display_accuracy"] == 0.0
    assert "'Ibuprofen 200 MG Oral Tablet' or 'ibuprofen 200 MG Oral Tablet'" in wrong.message


@pytest.mark.parametrize("code", ["209387", "313782"])
def test_case03_branded_or_generic_code_is_a_hit(code: str) -> None:
    truth = active_medications(_case03_bundle())
    score = score_medications(truth, [{"rxnorm_code": code, "display": "x"}], min_display_accuracy=0.0)
    assert score.metrics["tp"] == 1 and score.metrics["f1"] == 1.0


def test_case03_variant_oid_system_is_accepted_as_rxnorm() -> None:
    (med,) = active_medications(_case03_bundle("urn:oid:2.16.840.1.113883.6.88"))
    assert med["codes"] == ["209387", "313782"]


def test_rxnorm_codings_skip_other_systems_and_empty_codes() -> None:
    concept = {"coding": [{"system": "http://snomed.info/sct", "code": "1"}, {"system": RX, "code": " "},
                          {"system": RX, "code": "42", "display": "  "}]}
    assert [(c.code, c.display) for c in rxnorm_codings(concept)] == [("42", None)]


# Case 05: subject reference forms.
PATIENT = {"resourceType": "Patient", "id": PID}


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (f"urn:uuid:{PID}", True),  # a
        (f"Patient/{PID}", True),  # b
        (f"Patient/urn:uuid:{PID}", False),  # c: malformed, an id cannot contain ':'
        ("Patient/pt-999", False),  # d: wrong patient
        (None, False),  # e: display-only subject
        # An absolute reference resolves only to the entry with that fullUrl (R4 bundle.html#references).
        (f"https://example.org/fhir/Patient/{PID}", False),
        (f"Practitioner/{PID}", False),
    ],
)
def test_case05_subject_reference_forms(reference: str | None, expected: bool) -> None:
    assert patient_reference_matches(reference, PATIENT, f"urn:uuid:{PID}") is expected


@pytest.mark.parametrize(
    ("reference", "full_url", "expected"),
    [
        (f"https://example.org/fhir/Patient/{PID}", f"https://example.org/fhir/Patient/{PID}", True),
        (f"urn:uuid:{PID}", f"https://example.org/fhir/Patient/{PID}", False),  # fullUrl is not urn:uuid
        (f"urn:uuid:{PID}", None, False),  # no fullUrl: nothing for an absolute reference to match
        (f"Patient/{PID}", None, True),
    ],
)
def test_absolute_subjects_match_only_the_patient_fullurl(reference: str, full_url: str | None, expected: bool) -> None:
    assert patient_reference_matches(reference, PATIENT, full_url) is expected


def _with_request(**changes: object) -> dict[str, Any]:
    """CASE_01 with the ibuprofen request (the last entry) changed."""
    bundle = copy.deepcopy(CASE_01)
    bundle["entry"][-1]["resource"].update(changes)
    return bundle


def _has_ibuprofen(bundle: dict[str, Any]) -> bool:
    return any(m["codes"] == ["310965"] for m in active_medications(bundle))


def test_do_not_perform_true_is_a_prohibition_not_a_prescription() -> None:
    assert not _has_ibuprofen(_with_request(doNotPerform=True))
    assert _has_ibuprofen(_with_request(doNotPerform=False))


@pytest.mark.parametrize(
    ("intent", "counts"),
    [("order", True), ("original-order", True), ("reflex-order", True), ("filler-order", True),
     ("instance-order", True), ("proposal", False), ("plan", False), ("option", False)],
)
def test_only_order_intents_count(intent: str, counts: bool) -> None:
    assert _has_ibuprofen(_with_request(intent=intent)) is counts


def test_absolute_subject_url_not_matching_the_fullurl_names_someone_else() -> None:
    assert not _has_ibuprofen(_with_request(subject={"reference": f"https://example.org/fhir/Patient/{PID}"}))


def test_excluded_active_requests_explain_extras() -> None:
    from groundeval.clinical.medication_list import inactive_codes

    assert inactive_codes(_with_request(intent="plan")) == {"310965": ["intent plan"]}
    assert inactive_codes(_with_request(doNotPerform=True)) == {"310965": ["doNotPerform"]}


def test_case05_requests_with_patient_slash_form_are_attributed_to_the_patient() -> None:
    bundle = copy.deepcopy(CASE_01)
    bundle["entry"][-1]["resource"]["subject"] = {"reference": f"Patient/{PID}"}
    assert any(m["codes"] == ["310965"] for m in active_medications(bundle))


def test_requests_for_another_patient_and_inactive_requests_are_ignored() -> None:
    bundle = copy.deepcopy(CASE_01)
    bundle["entry"][-1]["resource"]["subject"] = {"reference": "urn:uuid:someone-else"}
    bundle["entry"][2]["resource"]["status"] = "stopped"
    codes = [c for m in active_medications(bundle) for c in m["codes"]]
    assert "310965" not in codes and "313782" not in codes


def test_duplicate_requests_for_one_rxcui_collapse() -> None:
    bundle = copy.deepcopy(CASE_01)
    dup = copy.deepcopy(bundle["entry"][-1])
    dup["resource"]["id"] = "mr-d2"
    dup["fullUrl"] = "urn:uuid:dup"
    bundle["entry"].append(dup)
    ibuprofen = [m for m in active_medications(bundle) if m["codes"] == ["310965"]]
    assert len(ibuprofen) == 1 and ibuprofen[0]["requests"] == ["mr-d", "mr-d2"]


def test_bundle_index_resolves_each_reference_form() -> None:
    index = BundleIndex.of(CASE_01)
    med_url = "urn:uuid:00000000-0000-4000-8000-0000000000a1"
    assert (index.resolve(med_url) or {}).get("id") == med_url.removeprefix("urn:uuid:")
    assert index.resolve(f"Medication/{med_url.removeprefix('urn:uuid:')}") is not None
    parent = CASE_01["entry"][3]["resource"]
    assert (index.resolve("#medB", parent) or {}).get("id") == "medB"
    assert index.resolve("#medB") is None
    assert index.resolve("Medication/does-not-exist") is None
    assert index.resolve("") is None
    # An absolute URL is matched against fullUrl only, whatever its path ends with.
    assert index.resolve(f"https://example.org/fhir/Medication/{med_url.removeprefix('urn:uuid:')}") is None


def test_overlapping_codings_collapse_transitively() -> None:
    # a shares 1 with b, b shares 2 with c: one drug, whatever order they come in.
    concepts = [["1"], ["3"], ["2"], ["1", "2"]]
    entries = [_entry(PATIENT, f"urn:uuid:{PID}")] + [
        _entry({"resourceType": "MedicationRequest", "id": f"r{i}", "status": "active", "intent": "order",
                "subject": SUBJECT, "medicationCodeableConcept": {"coding": [{"system": RX, "code": c} for c in codes]}})
        for i, codes in enumerate(concepts)
    ]
    meds = active_medications({"resourceType": "Bundle", "entry": entries})
    assert [(m["codes"], m["requests"]) for m in meds] == [(["1", "2"], ["r0", "r2", "r3"]), (["3"], ["r1"])]


@pytest.mark.parametrize(
    ("bundle", "problem"),
    [
        ({"resourceType": "Patient"}, "expected 'Bundle'"),
        ({"resourceType": "Bundle"}, "Bundle.entry is missing"),
        ({"resourceType": "Bundle", "entry": []}, "no Patient"),
        ({"resourceType": "Bundle", "entry": [_entry(PATIENT), _entry(PATIENT)]}, "2 Patient entries"),
    ],
)
def test_malformed_bundles_raise_dataset_error_naming_the_file(bundle: JSON, problem: str) -> None:
    with pytest.raises(DatasetError, match=problem) as info:
        find_patient(bundle, "broken.json")
    assert str(info.value).startswith("broken.json: ")
