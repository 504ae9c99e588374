"""Pairing by clinical concept and per-ingredient doses of the reconcile truth, on synthetic Bundles (no files)."""

from __future__ import annotations

from typing import Any

import pytest

from groundeval.errors import DatasetError
from groundeval.tasks.reconcile.doses import product
from groundeval.tasks.reconcile.truth import reconcile_truth

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
CATALOG = {"311354": "lisinopril 5 MG Oral Tablet", "314076": "lisinopril 10 MG Oral Tablet",
           "209387": "Acetaminophen 325 MG Oral Tablet [Tylenol]", "313782": "Acetaminophen 325 MG Oral Tablet",
           "866924": "metoprolol tartrate 25 MG Oral Tablet"}


def _bundle(*requests: tuple[str, str, str]) -> dict[str, Any]:
    """One Patient and a MedicationRequest per ``(rxcui, display, status)``."""
    entries: list[dict[str, Any]] = [{"fullUrl": "urn:uuid:p", "resource": {"resourceType": "Patient", "id": "p"}}]
    for n, (code, display, status) in enumerate(requests):
        entries.append({"fullUrl": f"urn:uuid:r{n}", "resource": {
            "resourceType": "MedicationRequest", "id": f"r{n}", "status": status, "intent": "order",
            "subject": {"reference": "urn:uuid:p"}, "authoredOn": f"2020-01-0{n + 1}",
            "medicationCodeableConcept": {"coding": [{"system": RXNORM, "code": code, "display": display}]}}})
    return {"resourceType": "Bundle", "type": "collection", "entry": entries}


def _item(code: str, dose: dict[str, Any] | None = None, name: str = "drug") -> dict[str, Any]:
    return {"name": name, "rxnorm_code": code, **({"dose": dose} if dose else {})}


def _statuses(bundle: dict[str, Any], *items: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    truth = reconcile_truth(bundle, list(items), CATALOG, "case.json")
    return [(e["rxnorm_code"], e["status"], e["pairing"]) for e in truth["entries"]]


def test_another_strength_without_a_dose_states_one_unit_of_its_own_product() -> None:
    bundle = _bundle(("314076", "lisinopril 10 MG Oral Tablet", "active"))
    assert _statuses(bundle, _item("311354")) == [("314076", "dose_mismatch", "ingredients")]
    # the same dose said through two tablets of the other strength is no discrepancy
    assert _statuses(bundle, _item("311354", {"value": 2, "unit": "{tablet}"})) == [("314076", "matched", "ingredients")]


def test_a_stopped_drug_is_found_by_concept_too() -> None:
    bundle = _bundle(("313782", "Acetaminophen 325 MG Oral Tablet", "stopped"))
    truth = reconcile_truth(bundle, [_item("209387", name="Tylenol")], CATALOG, "case.json")
    (entry,) = truth["entries"]
    assert (entry["status"], entry["codes"], entry["pairing"]) == ("stopped_but_taken", ["313782", "209387"],
                                                                    "clinical drug")


def test_an_active_drug_comes_before_a_stopped_one_and_another_salt_is_another_drug() -> None:
    bundle = _bundle(("314076", "lisinopril 10 MG Oral Tablet", "active"),
                     ("311354", "lisinopril 5 MG Oral Tablet", "stopped"),
                     ("866412", "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet", "active"))
    said = [_item("311354", {"value": 5, "unit": "mg"}), _item("866924", {"value": 25, "unit": "mg"})]
    assert _statuses(bundle, *said) == [("314076", "dose_mismatch", "ingredients"), ("866412", "omission", None),
                                        ("866924", "commission", None)]


def test_an_item_that_could_be_two_record_drugs_or_two_items_that_are_one_are_refused() -> None:
    two = _bundle(("314076", "lisinopril 10 MG Oral Tablet", "active"),
                  ("311354", "lisinopril 5 MG Oral Tablet", "active"))
    with pytest.raises(DatasetError, match=r"report.items\[0\] \(lisinopril, RxCUI 999\) could be any of the active "
                                           r"drugs lisinopril \d+ MG Oral Tablet, lisinopril \d+ MG Oral Tablet: give the "
                                           r"RxCUI of the one the patient means"):
        reconcile_truth(two, [_item("999", name="lisinopril")], {"999": "lisinopril 20 MG Oral Tablet"}, "case.json")
    one = _bundle(("313782", "Acetaminophen 325 MG Oral Tablet", "active"))
    with pytest.raises(DatasetError, match=r"report.items\[1\] \(Tylenol, RxCUI 209387\) and report.items\[0\] "
                                           r"\(acetaminophen\) are both the record's"):
        reconcile_truth(one, [_item("313782", name="acetaminophen"), _item("209387", name="Tylenol")], CATALOG, "c.json")


def test_products_read_strengths_per_ingredient_as_a_mass_or_a_rate() -> None:
    ring = product("NuvaRing 0.12/0.015 MG per 24HR 21 Day Vaginal System")
    assert ring.kind == "mg/h" and [round(v, 6) for _, v, _ in ring.strengths or ()] == [0.005, 0.000625]
    combo = product("Acetaminophen 325 MG / oxyCODONE Hydrochloride 5 MG Oral Tablet")
    assert combo.ingredient("oxycodone") == "oxycodone hydrochloride" and combo.kind == "mg"
    assert product("insulin isophane, human 70 UNT/ML / insulin, regular, human 30 UNT/ML Injectable Suspension"
                   ).strengths is None  # units per mL: no comparable dose


def test_an_item_that_could_be_two_stopped_drugs_is_refused_too() -> None:
    two = _bundle(("314076", "lisinopril 10 MG Oral Tablet", "stopped"), ("311354", "lisinopril 5 MG Oral Tablet", "completed"))
    with pytest.raises(DatasetError, match=r"could be any of the stopped drugs lisinopril"):
        reconcile_truth(two, [_item("999", name="lisinopril")], {"999": "lisinopril 20 MG Oral Tablet"}, "case.json")
    assert _statuses(two, _item("311354")) == [("311354", "stopped_but_taken", "rxcui")]  # its own RxCUI: no doubt


@pytest.mark.parametrize(("change", "why"), [
    ({"intent": "plan"}, "a plan is not an order"),
    ({"doNotPerform": True}, "a prohibition"),
    ({"subject": {"reference": "https://other.example.org/fhir/Patient/p"}}, "another server's patient"),
])
def test_a_stopped_request_passes_the_filters_an_active_one_passes(change: dict[str, Any], why: str) -> None:
    bundle = _bundle(("313782", "Acetaminophen 325 MG Oral Tablet", "stopped"))
    bundle["entry"][1]["resource"].update(change)
    assert _statuses(bundle, _item("313782")) == [("313782", "commission", None)], why
    bundle["entry"][1]["resource"]["status"] = "active"  # the same filters keep it off the active list
    assert _statuses(bundle, _item("313782")) == [("313782", "commission", None)], why


def test_one_stopped_request_coded_generic_and_brand_is_one_drug() -> None:
    bundle = _bundle(("313782", "Acetaminophen 325 MG Oral Tablet", "stopped"))
    concept = bundle["entry"][1]["resource"]["medicationCodeableConcept"]
    concept["coding"].append({"system": RXNORM, "code": "209387", "display": CATALOG["209387"]})
    catalog = {**CATALOG, "198440": "Acetaminophen 500 MG Oral Tablet"}
    truth = reconcile_truth(bundle, [_item("198440", name="acetaminophen 500")], catalog, "case.json")
    (entry,) = truth["entries"]
    assert (entry["status"], entry["codes"], entry["pairing"]) == (
        "stopped_but_taken", ["209387", "313782", "198440"], "ingredients")
    with pytest.raises(DatasetError, match=r"report.items\[1\] \(Tylenol, RxCUI 209387\) and report.items\[0\] "
                                           r"\(acetaminophen\) are both the record's stopped"):
        reconcile_truth(bundle, [_item("313782", name="acetaminophen"), _item("209387", name="Tylenol")], CATALOG,
                        "c.json")


def test_every_problem_of_a_case_is_named_at_once_and_the_unit_as_given() -> None:
    bundle = _bundle(("314076", "lisinopril 10 MG Oral Tablet", "active"),
                     ("866924", "metoprolol tartrate 25 MG Oral Tablet", "active"))
    items = [_item("314076", {"value": 10, "unit": "MG"}, "lisinopril"),
             _item("866924", {"value": 25, "unit": "mcg"}, "metoprolol"),
             _item("311354", {"value": 5, "unit": "mg/d"}, "lisinopril 5")]
    with pytest.raises(DatasetError) as caught:
        reconcile_truth(bundle, items[:2], CATALOG, "c.json")
    problem = caught.value.problem
    assert problem.startswith("2 problems, each to fix: (1) report.items[0] (lisinopril, RxCUI 314076): dose 10 'MG'")
    assert "(2) report.items[1] (metoprolol, RxCUI 866924): dose 25 'mcg': 'mcg' is not a UCUM code" in problem
    with pytest.raises(DatasetError, match=r"dose 5 'mg/d' is a mass per time \('mg/d'\), but 'lisinopril 5 MG Oral "
                                           r"Tablet' is dosed as a mass \(mg\)"):
        reconcile_truth(_bundle(), [items[2]], CATALOG, "c.json")


def test_a_count_must_be_of_the_products_own_unit() -> None:
    bundle = _bundle(("314076", "lisinopril 10 MG Oral Tablet", "active"))
    with pytest.raises(DatasetError, match=r"dose 1 '\{capsule\}' counts capsules, but 'lisinopril 10 MG Oral Tablet' "
                                           r"is a tablet; count tablets"):
        reconcile_truth(bundle, [_item("314076", {"value": 1, "unit": "{capsule}"})], CATALOG, "c.json")
    patch = "72 HR Fentanyl 0.025 MG/HR Transdermal System"
    with pytest.raises(DatasetError, match=r"counts tablets, but '72 HR Fentanyl .*' is neither a tablet nor a capsule"):
        reconcile_truth(_bundle(("245134", patch, "active")), [_item("245134", {"value": 1, "unit": "{tablet}"})],
                        {"245134": patch}, "c.json")
