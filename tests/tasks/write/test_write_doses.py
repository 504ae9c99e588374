"""Dose semantics of the write task: ranges, frequencyMax, tablet counts, UCUM grammar, empty answers."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groundeval.datasets import Case, default_data_dir
from groundeval.errors import DatasetError
from groundeval.scoring import Parsed, Score
from groundeval.tasks.write.scorer import aggregate_write
from groundeval.tasks.write.task import WriteTask
from groundeval.tasks.write.tools import build_medication_statement, validate_medication_statement
from groundeval.terminology import Catalog
from groundeval.terminology.ucum import ORDERABLE_DRUG_FORM_SYSTEM, count_form, to_mg, ucum_problem
from tests._write_answers import statement_from_truth

UCUM = "http://unitsofmeasure.org"
TASK = WriteTask()
CASES = default_data_dir("write")


def case(case_id: str) -> Case:
    return TASK.load_case(CASES / f"{case_id}.json")


def ideal(c: Case) -> dict[str, Any]:
    """The answer the truth describes, built with the agent's own builder."""
    return statement_from_truth(TASK.truth(c))


def score(c: Case, answer: dict[str, Any]) -> Score:
    return TASK.score(c, TASK.truth(c), TASK.parse(c, json.dumps(answer)))


def rate_of(answer: dict[str, Any]) -> dict[str, Any]:
    rate: dict[str, Any] = answer["dosage"][0]["doseAndRate"][0]
    return rate


def repeat_of(answer: dict[str, Any]) -> dict[str, Any]:
    repeat: dict[str, Any] = answer["dosage"][0]["timing"]["repeat"]
    return repeat


@pytest.fixture(scope="module")
def acetaminophen() -> Case:
    return case("acetaminophen-two-to-four-times-prn")


@pytest.fixture(scope="module")
def tramadol() -> Case:
    return case("tramadol-one-to-two-tablets-every-six-hours")


@pytest.fixture(scope="module")
def ibuprofen() -> Case:
    return case("ibuprofen-two-tablets")


# -- ranges: "one tablet two to four times a day as needed" -------------------------------------

def test_a_frequency_range_case_passes_with_frequency_max(acetaminophen: Case) -> None:
    answer = ideal(acetaminophen)
    assert repeat_of(answer) == {"frequency": 2, "frequencyMax": 4, "period": 1.0, "periodUnit": "d"}
    result = score(acetaminophen, answer)
    assert result.outcome == "passed", result.message
    assert result.metrics["daily_total_mg"] == 1300.0  # the most in a day: 325 mg x 4


def test_dropping_frequency_max_fails_safety_with_the_reason(acetaminophen: Case) -> None:
    answer = ideal(acetaminophen)
    del repeat_of(answer)["frequencyMax"]
    result = score(acetaminophen, answer)
    assert result.metrics["safety"] is False and result.metrics["schema"] is True
    assert ("timing: expected 2-4 per 1 d (frequencyMax 4), got a fixed 2 per 1 d: the upper bound "
            "(frequencyMax) was dropped") in result.message
    assert "daily total (the most in 24 hours): expected 1300 mg, got 650 mg (325 mg x 2 doses, 2 per 1 d)" in result.message


def test_a_wrong_frequency_range_and_an_invented_one_fail(acetaminophen: Case, ibuprofen: Case) -> None:
    answer = ideal(acetaminophen)
    repeat_of(answer)["frequency"] = 1
    assert "timing: expected 2-4 per 1 d, got 1-4 per 1 d" in score(acetaminophen, answer).message
    answer = ideal(ibuprofen)
    repeat_of(answer)["frequencyMax"] = 4
    result = score(ibuprofen, answer)
    assert result.metrics["safety"] is False
    assert "timing: expected a fixed 3 per 1 d, got a range 3-4 per 1 d" in result.message


# -- ranges: "1-2 tablets every 6 hours" ---------------------------------------------------------

def test_a_dose_range_case_passes_with_dose_range(tramadol: Case) -> None:
    answer = ideal(tramadol)
    low, high = rate_of(answer)["doseRange"]["low"], rate_of(answer)["doseRange"]["high"]
    assert (low["value"], high["value"], high["code"]) == (50, 100, "mg")
    result = score(tramadol, answer)
    assert result.outcome == "passed", result.message
    assert result.metrics["dose_mg"] == 100.0 and result.metrics["daily_total_mg"] == 400.0


@pytest.mark.parametrize("value", [50, 100, 75])
def test_a_range_encoded_as_one_value_fails_safety_with_the_reason(tramadol: Case, value: int) -> None:
    answer = ideal(tramadol)
    rate_of(answer).clear()
    rate_of(answer)["doseQuantity"] = {"value": value, "unit": "mg", "system": UCUM, "code": "mg"}
    result = score(tramadol, answer)
    assert result.metrics["safety"] is False
    assert (f"dose: expected a range of 50 mg-100 mg per administration (doseRange), got a single value "
            f"{value} mg (doseQuantity): a range cannot be encoded as one value") in result.message


def test_a_wrong_range_and_a_range_for_a_single_dose_fail(tramadol: Case, ibuprofen: Case) -> None:
    answer = ideal(tramadol)
    rate_of(answer)["doseRange"]["low"]["value"] = 25
    assert "dose range: expected 50 mg-100 mg per administration, got 25-100 mg" in score(tramadol, answer).message
    answer = ideal(ibuprofen)
    qty = rate_of(answer).pop("doseQuantity")
    rate_of(answer)["doseRange"] = {"low": {**qty, "value": 200}, "high": qty}
    result = score(ibuprofen, answer)
    assert "dose: expected a single dose of 400 mg (doseQuantity), got a range 200-400 mg (doseRange)" in result.message


def test_the_ceiling_check_uses_the_top_of_the_range(tramadol: Case) -> None:
    """1-3 tablets every 6 h: 200 mg a day at the bottom, 600 mg at the top; tramadol's ceiling is 400."""
    answer = ideal(tramadol)
    rate_of(answer)["doseRange"]["high"]["value"] = 150
    result = score(tramadol, answer)
    assert result.metrics["safety"] is False
    assert "dose in 24 h: 600 mg exceeds the ceiling of 400 mg/day for tramadol hydrochloride" in result.message
    at_the_top = ideal(tramadol)
    repeat_of(at_the_top).update(period=4)  # 100 mg every 4 h = 600 mg
    assert "dose in 24 h: 600 mg exceeds the ceiling" in score(tramadol, at_the_top).message


def test_a_range_case_above_the_ceiling_at_its_top_is_refused_at_load(tmp_path: Path) -> None:
    data = json.loads((CASES / "tramadol-one-to-two-tablets-every-six-hours.json").read_text())
    data["expected"]["dosage"]["dose_range"]["high"]["value"] = 150
    data["expected"]["dosage"]["daily_total"]["value"] = 600
    path = tmp_path / f"{data['id']}.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"600 mg in 24 h\) exceeds the maximum daily dose of 400 mg"):
        TASK.load_case(path)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(dose={"value": 50, "unit": "mg"}), "exactly one of dose and dose_range"),
    (lambda d: d.update(frequency_max=1), "frequency_max needs frequency"),
    (lambda d: d["dose_range"].update(low={"value": 100, "unit": "mg"}), "low must be below"),
    (lambda d: d["daily_total"].update(value=200), "does not equal the most per administration"),
])
def test_range_case_files_are_checked(tmp_path: Path, change: Any, message: str) -> None:
    data = json.loads((CASES / "tramadol-one-to-two-tablets-every-six-hours.json").read_text())
    change(data["expected"]["dosage"])
    path = tmp_path / f"{data['id']}.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=message):
        TASK.load_case(path)


# -- tablet counts -------------------------------------------------------------------------------

@pytest.mark.parametrize("quantity", [
    {"value": 2, "unit": "tablet", "system": UCUM, "code": "{tablet}"},
    {"value": 2, "unit": "tablet", "system": ORDERABLE_DRUG_FORM_SYSTEM, "code": "TAB"},
], ids=["ucum-annotation", "orderable-drug-form"])
def test_a_tablet_count_is_converted_through_the_catalog_strength(ibuprofen: Case, quantity: dict[str, Any]) -> None:
    answer = ideal(ibuprofen)
    rate_of(answer)["doseQuantity"] = quantity
    report = validate_medication_statement(answer)
    assert report["ok"] is True, report  # TAB is not checked as UCUM
    result = score(ibuprofen, answer)
    assert result.outcome == "passed", result.message
    assert result.metrics["dose_mg"] == 400.0 and result.metrics["daily_total_mg"] == 1200.0


def test_a_tablet_count_uses_the_strength_of_the_drug_the_answer_codes(ibuprofen: Case) -> None:
    answer = ideal(ibuprofen)
    answer["medicationCodeableConcept"]["coding"][0].update(code="198405", display="Ibuprofen 100 MG Oral Tablet")
    rate_of(answer)["doseQuantity"] = {"value": 2, "system": ORDERABLE_DRUG_FORM_SYSTEM, "code": "TAB"}
    result = score(ibuprofen, answer)
    assert result.metrics["dose_mg"] == 200.0
    assert "dose: expected 400 mg per administration, got 200 mg" in result.message


def test_a_tablet_range_counts_at_both_ends(tramadol: Case) -> None:
    answer = ideal(tramadol)
    tablets = {"unit": "tablet", "system": UCUM, "code": "{tablet}"}
    rate_of(answer)["doseRange"] = {"low": {"value": 1, **tablets}, "high": {"value": 2, **tablets}}
    assert score(tramadol, answer).outcome == "passed"


@pytest.mark.parametrize(("quantity", "reason"), [
    ({"value": 2, "system": UCUM, "code": "{capsule}"}, "is a count of capsules"),
    ({"value": 2, "system": ORDERABLE_DRUG_FORM_SYSTEM, "code": "SUSP"}, "'SUSP' is not a tablet or capsule code"),
    ({"value": 2, "system": UCUM, "code": "tablet"}, "'tablet' is not a UCUM code"),
    ({"value": 2, "system": "http://example.org/forms", "code": "TAB"}, f"dose system: expected {UCUM}"),
])
def test_counts_that_cannot_be_converted_fail_as_unverifiable(
    ibuprofen: Case, quantity: dict[str, Any], reason: str
) -> None:
    answer = ideal(ibuprofen)
    rate_of(answer)["doseQuantity"] = quantity
    result = score(ibuprofen, answer)
    assert result.metrics["safety"] is False and result.metrics["dose_mg"] is None
    assert reason in result.message


def test_only_single_ingredient_tablets_and_capsules_have_a_unit_strength() -> None:
    catalog = Catalog.load()
    def strength(rxcui: str) -> float | None:
        entry = catalog.get(rxcui)
        assert entry is not None
        return entry.unit_strength_mg
    assert strength("310965") == 200.0  # Ibuprofen 200 MG Oral Tablet
    assert strength("966222") == pytest.approx(0.075)  # Levothyroxine Sodium 0.075 MG Oral Tablet
    assert strength("308182") == 250.0 and catalog.get("308182").unit_form == "capsule"  # type: ignore[union-attr]
    assert strength("856987") is None  # acetaminophen / hydrocodone: no single strength
    assert count_form("TAB", ORDERABLE_DRUG_FORM_SYSTEM) == "tablet"
    assert count_form("{Tablets}", UCUM) == "tablet" and count_form("TAB", UCUM) is None


# -- UCUM by grammar -----------------------------------------------------------------------------

@pytest.mark.parametrize("unit", ["mg", "ug", "mg/h", "ug/h", "mg/kg", "mg/{actuat}", "mg/(24.h)", "{tablet}",
                                  "[iU]", "mL", "ml", "10*3/uL", "[gr]"])
def test_legal_ucum_is_accepted_by_its_grammar(unit: str) -> None:
    assert ucum_problem(unit) is None


@pytest.mark.parametrize("unit", ["foo", "mg/", "mg per day", " mg", "mgs/d", "tab", "TAB"])
def test_nonsense_is_rejected(unit: str) -> None:
    problem = ucum_problem(unit)
    assert problem is not None
    assert "not a valid UCUM unit" in problem[0] or "not a UCUM code" in problem[0]


def test_known_mistakes_keep_their_hints() -> None:
    assert ucum_problem("mcg") == ("'mcg' is not a UCUM code", "use 'ug' (UCUM is case-sensitive)")
    # what the grammar really read: in case-sensitive UCUM, MG is mega-gauss and Mg is mega-gram
    assert ucum_problem("MG") == ("'MG' is legal UCUM, but for megagauss (a magnetic flux density): surely not "
                                  "what was meant", "use 'mg' (UCUM is case-sensitive)")
    assert ucum_problem("Mg") == ("'Mg' is legal UCUM, but for megagram (a mass): surely not what was meant",
                                  "use 'mg' (UCUM is case-sensitive)")
    problem = ucum_problem("tablets")
    assert problem is not None and "{tablet}" in problem[1]


def test_conversion_to_mg_by_dimension() -> None:
    assert to_mg(75, "ug") == pytest.approx(0.075)
    assert to_mg(1, "[gr]") == pytest.approx(64.79891)  # grain, through pint's UCUM registry
    assert to_mg(2, "mg/{actuat}") == pytest.approx(2.0)  # annotations are unity in UCUM
    for unit in ("mg/h", "mg/kg", "mL", "{tablet}", "MG", "mcg", None):
        assert to_mg(1, unit) is None, unit


@pytest.mark.parametrize("unit", ["mg/h", "ug/h", "mg/kg", "mg/{actuat}"])
def test_the_validator_accepts_the_units_the_catalog_produces(unit: str) -> None:
    resource = ideal(case("ibuprofen-two-tablets"))
    rate_of(resource)["doseQuantity"].update(unit=unit, code=unit)
    assert not [i for i in validate_medication_statement(resource)["issues"] if i["kind"] == "unit"]


def test_a_rate_is_legal_ucum_but_not_a_dose(ibuprofen: Case) -> None:
    answer = ideal(ibuprofen)
    rate_of(answer)["doseQuantity"].update(unit="mg/h", code="mg/h")
    # the message says what the unit is: its name and dimension, as the UCUM registry reads it
    assert ("dose unit 'mg/h' is milligram / hour (a mass per time (a rate)), not a mass per administration"
            in score(ibuprofen, answer).message)


def test_ucum_libraries_are_imported_lazily() -> None:
    code = ("import sys, groundeval.tasks.write.task, groundeval.tasks.write.r4b_raw_json, groundeval.tasks.write.scorer; "
            "print(sorted(m for m in ('ucumvert', 'pint', 'lark') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- no answer -----------------------------------------------------------------------------------

@pytest.mark.parametrize("case_id", ["ibuprofen-two-tablets", "tramadol-one-to-two-tablets-every-six-hours",
                                     "hydrochlorothiazide-dose-unknown", "gabapentin-not-in-catalog"])
def test_an_empty_answer_fails_all_four_dimensions_with_defined_metrics(case_id: str) -> None:
    c = case(case_id)
    parsed = TASK.parse(c, "")
    assert parsed.found is False
    result = TASK.score(c, TASK.truth(c), parsed)
    assert result.outcome == "failed"
    assert result.metrics == {"schema": False, "coding": False, "constraints": False, "safety": False,
                              "dimensions_passed": 0, "coding_reason": "missing", "dose_mg": None,
                              "daily_total_mg": None}
    aggregate = aggregate_write([result.metrics])
    assert aggregate["all_pass_rate"] == 0.0 and aggregate["coding_reason_missing"] == 1


def test_scoring_does_not_change_the_answer(ibuprofen: Case) -> None:
    answer = ideal(ibuprofen)
    before = copy.deepcopy(answer)
    TASK.score(ibuprofen, TASK.truth(ibuprofen), Parsed(value=answer, format_ok=True))
    assert answer == before


# -- the builder and validator for ranges --------------------------------------------------------

def test_the_builder_writes_dose_range_and_frequency_max() -> None:
    resource = build_medication_statement(
        status="active", rxcui="835603", display="tramadol hydrochloride 50 MG Oral Tablet",
        patient_reference="Patient/pt-1", dose_value=50, dose_max=100, dose_unit="mg",
        frequency=1, frequency_max=2, period=6, period_unit="h", as_needed=True,
    )
    dosage = resource["dosage"][0]
    assert dosage["doseAndRate"] == [{"doseRange": {
        "low": {"value": 50, "unit": "mg", "system": UCUM, "code": "mg"},
        "high": {"value": 100, "unit": "mg", "system": UCUM, "code": "mg"}}}]
    assert dosage["timing"]["repeat"]["frequencyMax"] == 2
    assert validate_medication_statement(resource)["ok"] is True


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dose_max": 100}, "pass dose_value too"),
    ({"dose_value": 50, "dose_unit": "mg", "frequency_max": 2}, "pass frequency too"),
])
def test_the_builder_refuses_half_a_range(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_medication_statement(status="active", rxcui="835603", display=None,
                                   patient_reference="Patient/pt-1", **kwargs)


def test_the_validator_checks_both_ends_of_a_dose_range(tramadol: Case) -> None:
    answer = ideal(tramadol)
    rng = rate_of(answer)["doseRange"]
    rng["high"].update(code="mcg", unit="mcg")
    issues = validate_medication_statement(answer)["issues"]
    assert [i["path"].rsplit(".", 2)[-2:] for i in issues if i["kind"] == "unit"] == [["high", "code"]]
    rng["high"].update(code="mg", unit="mg", value=25)
    [issue] = validate_medication_statement(answer)["issues"]
    assert "rng-2" in issue["problem"] and issue["severity"] == "error"


def test_rng_2_compares_the_ends_as_quantities_not_as_bare_numbers(tramadol: Case) -> None:
    answer = ideal(tramadol)
    rng = rate_of(answer)["doseRange"]
    rng["high"].update(code="g", unit="g", value=0.1)  # 50 mg to 0.1 g: in order, nothing to swap
    assert validate_medication_statement(answer)["ok"] is True
    assert score(tramadol, answer).outcome == "passed"
    rng["high"].update(value=0.04)  # 50 mg to 0.04 g: inverted, said with the units as written
    (issue,) = validate_medication_statement(answer)["issues"]
    assert issue["problem"] == "low 50 mg is above high 0.04 g (invariant rng-2)" and issue["fix"] == "swap low and high"
    rng["high"].update(code="{tablet}", unit="tablet", value=2)  # a count and a mass: not comparable
    (issue,) = validate_medication_statement(answer)["issues"]
    assert "cannot be compared" in issue["problem"]


@pytest.mark.parametrize(("repeat", "flagged"), [
    ({"frequency": 4, "frequencyMax": 2, "period": 1, "periodUnit": "d"}, "frequencyMax 2 is below frequency 4"),
    ({"frequency": 1, "period": 8, "periodMax": 6, "periodUnit": "h"}, "periodMax 6 is below period 8"),
    ({"frequency": 1, "periodMax": 8, "periodUnit": "h"}, "periodMax given without period (invariant tim-6)"),
])
def test_the_validator_flags_a_timing_range_whose_top_is_under_its_bottom(
        acetaminophen: Case, repeat: dict[str, Any], flagged: str) -> None:
    answer = ideal(acetaminophen)
    answer["dosage"][0]["timing"]["repeat"] = repeat
    report = validate_medication_statement(answer)
    assert report["ok"] is False and any(flagged in i["problem"] for i in report["issues"]), report["issues"]
    assert score(acetaminophen, answer).metrics["schema"] is False


def test_safety_reads_an_inverted_frequency_range_by_its_real_top(acetaminophen: Case) -> None:
    answer = ideal(acetaminophen)
    repeat_of(answer).update(frequency=4, frequencyMax=2)  # the range written upside down
    result = score(acetaminophen, answer)
    assert result.metrics["daily_total_mg"] == 1300.0  # 325 mg x 4, not x 2: the top is never the smaller bound
    assert "timing:" not in result.message and result.metrics["schema"] is False


@pytest.fixture(scope="module")
def every_six_to_eight() -> Case:
    return case("acetaminophen-every-six-to-eight-hours")


def test_a_period_range_case_passes_with_period_max_and_counts_doses_at_the_shortest_period(
        every_six_to_eight: Case) -> None:
    answer = ideal(every_six_to_eight)
    assert repeat_of(answer) == {"frequency": 1, "period": 6.0, "periodMax": 8.0, "periodUnit": "h"}
    result = score(every_six_to_eight, answer)
    assert result.outcome == "passed", result.message
    assert result.metrics["daily_total_mg"] == 2600.0  # 650 mg x 4: every 6 hours at the most
    del repeat_of(answer)["periodMax"]
    dropped = score(every_six_to_eight, answer)
    assert dropped.metrics["safety"] is False
    assert "the longer period (periodMax) was dropped" in dropped.message


def test_the_daily_total_is_the_most_within_24_hours_for_every_other_day_dosing() -> None:
    iron = case("ferrous-sulfate-every-other-day")
    assert TASK.truth(iron)["dosage"]["daily_total_mg"] == 325.0  # not the 162.5 mg average
    assert score(iron, ideal(iron)).metrics["daily_total_mg"] == 325.0


# -- a daily total that can be computed is computed, whatever the types -----------------------

def test_a_dose_written_with_type_and_binding_errors_is_read_and_its_daily_total_checked(ibuprofen: Case) -> None:
    """400 mg as the string "400", three times per "day": the schema fails, safety reads 1,200 mg/day."""
    answer = ideal(ibuprofen)
    rate_of(answer)["doseQuantity"]["value"] = "400"
    repeat_of(answer).update(frequency=3, period=1, periodUnit="day")
    report = validate_medication_statement(answer)
    assert report["ok"] is False  # the validator names both errors...
    result = score(ibuprofen, answer)
    assert result.metrics["schema"] is False  # ...and the schema dimension scores them, once
    assert "cannot verify" not in result.message
    assert result.metrics["safety"] is True
    assert (result.metrics["dose_mg"], result.metrics["daily_total_mg"]) == (400.0, 1200.0)
    basis = result.details["daily_total"]
    assert basis.startswith("daily total 1200 mg/day = 400 mg x 3 administrations")
    assert "the documented daily total 1200 mg" in basis
    assert "the maximum daily dose 3200 mg/day for ibuprofen (oral; Ibuprofen tablets" in basis  # the label it cites
    rate_of(answer)["doseQuantity"]["value"] = "800"  # 2,400 mg/day: wrong, and said so with the figure
    wrong = score(ibuprofen, answer)
    assert wrong.metrics["safety"] is False and wrong.metrics["daily_total_mg"] == 2400.0
    assert "expected 1200 mg, got 2400 mg (800 mg x 3 doses, 3 per 1 d)" in wrong.message


@pytest.mark.parametrize(("unit", "code"), [("d", "d"), ("day", "d"), ("Days", "d"), ("hours", "h"), ("wk", "wk"),
                                            ("daily", None), ("D", None), ("", None), (1, None)])
def test_a_unit_of_time_is_its_code_or_its_display(unit: object, code: str | None) -> None:
    from groundeval.terminology.ucum import unit_of_time

    assert unit_of_time(unit) == code


def test_every_computed_daily_total_says_how_and_against_what(ibuprofen: Case) -> None:
    result = score(ibuprofen, ideal(ibuprofen))
    assert result.outcome == "passed" and result.details["daily_total"].startswith("daily total 1200 mg/day")
    empty = score(ibuprofen, {})
    assert empty.details["daily_total"] is None
