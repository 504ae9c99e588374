"""The kinds of reading error fixed in rules version 9, one test per kind (short texts).

Each kind was found on the development set's fourth and fifth blind rounds
(``fixtures/summary-calibration/dev-labels.jsonl``, writers ``dev-writer-g`` to ``dev-writer-l``):
faithful summaries the scorer failed, or flawed ones it passed.
"""

from __future__ import annotations

from typing import Any

import pytest

from groundeval.tasks.summary.reading import read
from groundeval.tasks.summary.scorer import hedged_verdict, stated_ended
from groundeval.tasks.summary.values import check_values, lab_verdict
from tests._summary_kinds import JUDGE, criterion as _criterion, decided as _decided, status as _status


def _drug(value: float, unit: str, what: str, *names: str) -> dict[str, Any]:
    return {"value": value, "unit": unit, "what": what, "names": list(names), "kind": "drug"}


def _result(value: float, unit: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"value": value, "unit": unit, "what": name, "names": [name], "kind": "observation", **extra}


HCTZ = _drug(25.0, "mg", "Hydrochlorothiazide 25 MG Oral Tablet", "hydrochlorothiazide")
LEVOTHYROXINE = _drug(0.075, "mg", "Levothyroxine Sodium 0.075 MG Oral Tablet", "levothyroxine sodium")
SIMVASTATIN = _drug(20.0, "mg", "Simvastatin 20 MG Oral Tablet", "simvastatin")
HEMOGLOBIN = _result(16.56, "g/dL", "Hemoglobin [Mass/volume] in Blood")
HEMATOCRIT = _result(49.8065, "%", "Hematocrit [Volume Fraction] of Blood by Automated count")
SODIUM = _result(140.0, "mmol/L", "Sodium [Moles/volume] in Blood")
GLUCOSE = _result(67.37, "mg/dL", "Glucose [Mass/volume] in Blood", molar_mass_g_per_mol=180.156)
LDL = _result(132.65, "mg/dL", "Low Density Lipoprotein Cholesterol")
BP = _result(142.0, "mm[Hg]", "Systolic Blood Pressure")


def test_as_needed_is_a_schedule_not_a_hypothesis() -> None:
    summary = "He takes nitroglycerin spray 0.4 mg as needed, and acetaminophen 325 mg every 4-6 h."
    assert _status(summary, "acetaminophen") == ["current"]


@pytest.mark.parametrize("summary", ["Other current meds are all PRN: fexofenadine 60 mg and hydrocortisone cream.",
                                     "His other active prescriptions are fexofenadine 60 mg and hydrocortisone cream."])
def test_other_current_is_no_collective_qualifier(summary: str) -> None:
    assert _decided(_criterion("medication", ["Fexofenadine hydrochloride"]), summary) is True
    assert _status("Some current, others stopped: fexofenadine.", "fexofenadine") == ["hedged"]


def test_adrenaline_is_epinephrine() -> None:
    record = [_drug(1.0, "mg/mL", "0.3 ML Epinephrine 1 MG/ML Auto-Injector", "epinephrine"),
              _drug(10.0, "mg/mL", "Hydrocortisone 10 MG/ML Topical Cream", "hydrocortisone")]
    assert check_values("Hydrocortisone 10 mg/mL cream and an adrenaline 1 mg/mL auto-injector.", record) == []
    assert _decided(_criterion("medication", ["Epinephrine"]), "Adrenaline auto-injector prn.") is True


def test_an_ordinal_is_no_value() -> None:
    assert check_values("BP, add a 2nd agent.", [BP]) == []
    assert check_values("BP 152/85 mmHg.", [BP]) != []


def test_a_result_is_named_by_its_loinc_component_and_hct() -> None:
    record = [HEMOGLOBIN, HEMATOCRIT]
    for summary in ("Hb 16.6 g/dL and Hct 49.8 %.", "Hgb 16.56 g/dL, haematocrit 49.8%."):
        assert check_values(summary, record) == [], summary
    assert check_values("Hb 16.6 g/dL and Hct 45.8 %.", record) == ["45.8 %"]


def test_the_longest_name_read_owns_a_value() -> None:
    record = [LEVOTHYROXINE, SODIUM]
    assert check_values("Levothyroxine sodium 75 mcg daily.", record) == []
    assert check_values("Sodium 140 mmol/L.", record) == []


def test_a_substance_concentration_converts_through_the_molar_mass() -> None:
    assert check_values("Glucose 67.37 mg/dL (3.7 mmol/L).", [GLUCOSE]) == []
    assert check_values("Glucose 67.37 mg/dL (4.7 mmol/L).", [GLUCOSE]) == ["4.7 mmol/L"]
    ldl = _criterion("lab", ["LDL cholesterol"], values=[{"value": 132.65, "unit": "mg/dL",
                                                         "molar_mass_g_per_mol": 386.65}])
    assert lab_verdict(ldl, "LDL 3.4 mmol/L.", strict=False)[0] is True
    assert lab_verdict(ldl, "LDL 2.4 mmol/L.", strict=False)[0] is False


def test_a_semicolon_inside_a_bracket_ends_no_sentence() -> None:
    summary = ("Meds: clopidogrel 75 mg (restarted 2019; earlier courses in 2006 and 2017 were stopped), "
               "digoxin 125 mcg, simvastatin 20 mg.")
    assert _status(summary, "digoxin") == ["current"] and _status(summary, "simvastatin") == ["current"]
    summary = "His acute episodes (bronchitis, 2022; viral sinusitis, March 2025; gingivitis) have all resolved."
    assert _status(summary, "gingivitis") == ["ended"]


@pytest.mark.parametrize("summary", ["1. HTN (1929) - HCTZ 25 mg, amlodipine 5 mg.",
                                     "2. AF (1991) - verapamil 40 mg + hydrochlorothiazide 25 mg rate control;",
                                     "CHD (since February 21, 2017) treated with hydrochlorothiazide 25 mg."])
def test_a_year_in_a_problems_bracket_dates_the_problem_not_its_drugs(summary: str) -> None:
    assert _decided(_criterion("medication", ["Hydrochlorothiazide"]), summary) is True


@pytest.mark.parametrize("summary", ["Simvastatin 20 mg exceeds the 10 mg cap with verapamil.",
                                     "Simvastatin 20 mg too high with verapamil (max 10 mg).",
                                     "Plan: reduce simvastatin to 10 mg or change statin."])
def test_a_dose_limit_or_a_planned_dose_is_no_stated_value(summary: str) -> None:
    assert check_values(summary, [SIMVASTATIN]) == []


def test_a_dose_said_to_have_been_changed_is_checked() -> None:
    assert check_values("Simvastatin was reduced to 10 mg.", [SIMVASTATIN]) == ["10 mg"]


@pytest.mark.parametrize("summary", ["BP 152/95 mmHg, so not controlled on HCTZ at that visit, and BMI 27.2 kg/m2.",
                                     "BP 142/85 mmHg, above goal without any HTN dx, and BMI 27.2 kg/m2, overweight."])
def test_a_negation_in_an_earlier_clause_leaves_a_results_value_stated(summary: str) -> None:
    bmi = _criterion("lab", ["Body mass index"], values=[{"value": 27.2225, "unit": "kg/m2"}])
    assert lab_verdict(bmi, summary, strict=False)[0] is True
    assert lab_verdict(bmi, "No BMI 27.2 kg/m2 on file.", strict=False)[0] is None


def test_an_allergy_type_regimen_names_no_allergen() -> None:
    summary = "He has a standing allergy-type regimen: fexofenadine 60 mg PRN and hydrocortisone cream PRN."
    assert [m.allergy for m in read(summary, ["fexofenadine"])] == [False]


def test_an_items_own_ended_predicate_after_its_modifiers_ends_it() -> None:
    summary = "Acetaminophen 325 mg from his ankle sprain in April 2019 was d/c'd, and the sprain resolved."
    assert _status(summary, "acetaminophen") == ["ended"]


@pytest.mark.parametrize("summary", ["LDL above goal on simva 20, consider uptitration.", "BP - stage 2 range."])
def test_a_number_about_another_thing_after_a_results_name_is_not_its_value(summary: str) -> None:
    assert check_values(summary, [LDL, BP]) == []
    bmi = _criterion("lab", ["Body mass index"], values=[{"value": 27.2225, "unit": "kg/m2"}])
    assert lab_verdict(bmi, "BMI on the same date was 27.2 kg/m2.", strict=False)[0] is True


def test_done_is_an_ended_lead_in() -> None:
    assert _status("- Resolved: bronchitis\n- Done: cough syrup, fluoride gel", "fluoride gel") == ["ended"]


@pytest.mark.parametrize("summary", [
    "On hydrocodone 5mg/APAP 300mg q4-6h (current script 4/20/25; older scripts completed).",
    "On hydrocodone 5 mg/APAP 300 mg (current order 2019, the prior 2006 and 2017 orders having been stopped).",
])
def test_other_orders_said_over_end_nothing_the_sentence_names(summary: str) -> None:
    assert _status(summary, "hydrocodone") == ["current"]
    stroke = "Hx of stroke (2006) for which he is on clopidogrel (the prior 2006 orders having been stopped)."
    assert stated_ended(_criterion("condition", ["Stroke"]), stroke) is None


def test_a_drug_its_clause_says_he_is_on_is_current_after_an_earlier_history() -> None:
    summary = "w/ AF on warfarin 5mg, h/o stroke 2006, HTN also on HCTZ 25mg, hypothyroid on levothyroxine 75mcg."
    assert _status(summary, "hctz") == ["current"] and _status(summary, "levothyroxine") == ["current"]
    assert _decided(_criterion("condition", ["Idiopathic atrophic hypothyroidism"]), summary) is True


def test_a_relative_clause_ends_a_historys_reach() -> None:
    summary = "A history of opioid abuse since 2014 for which he remains on buprenorphine/naloxone 2/0.5 mg SL."
    criterion = _criterion("medication", ["buprenorphine", "naloxone"])
    assert _status(summary, "buprenorphine") == ["current"] and stated_ended(criterion, summary) is None


@pytest.mark.parametrize(("summary", "wrong"), [
    ("meds: HCTZ12.5, levothyroxine 75", ["HCTZ12.5"]),
    ("meds: HCTZ25, levothyroxine 75, simvastatin 20 qd", []),
    ("meds: HCTZ 25, levothyroxine 0.088", ["levothyroxine 0.088"]),
    ("meds: HCTZ 25 x3 days, simvastatin 2 tabs", []),
])
def test_a_strength_written_without_a_unit_is_checked(summary: str, wrong: list[str]) -> None:
    assert check_values(summary, [HCTZ, LEVOTHYROXINE, SIMVASTATIN]) == wrong


def test_a_combination_ended_together_is_stated_ended_whatever_an_ingredient_does_alone() -> None:
    criterion = _criterion("medication", ["Acetaminophen", "Hydrocodone Bitartrate"])
    summary = ("Home medications include acetaminophen (Tylenol) 325 mg q4-6h. Pt was previously prescribed "
               "hydrocodone/acetaminophen 5/300 mg, which has since been discontinued.")
    assert stated_ended(criterion, summary) is not None
    assert stated_ended(criterion, "On hydrocodone/acetaminophen 5/300 mg q4-6h and Tylenol 325 mg.") is None


# The sixth blind round (dev-writer-m, dev-writer-n: past medications and mixed statuses).


def test_an_items_own_present_tense_ended_predicate_ends_it_past_an_aside() -> None:
    summary = "He remains on Norco q4-6h; fluoride gel 0.0272 mg/mg from the dentist (2017, 2022) is finished."
    assert _status(summary, "fluoride gel") == ["ended"]


@pytest.mark.parametrize("summary", [
    "HTN, on HCTZ 25 mg (since 2004) - that is the only thing she takes and nothing has ever been discontinued.",
    "Hydrochlorothiazide 25 mg | current since Oct 2004 - no previous drugs stopped",
    "HCTZ 25 mg, started 2004 and still active - nothing has been stopped or completed, and no resolved problems.",
])
def test_an_ended_word_under_a_negation_ends_nothing(summary: str) -> None:
    assert _decided(_criterion("medication", ["Hydrochlorothiazide"]), summary) is True
    assert stated_ended(_criterion("medication", ["Hydrochlorothiazide"]), summary) is None


def test_has_also_had_is_a_state_still_holding() -> None:
    summary = "Since July 1997 he has also had hydrocortisone 1% cream and fexofenadine 60 mg tablets, all still active."
    assert _status(summary, "hydrocortisone") == ["current"]


def test_the_allergy_list_named_as_a_place_is_no_allergen() -> None:
    summary = "PRNs: fexofenadine 60 mg tabs and an EpiPen - though there are no allergies on the allergy list."
    assert [m.allergy for m in read(summary, ["fexofenadine", "epipen"])] == [False, False]
    assert [m.allergy for m in read("Allergy: penicillin (rash).", ["penicillin"])] == [True]


def test_other_orders_with_years_and_a_current_script_with_a_year() -> None:
    for summary in ("Clopidogrel 75 mg - current (2019 order; earlier 2006/2017 orders stopped)",
                    "clopidogrel 75 mg (active script from 2019, although the 2006 and 2017 clopidogrel orders "
                    "were stopped)",
                    "- Clopidogrel 2006 and 2017 courses - stopped (superseded by current 2019 prescription)"):
        assert hedged_verdict(_criterion("medication", ["Clopidogrel"]), summary) is None, summary


def test_as_needed_before_a_problem_leaves_it_certain() -> None:
    summary = "He was given paracetamol 325 mg as needed in April 2019 for an ankle sprain, since stopped."
    assert [m.uncertain for m in read(summary, ["ankle sprain"])] == [False]


@pytest.mark.parametrize("summary", ["No allergies recorded, and he is on HCTZ 25 mg and warfarin 5 mg.",
                                     "No active diagnoses, and the only current med is HCTZ 25 mg."])
def test_a_new_clause_with_its_own_subject_ends_a_negation(summary: str) -> None:
    assert _status(summary, "hctz") == ["current"]
    assert _status("No HTN, CKD or HCTZ use.", "hctz") == ["negated"]


def test_a_one_off_after_its_drug_ends_it() -> None:
    summary = "He was thrombolysed with alteplase 100 mg on Christmas Day 2018, a one-off that is finished."
    assert _status(summary, "alteplase") == ["ended"]


def test_nothing_on_the_problem_list_is_an_active_diagnosis_states_none() -> None:
    summary = "To be clear, nothing on his problem list is an active diagnosis: chronic pain sits there as a finding."
    assert JUDGE.decide(_criterion("no_condition", []), summary, label="t").met is True


# Layouts and phrasings of past medications and mixed statuses, found by probing the reader with
# the ways clinicians write them (the packaged set's false fails, counted by reason, pointed there).

AMOXICILLIN = _criterion("stopped_medication", ["Amoxicillin"], kind="must_not_state")
LISINOPRIL = _criterion("medication", ["Lisinopril"])


@pytest.mark.parametrize("summary", [
    "Amoxicillin 500 mg, 2019 (completed)",
    "Amoxicillin 500 mg (2019-05-01 to 2019-05-11)",
    "Amoxicillin 500 mg 5/2019\u20135/2019",
    "Amoxicillin 500 mg, started 2019-05-01, ended 2019-05-11",
    "Meds: lisinopril 10 mg; amoxicillin 500 mg x7d in 2019 (done)",
    "Amoxicillin 500 mg | completed | 2019",
    "Amoxicillin 500 mg (end date 2019-05-11)",
    "Inactive medications\n- amoxicillin 500 mg\nActive medications\n- lisinopril 10 mg",
    "Historical medications\n- amoxicillin 500 mg",
    "MEDICATIONS\nActive\n- lisinopril 10 mg\nCompleted / stopped\n- amoxicillin 500 mg",
    "Medications\n| Drug | Start | Stop |\n|---|---|---|\n| lisinopril 10 mg | 2015 | - |\n"
    "| amoxicillin 500 mg | 2019-05-01 | 2019-05-11 |",
    "Medications\n| Drug | Status |\n|---|---|\n| lisinopril 10 mg | taking |\n| amoxicillin 500 mg | not taking |",
])
def test_a_past_drug_in_the_layouts_clinicians_use_is_not_stated_current(summary: str) -> None:
    assert _decided(AMOXICILLIN, summary) is False
    if "lisinopril" in summary:
        assert _decided(LISINOPRIL, summary) is True


def test_has_done_since_is_no_ended_status() -> None:
    assert _status("She takes hydrochlorothiazide 25 mg and has done since 2004.", "hydrochlorothiazide") == ["current"]


@pytest.mark.parametrize("summary", [
    "Hypertension (active since 2003) and strep throat (resolved 2012).",
    "His hypertension is ongoing but his strep throat resolved.",
    "He takes lisinopril 10 mg currently and amoxicillin was stopped in 2019.",
    "Lisinopril 10 mg (active) and amoxicillin 500 mg (completed).",
])
def test_two_statements_joined_by_a_conjunction_are_no_contradiction(summary: str) -> None:
    drug = "lisinopril" in summary.lower()
    current = LISINOPRIL if drug else _criterion("condition", ["Hypertension"])
    ended = AMOXICILLIN if drug else _criterion("resolved_condition", ["Streptococcal sore throat"],
                                                kind="must_not_state")
    assert _decided(current, summary) is True and _decided(ended, summary) is False
    assert hedged_verdict(_criterion("condition", ["Asthma"]), "Asthma active and resolved.") is not None


def test_a_cholesterol_or_triglyceride_in_mmol_per_litre_converts() -> None:
    record = [_result(214.12, "mg/dL", "Cholesterol [Mass/volume] in Serum or Plasma", molar_mass_g_per_mol=386.65),
              _result(131.0, "mg/dL", "Triglycerides", molar_mass_g_per_mol=885.4)]
    assert check_values("TC 214 mg/dL (5.5 mmol/L), TG 131 mg/dL (1.5 mmol/L).", record) == []
    assert check_values("TC 6.5 mmol/L.", record) == ["6.5 mmol/L"]


def test_a_combination_named_by_its_total_or_its_brand() -> None:
    record = [_drug(250.0, "mg", "Amoxicillin 250 MG / Clavulanate 125 MG Oral Tablet", "amoxicillin"),
              _drug(125.0, "mg", "Amoxicillin 250 MG / Clavulanate 125 MG Oral Tablet", "clavulanate")]
    assert check_values("Augmentin 375 mg tds.", record) == []
    assert check_values("Augmentin 250/125 mg.", record) == []
    assert check_values("Augmentin 625 mg tds.", record) == ["625 mg"]


def test_an_elemental_amount_is_not_a_strength() -> None:
    record = [_drug(325.0, "mg", "ferrous sulfate 325 MG Oral Tablet", "ferrous sulfate")]
    assert check_values("Ferrous sulfate 325 mg (65 mg elemental iron) daily.", record) == []
    assert check_values("Ferrous sulfate 200 mg daily.", record) == ["200 mg"]


@pytest.mark.parametrize("summary", [
    "Active problem list unchanged from prior: hypertension, anemia.",
    "PMH: hypertension (ongoing), acute bronchitis (resolved 2019).",
    "Hypertension - no longer uncontrolled, still active.",
    "Hypertension (previously uncontrolled, currently stable).",
])
def test_a_prior_visit_a_past_state_or_an_own_current_bracket_ends_no_problem(summary: str) -> None:
    assert _decided(_criterion("condition", ["Hypertension"]), summary) is True


def test_a_collective_lead_in_still_hedges_items_without_their_own_status() -> None:
    assert _status("Problems (current and past): hypertension, asthma.", "hypertension") == ["hedged"]
    assert _status("Medications on file, some current, others stopped: lisinopril.", "lisinopril") == ["hedged"]


# The seventh blind round (dev-writer-o, dev-writer-p), measured under version 9 before these kinds.


def test_a_value_before_the_next_line_is_not_that_lines_item() -> None:
    record = [HCTZ, LEVOTHYROXINE]
    assert check_values("MEDICATIONS\nhydrochlorothiazide 25 mg\nlevothyroxine 75 mcg tablet", record) == []
    assert check_values("a 25 mg hydrochlorothiazide tablet", record) == []


def test_a_current_course_and_other_courses_with_their_years() -> None:
    summary = "clopidogrel 75 mg (current course from 05-Mar-2019; earlier courses 2006 and 2017 stopped)."
    assert _status(summary, "clopidogrel") == ["current"]


@pytest.mark.parametrize(("summary", "status"), [
    ("MEDICATIONS\n  Sodium fluoride 0.0272 MG/MG Oral Gel\n    Inactive (completed)   Last: 2022-04-17", "ended"),
    ("MEDICATIONS\n  Acetaminophen 325 MG Oral Tablet (PRN)\n    Status: stopped   Start: 2019-04-17", "ended"),
    ("PAST MEDICAL HISTORY\n  Hydrochlorothiazide 25 MG\n    Status: active   Start: 2004-10-02  End: -", "current"),
])
def test_an_entrys_status_on_its_own_indented_line_is_the_entrys(summary: str, status: str) -> None:
    phrase = "fluoride" if "fluoride" in summary else "acetaminophen" if "Acetaminophen" in summary else "hydrochlorothiazide"
    assert _status(summary, phrase) == [status]


def test_dot_leaders_between_a_result_and_its_value() -> None:
    bmi = _criterion("lab", ["Body mass index"], values=[{"value": 27.2225, "unit": "kg/m2"}])
    assert lab_verdict(bmi, "BMI ............. 27.22 kg/m2  H  (2016-10-15)", strict=False)[0] is True
