"""The kinds of reading error fixed in rules version 6, one test per kind (short texts; each kind was
found on the development set, ``fixtures/summary-calibration/dev-labels.jsonl``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from groundeval.scoring import Parsed
from groundeval.tasks.summary.judge import BaselineJudge
from groundeval.tasks.summary.reading import read
from groundeval.tasks.summary.scorer import SummaryScorer, hedged_verdict, rule_verdict, stated_ended
from groundeval.tasks.summary.values import check_values
from tests._summary_kinds import criterion as _criterion, decided as _decided, status as _status

JUDGE = BaselineJudge()

_RECORD = [
    {"value": 5.0, "unit": "mg", "what": "Acetaminophen 300 MG / Hydrocodone Bitartrate 5 MG Oral Tablet",
     "names": ["hydrocodone bitartrate"], "kind": "drug"},
    {"value": 300.0, "unit": "mg", "what": "Acetaminophen 300 MG / Hydrocodone Bitartrate 5 MG Oral Tablet",
     "names": ["acetaminophen"], "kind": "drug"},
    {"value": 75.0, "unit": "mg", "what": "Clopidogrel 75 MG Oral Tablet", "names": ["clopidogrel"], "kind": "drug"},
    {"value": 20.0, "unit": "mg", "what": "Simvastatin 20 MG Oral Tablet", "names": ["simvastatin"], "kind": "drug"},
    {"value": 0.0272, "unit": "mg/mg", "what": "sodium fluoride 0.0272 MG/MG Oral Gel", "names": ["sodium fluoride"],
     "kind": "drug"},
    {"value": 132.65, "unit": "mg/dL", "what": "Low Density Lipoprotein Cholesterol",
     "names": ["Low Density Lipoprotein Cholesterol"], "kind": "observation"},
    {"value": 55.45, "unit": "mg/dL", "what": "Cholesterol in HDL [Mass/volume] in Serum or Plasma",
     "names": ["Cholesterol in HDL [Mass/volume] in Serum or Plasma"], "kind": "observation"},
    {"value": 27.93, "unit": "kg/m2", "what": "Body Mass Index", "names": ["Body Mass Index"], "kind": "observation"},
]


STOPPED = _criterion("stopped_medication", ["Penicillin V Potassium"], kind="must_not_state")
RESOLVED = _criterion("resolved_condition", ["Streptococcal sore throat"], kind="must_not_state")


@pytest.mark.parametrize("summary", [
    "Treated for strep throat with penicillin V in 2012.",
    "He took penicillin V for strep throat in 2012.",
    "Recovered from strep throat; penicillin V was used.",
    "Strep throat and penicillin V, both cleared.",
])
def test_a_past_event_is_historical(summary: str) -> None:
    assert _decided(STOPPED, summary) is False and _decided(RESOLVED, summary) is False


def test_has_had_is_not_a_past_event() -> None:
    assert _status("Has had strep throat since 2010.", "strep throat") == ["current"]


@pytest.mark.parametrize("summary", [
    "Strep throat (2012).", "Strep throat 2012, penicillin V 2012.", "Penicillin V 500 mg (2010-2012)."])
def test_a_dated_item_with_no_current_word_is_ended(summary: str) -> None:
    assert _decided(STOPPED, summary) is False and _decided(RESOLVED, summary) is False


@pytest.mark.parametrize("summary", [
    "Current medications:\n- Penicillin V 500 mg (2012)",  # listed as current, whatever its date
    "Penicillin V 500 mg since 2012.",  # kept going
    "Penicillin V 500 mg started 2012-05-20",  # a full date dates an entry, not its end
])
def test_a_date_does_not_end_an_item_listed_or_kept_as_current(summary: str) -> None:
    assert _decided(STOPPED, summary) is True


@pytest.mark.parametrize("summary", [
    "Old problems: strep throat, gingivitis.", "Historical diagnoses - strep throat, gingivitis",
    "Inactive:\n- strep throat", "**Old problems** (all resolved): bronchitis 2019; strep throat 2012.",
    "Strep throat 2012 and sinusitis 2014, neither active.", "Strep throat, pharyngitis: all in the past.",
])
def test_an_ended_lead_in_or_a_distributive_qualifier_ends_its_items(summary: str) -> None:
    assert _decided(RESOLVED, summary) is False


def test_a_lines_own_lead_in_speaks_over_a_heading_above() -> None:
    summary = "**Medications**\n- lisinopril\n\n**Old problems** (all resolved): bronchitis 2019; strep throat 2012."
    assert _status(summary, "strep throat") == ["ended"]


@pytest.mark.parametrize("summary", [
    "Problems:\n- Hypertension\n- Strep throat (2012), resolved",
    "Meds:\n- Penicillin V 500 mg, completed 2012\n- Strep throat - resolved",
    "Meds:\n- Penicillin V 500 mg, 10-day course for strep throat - completed",
])
def test_a_status_after_a_list_item_is_the_items(summary: str) -> None:
    assert _decided(STOPPED if "Penicillin" in summary else RESOLVED, summary) is False


def test_a_trailing_status_ends_the_item_before_it_only() -> None:
    assert _status("Warfarin, penicillin V, stopped.", "warfarin") == ["current"]
    assert _status("Warfarin, penicillin V, stopped.", "penicillin v") == ["ended"]


@pytest.mark.parametrize("summary", ["Prior stroke (2006).", "H/o stroke.", "Had a stroke in 2006."])
def test_a_current_problem_written_as_history_is_mentioned(summary: str) -> None:
    assert _decided(_criterion("condition", ["Stroke"]), summary) is True


@pytest.mark.parametrize("summary", ["Stroke (2006), resolved.", "Past:\n- stroke", "Inactive problems: stroke"])
def test_a_current_problem_said_to_be_over_is_not(summary: str) -> None:
    assert _decided(_criterion("condition", ["Stroke"]), summary) is False


def test_a_current_drug_dated_into_the_past_is_stated_as_ended() -> None:
    criterion = _criterion("medication", ["Hydrochlorothiazide"])
    assert stated_ended(criterion, "HCTZ 25 mg was taken 2004-2010.") is not None


@pytest.mark.parametrize("summary", [
    "Possible hypertension.", "Rule out hypertension.", "Hydrochlorothiazide (on / previously on)."])
def test_an_uncertain_or_collective_mention_is_a_hedge(summary: str) -> None:
    drug = "previously" in summary
    criterion = _criterion("medication" if drug else "condition", ["Hydrochlorothiazide" if drug else "Hypertension"])
    assert hedged_verdict(criterion, summary) is not None


def test_speculation_about_a_problem_the_record_lacks_fails_the_case() -> None:
    scorer = SummaryScorer(JUDGE, max_words=250, min_rubric_score=0.8, reliability=dict)
    truth = {"criteria": [_criterion("condition", ["Hypertension"])], "record_values": []}
    case: Any = SimpleNamespace(case_id="c")
    assert scorer.score(case, truth, Parsed("HTN.", True)).outcome == "passed"
    padded = scorer.score(case, truth, Parsed("HTN. Possible diabetes and CKD.", True))
    assert padded.outcome == "failed" and padded.details["hedged_statements"]


def test_a_record_dump_is_a_collective_qualifier() -> None:
    assert _status("Record contents:\n- strep throat\n- hypertension", "strep throat") == ["hedged"]


@pytest.mark.parametrize(("summary", "wrong"), [
    ("Hydrocodone-acetaminophen 5 mg-300 mg PRN.", []),  # a combination's strengths are its ingredients'
    ("Hydrocodone 10 mg/APAP 300 mg PRN.", ["10 mg"]),  # a strength before the next ingredient is read
    ("Clopidogrel 75 mg + simva 20 mg.", []),  # no item named in its clause: the record's values
    ("Clopidogrel 20 mg daily.", ["20 mg"]),  # never another drug's strength
    ("Sodium fluoride 0.0272 mg/mg gel, completed.", []),  # a concentration the table lacks is not read
    ("LDL/HDL 132.65/55.45 mg/dL.", []),  # a result's value may be its sentence's other result's
    ("LDL 133 mg/dL; HDL 56 mg/dL.", ["56 mg/dL"]),
    ("BMI 30+ (obesity finding); BMI 27.9 kg/m2.", []),  # a bound is no value
])
def test_values_per_item(summary: str, wrong: list[str]) -> None:
    assert check_values(summary, _RECORD) == wrong


@pytest.mark.parametrize(("names", "written"), [
    (["Idiopathic atrophic hypothyroidism"], "Hypothyroidism on levothyroxine."),
    (["Stroke"], "CVA in 2006."), (["Osteoarthritis of knee"], "Knee OA."),
])
def test_snomed_synonyms_and_parents_name_the_problem(names: list[str], written: str) -> None:
    assert _decided(_criterion("condition", names), written) is True


@pytest.mark.parametrize(("summary", "met"), [
    ("39M with no active medical issues.", True), ("PMH: nil.", True), ("No chronic illnesses.", True),
    ("Healthy; no significant past medical history.", True),
    ("No appendicitis, no gingival disease.", False),  # named problems negated say nothing of the class
    ("Not on any medication; no essential hypertension or heart disease.", False),
])
def test_no_active_diagnosis_is_a_statement_about_the_class(summary: str, met: bool) -> None:
    criterion = {"id": "no_condition", "kind": "must_mention", "type": "no_condition", "points": 1, "safety": False,
                 "names": [], "values": [], "alternatives": []}
    ruled = rule_verdict(criterion, summary)
    assert (ruled if ruled is not None else JUDGE.decide(criterion, summary, label="t").met) is met


def test_a_unit_is_its_numbers_only_when_it_follows_it() -> None:
    from groundeval.tasks.summary.values import lab_verdict

    bmi = {**_criterion("lab", ["Body mass index"]), "values": [{"value": 28.42, "unit": "kg/m2"}]}
    assert lab_verdict(bmi, "BMI 28.4, BP 142/85 mmHg.", strict=False)[0] is True
    assert lab_verdict(bmi, "BMI 28.4 mmHg.", strict=False)[0] is False


def test_a_drug_stated_with_a_value_not_its_own_is_not_met() -> None:
    scorer = SummaryScorer(JUDGE, max_words=250, min_rubric_score=0.8, reliability=dict)
    criterion = _criterion("medication", ["Acetaminophen", "Hydrocodone Bitartrate"])
    truth = {"criteria": [criterion], "record_values": _RECORD}
    case: Any = SimpleNamespace(case_id="c")
    right = scorer.score(case, truth, Parsed("Hydrocodone 5 mg/APAP 300 mg PRN.", True))
    wrong = scorer.score(case, truth, Parsed("Hydrocodone 10 mg/APAP 300 mg PRN.", True))
    assert right.details["criteria"][0]["met"] is True
    assert wrong.details["criteria"][0]["met"] is False and wrong.details["criteria"][0]["flag"] == "wrong_value"


# Rules version 7: kinds found by writing faithful handoffs over the held-out records (one test each).

@pytest.mark.parametrize("summary", [
    "Penicillin V course complete for strep throat.",
    "Penicillin V (strep throat) - done.",
    "Penicillin V - course over.",
    "Penicillin V and alteplase: not current.",
    "Penicillin V not current, alteplase one-off.",
    "Alteplase (stroke) administered once; penicillin V one dose.",
    "Was prescribed penicillin V for strep throat.",
    "Currently off penicillin V.",
    "Historic meds: penicillin V, alteplase.",
    "Penicillin V - prescription lapsed.",
    "Penicillin V (old Rx).",
    "Penicillin V was a limited course.",
    "Penicillin V no longer needed.",
    "Penicillin V replaced by amoxicillin.",
    "Penicillin V changed to amoxicillin.",
    "Penicillin V and alteplase were one-time treatments.",
    "Penicillin V was temporary.",
    "Acute meds (not ongoing): alteplase, penicillin V.",
    "Penicillin V used briefly for strep throat.",
    "Penicillin V - not currently prescribed.",
    "Penicillin V 500 mg (strep throat, 2015)",
])
def test_a_finished_course_or_a_status_written_after_the_drug_ends_it(summary: str) -> None:
    assert _decided(STOPPED, summary) is False


@pytest.mark.parametrize("summary", [
    "Streptococcal sore throat - self-limiting.",
    "Streptococcal sore throat - recovered.",
    "Streptococcal sore throat: not current.",
])
def test_a_problem_said_over_after_its_name_is_not_stated_active(summary: str) -> None:
    assert _decided(RESOLVED, summary) is False


@pytest.mark.parametrize("summary", [
    "Penicillin V completed - no current antibiotics.",
    "No active antibiotic (penicillin V course completed).",
    "Currently off penicillin V.",
])
def test_no_current_and_currently_off_are_not_current_labels(summary: str) -> None:
    assert hedged_verdict(STOPPED, summary) is None
    assert _decided(STOPPED, summary) is False


def test_an_item_that_states_its_own_status_keeps_it_under_a_collective_heading() -> None:
    summary = ("Medications (current and past):\n- Warfarin sodium 5 mg (active)\n"
               "- Penicillin V potassium (stopped)")
    assert _status(summary, "warfarin sodium") == ["current"]
    assert _status(summary, "penicillin v potassium") == ["ended"]
    gamed = "Medications (current and past):\n- Warfarin sodium 5 mg\n- Penicillin V potassium"
    assert _status(gamed, "penicillin v potassium") == ["hedged"]  # no status of its own: still a hedge


def test_a_heading_is_not_a_hedged_statement() -> None:
    case = SimpleNamespace(case_id="c")
    truth = {"criteria": [_criterion("medication", ["Warfarin Sodium"])], "record_values": []}
    summary = "Medications (current and past):\n- Warfarin sodium (active)\n- Penicillin V (stopped)"
    score = SummaryScorer(JUDGE, max_words=250, min_rubric_score=0.8, reliability=dict).score(
        case, truth, Parsed(value=summary, format_ok=True))  # type: ignore[arg-type]
    assert score.details["hedged_statements"] == []
    assert score.outcome == "passed", score.message


def test_a_past_dose_beside_a_current_drug_is_not_a_hedge() -> None:
    warfarin = _criterion("medication", ["Warfarin Sodium"])
    summary = "Warfarin sodium ongoing (previously 5 mg), INR checked monthly."
    assert hedged_verdict(warfarin, summary) is None
    assert _decided(warfarin, summary) is True


@pytest.mark.parametrize("rows", ["| Penicillin V | no |", "| Penicillin V | inactive |"])
def test_a_tables_status_column_gives_its_row_a_status(rows: str) -> None:
    summary = f"| Medication | Current? |\n|---|---|\n| Warfarin | yes |\n{rows}"
    assert _decided(STOPPED | {"names": ["Penicillin V"]}, summary) is False
    assert _status(summary, "warfarin") == ["current"]


@pytest.mark.parametrize("summary", [
    "No long-term conditions.", "No chronic or active problems.", "Nothing active on the problem list.",
    "Active problem list is empty.",
])
def test_more_ways_of_saying_no_active_diagnosis(summary: str) -> None:
    assert _decided(_criterion("no_condition", []), summary) is True


@pytest.mark.parametrize("summary", [
    "Active: IHD (prior MI), anaemia, opioid abuse.",
    "Current problems: IHD since 2010 (previously angina), anaemia, opioid abuse.",
    "IHD, anaemia, opioid abuse (currently in remission on MAT, previously heroin).",
])
def test_history_of_another_thing_in_brackets_is_not_a_hedge(summary: str) -> None:
    anaemia = _criterion("condition", ["Anemia"])
    assert hedged_verdict(anaemia, summary) is None
    assert _decided(anaemia, summary) is True
    assert hedged_verdict(anaemia, "Anaemia (active, resolved).") is not None  # a status both ways still is


@pytest.mark.parametrize("summary", ["Other meds: fexofenadine 60 PRN, APAP 325 PRN.", "Paracetamol 325 mg PRN."])
def test_a_stopped_drug_named_by_its_abbreviation_is_stated_as_current(summary: str) -> None:
    stopped = _criterion("stopped_medication", ["Acetaminophen"], kind="must_not_state")
    assert _decided(stopped, summary) is True
    assert _decided(stopped, "Prev.: APAP 325 mg for a sprain.") is False


@pytest.mark.parametrize("summary", ["Chronic sinusitis - resolved.", "Chronic sinusitis, now resolved.",
                                     "Resolved: chronic sinusitis; strep throat."])
def test_a_current_problem_said_to_be_resolved_is_stated_as_ended(summary: str) -> None:
    criterion = _criterion("condition", ["Chronic sinusitis"])
    assert stated_ended(criterion, summary) is not None
    assert stated_ended(criterion, "Chronic sinusitis (since 1966).") is None
    assert stated_ended(criterion, "Prior chronic sinusitis.") is None  # written as history: not said to be over


def test_an_age_is_not_an_old_problem_list() -> None:
    summary = "Mr. Berge is a 107-year-old man with a heavy burden: hypertension since 1929, plus anemia."
    assert _status(summary, "hypertension") == ["current"]
    assert _status("Old problems: hypertension.", "hypertension") == ["ended"]


def test_a_problem_oriented_entry_heads_only_its_own_line() -> None:
    summary = ("# Stroke (2006): clopidogrel 75 mg. Alteplase 100 mg (2018-12) - stopped.\n"
               "# Coronary heart disease since 2017: simvastatin 20 mg.")
    assert _status(summary, "coronary heart disease") == ["current"]
    assert _status("## Stopped\n- alteplase 100 mg", "alteplase") == ["ended"]  # a heading still heads


def test_a_brand_only_display_is_named_by_its_ingredients_too() -> None:
    from groundeval.tasks.summary.record import _named

    assert _named("Lasix 40mg", "315971") == (("furosemide",), "Lasix")
    lasix = {**_criterion("medication", ["furosemide"]), "alternatives": ["Lasix"]}
    assert _decided(lasix, "Meds: furosemide 40 mg daily.") is True
    assert _decided(lasix, "Meds: Lasix 40 mg daily.") is True


def test_another_brand_of_the_same_ingredients_is_another_product() -> None:
    levora = {**_criterion("stopped_medication", ["levonorgestrel", "ethinyl estradiol"], kind="must_not_state"),
              "alternatives": ["Levora"]}
    assert _decided(levora, "Current: Seasonique.") is False  # a sibling brand is not Levora
    assert _decided(levora, "Current: Levora.") is True
    unbranded = _criterion("medication", ["Warfarin Sodium"])
    assert _decided(unbranded, "Coumadin 5 mg daily.") is True  # an unbranded product: any brand of it names it


# Values written the way clinicians write them (one case per kind; each was called invented or left
# unread before): combination strengths, amounts per volume, patch rates, temperatures, percentages
# of a gel, dates, bounds and ranges beside a result, ISO 80000-1 rounding.

_WRITTEN = [
    *_RECORD,
    {"value": 2.5, "unit": "mg", "what": "amLODIPine 2.5 MG Oral Tablet", "names": ["amlodipine"], "kind": "drug"},
    {"value": 0.83, "unit": "mg/ml", "what": "albuterol 0.83 MG/ML Inhalation Solution", "names": ["albuterol"],
     "kind": "drug"},
    {"value": 2.0, "unit": "mg/ml", "what": "Memantine hydrochloride 2 MG/ML Oral Solution",
     "names": ["memantine hydrochloride"], "kind": "drug"},
    {"value": 0.025, "unit": "mg/hr", "what": "72 HR Fentanyl 0.025 MG/HR Transdermal System", "names": ["fentanyl"],
     "kind": "drug"},
    {"value": 38.39, "unit": "Cel", "what": "Oral temperature", "names": ["Oral temperature"], "kind": "observation"},
    {"value": 6.35, "unit": "%", "what": "Hemoglobin A1c/Hemoglobin.total in Blood",
     "names": ["Hemoglobin A1c/Hemoglobin.total in Blood"], "kind": "observation"},
    {"value": 95.2, "unit": "mL/min/{1.73_m2}", "what": "Estimated Glomerular Filtration Rate",
     "names": ["Estimated Glomerular Filtration Rate"], "kind": "observation"},
]


@pytest.mark.parametrize(("summary", "wrong"), [
    ("Hydrocodone 5/300 mg PRN.", []),  # a combination's strengths: its product's
    ("Hydrocodone/APAP 10/300 mg PRN.", ["10/300 mg"]),  # every number of the series is read
    ("Albuterol 2.5 mg/3 mL neb PRN.", []),  # an amount in a volume: 0.83 mg/mL x 3 mL
    ("Albuterol 5 mg/3 mL neb PRN.", ["5 mg/3 mL"]),
    ("Memantine 10 mg BID.", []),  # a dose of a solution with no volume on record: nothing to convert with
    ("Fentanyl 25 mcg patch q72h.", []),  # a patch is named by its hourly rate
    ("Fentanyl 50 mcg/hr patch.", ["50 mcg/hr"]),  # a rate is a unit
    ("Oral temperature 101.1 F.", []),  # converted through UCUM ([degF])
    ("Oral temperature 103 °F.", ["103 °F"]),
    ("Sodium fluoride 2.72% gel.", []),  # 0.0272 mg/mg is 2.72 % through UCUM
    ("Amlodipine 2 mg daily; hydrocodone 5.0 mg.", ["2 mg"]),  # a strength is exact: 2.5 mg is not rounded
    ("A1c 6.4 % (goal <5.7 %); eGFR >= 90.", []),  # a bound is no value; 6.35 rounds to 6.4 (rule B)
    ("LDL 132.6 mg/dL.", []),  # 132.65 rounds to 132.6 (ISO 80000-1 rule A)
    ("A1c reference 4.0-5.6 %.", []),  # a range beside a result is no value
    ("A1c (Mar 2025) 6.4; LDL ok 10/2016; eGFR 18.08.2025: 95.", []),  # a date is no value
    ("A1c (Mar 2025) 7.1.", ["A1c (Mar 2025) 7.1"]),  # the number after the date is still read
])
def test_values_written_as_clinicians_write_them(summary: str, wrong: list[str]) -> None:
    assert check_values(summary, _WRITTEN) == wrong


def test_a_results_number_after_a_date_meets_its_criterion() -> None:
    from groundeval.tasks.summary.values import lab_verdict

    a1c = {**_criterion("lab", ["Hemoglobin A1c/Hemoglobin.total in Blood"]), "values": [{"value": 6.35, "unit": "%"}]}
    assert lab_verdict(a1c, "A1c (Mar 2025) 6.4.", strict=False)[0] is True
    assert lab_verdict(a1c, "A1c (Mar 2025) 7.4.", strict=False)[0] is False


def test_allergy_medications_are_drugs_taken_not_allergies() -> None:
    summary = "Allergy-type meds: EpiPen 0.3mg PRN, fexofenadine 60 PRN."
    assert _decided(_criterion("medication", ["Fexofenadine hydrochloride"]), summary) is True
    assert [m.allergy for m in read(summary, ["epipen"])] == [False]
    assert [m.allergy for m in read("Allergies: penicillin.", ["penicillin"])] == [True]


@pytest.mark.parametrize("summary", ["HTN -> HCTZ25 daily.", "On HCTZ12.5mg.", "hctz25"])
def test_a_drug_name_glued_to_its_strength_is_named(summary: str) -> None:
    assert _decided(_criterion("medication", ["Hydrochlorothiazide"]), summary) is True
    assert _status("HbA1c 6.1%", "hb") == []  # a number inside a name is no strength


@pytest.mark.parametrize("summary", ["Sprain resolved; Tylenol 325 d/c'd.", "Tylenol 325 dc'd.",
                                     "Tylenol courses done."])
def test_a_shorthand_status_after_its_item_ends_it(summary: str) -> None:
    stopped = _criterion("stopped_medication", ["Acetaminophen"], kind="must_not_state")
    assert _decided(stopped, summary) is False
    assert _decided(stopped, "Tylenol 325 PRN.") is True


@pytest.mark.parametrize("summary", ["38M, no active dx.", "dx: none active", "Dx: nil."])
def test_dx_is_a_diagnosis_for_no_active_diagnosis(summary: str) -> None:
    assert _decided(_criterion("no_condition", []), summary) is True
    assert _decided(_criterion("no_condition", []), "Dx: hypertension.") is False


def test_a_one_line_field_list_reads_each_field_apart() -> None:
    summary = "38yo M | dx: none active | meds: hydrocodone 5/APAP 300 q4-6h | allergies: none"
    assert _status(summary, "hydrocodone") == ["current"]
    assert _status(summary.replace(" | meds:", ", no meds:"), "hydrocodone") == ["negated"]
    table = "| Drug | Current? |\n|---|---|\n| Hydrocodone | no |"
    assert _status(table, "hydrocodone") == ["ended"]  # a table's row is still one item


def test_a_relative_clause_ends_a_negation() -> None:
    summary = "Back pain is recorded as a finding rather than a diagnosis, for which he takes Norco daily."
    assert _decided(_criterion("medication", ["Acetaminophen", "Hydrocodone Bitartrate"]), summary) is True
    assert _status("Findings rather than Norco.", "norco") == ["negated"]


@pytest.mark.parametrize("schedule", ["taken every four to six hours", "used twice daily", "taken as needed"])
def test_a_participle_with_a_schedule_is_a_dose_not_a_status(schedule: str) -> None:
    summary = f"His analgesia is a combination tablet of hydrocodone 5 mg and paracetamol 300 mg, {schedule}."
    assert _status(summary, "hydrocodone") == ["current"]
    assert _status("His analgesia was hydrocodone 5 mg, taken 2015.", "hydrocodone") == ["ended"]
    assert _status("Alteplase 100 mg, given once in 2018.", "alteplase") == ["ended"]  # a single dose


@pytest.mark.parametrize("summary", [
    "Several short illnesses have all settled: gingivitis, streptococcal sore throat, and a sinusitis.",
    "Streptococcal sore throat settled.", "Streptococcal sore throat got better.",
])
def test_settled_and_got_better_end_a_problem(summary: str) -> None:
    assert _decided(RESOLVED, summary) is False
    assert _decided(RESOLVED, "Streptococcal sore throat, gingivitis.") is True


@pytest.mark.parametrize("summary", ["DHx: GTN spray 0.4mg/dose PRN.", "Glyceryl trinitrate spray PRN."])
def test_glyceryl_trinitrate_names_nitroglycerin(summary: str) -> None:
    assert _decided(_criterion("medication", ["Nitroglycerin"]), summary) is True
    assert _decided(_criterion("medication", ["Nitroglycerin"]), "Isosorbide mononitrate.") is False


def test_a_tables_end_column_ends_its_row() -> None:
    summary = ("Drug | Since | Until\nWarfarin 5 mg | 1995-09 | - (active)\n"
               "Penicillin V 500 mg | 2012-01-02 | 2012-01-12\nAcetaminophen 325 mg tab, PRN | 2019-04-17 | stopped")
    assert _decided(STOPPED | {"names": ["Penicillin V"]}, summary) is False
    assert _decided(_criterion("stopped_medication", ["Acetaminophen"], kind="must_not_state"), summary) is False
    assert _status(summary, "warfarin") == ["current"]


def test_a_year_in_a_problems_lead_in_dates_the_problem_not_its_plan() -> None:
    summary = "# Hypertension (1929): hydrochlorothiazide 25 mg.\n# Atrial fibrillation (1991): warfarin 5 mg."
    assert _decided(_criterion("medication", ["Hydrochlorothiazide"]), summary) is True
    assert _status(summary, "warfarin") == ["current"]
    assert _status("2012: penicillin V course.", "penicillin v") == ["ended"]  # a date-only lead-in still dates


@pytest.mark.parametrize("summary", ["Penicillin V 500 mg, prescribed in 2012 for a sore throat, has been stopped.",
                                     "Penicillin V, for strep, on 2012-01-02, was discontinued."])
def test_an_ended_predicate_after_an_aside_ends_the_subject(summary: str) -> None:
    assert _decided(STOPPED, summary) is False
    assert _decided(STOPPED, "Warfarin, penicillin V 500 mg, and digoxin, which has been stopped.") is True


@pytest.mark.parametrize("summary", ["Pharyngitis x2, streptococcal sore throat, gingival dz - resolved.",
                                     "Streptococcal sore throat, gingivitis \u2013 all resolved."])
def test_a_status_after_a_dash_ends_the_whole_list(summary: str) -> None:
    assert _decided(RESOLVED, summary) is False
    assert _decided(RESOLVED, "Streptococcal sore throat, gingivitis, resolved.") is True  # a bare clause: the last


# Rules version 8, second round: kinds found on 36 summaries by two further blind writers (dev-c*, dev-d*).

@pytest.mark.parametrize("summary", ["He is recovering from a sprained ankle.", "Ankle sprain, improving."])
def test_another_description_of_a_resolved_problem_states_it_as_current(summary: str) -> None:
    ankle = _criterion("resolved_condition", ["Sprain of ankle"], kind="must_not_state")
    assert _decided(ankle, summary) is True
    assert _decided(ankle, "Ankle sprain (2019) - resolved.") is False


def test_a_result_is_named_by_the_measure_it_is_part_of() -> None:
    record = [{"value": 142.0, "unit": "mm[Hg]", "what": "Systolic Blood Pressure", "kind": "observation",
               "names": ["Systolic Blood Pressure"]},
              {"value": 85.0, "unit": "mm[Hg]", "what": "Diastolic Blood Pressure", "kind": "observation",
               "names": ["Diastolic Blood Pressure"]},
              {"value": 28.42, "unit": "kg/m2", "what": "Body mass index", "kind": "observation", "names": ["BMI"]},
              {"value": 93.1, "unit": "kg", "what": "Body Weight", "kind": "observation", "names": ["Body Weight"]}]
    assert check_values("His BMI was 28.42 kg/m2 and blood pressure 142/85 mmHg.", record) == []
    assert check_values("BMI 28.42 kg/m2 (Wt 93.1 kg).", record) == []
    assert check_values("BMI 28.42 kg/m2 and blood pressure 152/85 mmHg.", record) != []


def test_not_a_current_medicine_is_no_current_label() -> None:
    assert hedged_verdict(STOPPED, "The penicillin V was discontinued and is not a current medicine.") is None
    assert hedged_verdict(STOPPED, "Older penicillin V courses - completed (current order dated 2025).") is None
    assert hedged_verdict(STOPPED, "Penicillin V (current, discontinued).") is not None


def test_a_drug_that_goes_on_under_a_history_lead_in_is_current() -> None:
    assert _status("Background: hypertension since 2003, treated with HCTZ 25 mg since 2004.", "hctz") == ["current"]
    assert _status("Background: HCTZ 25 mg in 2004.", "hctz") == ["ended"]


def test_a_negation_inside_a_bracket_stays_inside_it() -> None:
    summary = "BP 142/85 mmHg (no prior hypertension diagnosis), BMI 28.42 kg/m2."
    assert _status(summary, "bmi") == ["current"]
    assert _status("No hypertension, BMI or diabetes.", "bmi") == ["negated"]


def test_a_number_the_words_before_it_make_another_things_is_no_result_value() -> None:
    record = [{"value": 189.0, "unit": "mm[Hg]", "what": "Systolic Blood Pressure", "kind": "observation",
               "names": ["Systolic Blood Pressure"]}]
    assert check_values("BP uncontrolled despite 3 antihypertensives.", record) == []
    assert check_values("BP 150.", record) != []


def test_a_value_written_before_its_drug_is_that_drugs() -> None:
    record = [{"value": 10.0, "unit": "mg/ml", "what": "hydrocortisone 10 MG/ML Topical Cream",
               "names": ["hydrocortisone"], "kind": "drug"},
              {"value": 0.3, "unit": "ml", "what": "0.3 ML epinephrine 1 MG/ML Auto-Injector",
               "names": ["epinephrine"], "kind": "drug"}]
    assert check_values("Hydrocortisone 10 mg/mL cream and a 0.3 mL epinephrine auto-injector.", record) == []
    assert check_values("Hydrocortisone 10 mg/mL cream and a 0.5 mL epinephrine auto-injector.", record) != []


def test_a_singular_current_medication_heading_heads_its_list() -> None:
    summary = "Resolved\n- gingivitis\n\nCurrent medication\n- hydrocodone 5 mg\n\nPast medication\n- fluoride gel"
    assert _status(summary, "hydrocodone") == ["current"]
    assert _status(summary, "fluoride gel") == ["ended"]


# Rules version 8, third round: kinds found on 24 summaries by two further blind writers (dev-e*, dev-f*).

def test_a_statement_of_no_allergy_makes_nothing_beside_it_an_allergen() -> None:
    summary = "Fexofenadine 60 and an epinephrine auto-injector 0.3 ml - but the chart lists no allergies."
    assert [m.allergy for m in read(summary, ["fexofenadine"])] == [False]
    assert [m.allergy for m in read("Allergic to fexofenadine (rash).", ["fexofenadine"])] == [True]


def test_a_history_lead_in_does_not_end_what_its_sentence_calls_current() -> None:
    summary = "Atopic history: Allegra 60 mg and an EpiPen, all still on his active list since 1997."
    assert _status(summary, "allegra") == ["current"]
    assert _status("History of penicillin V use.", "penicillin v") == ["ended"]


def test_a_drug_added_in_a_year_is_current() -> None:
    summary = "On HCTZ 25 mg, amlodipine 5 mg and clopidogrel 75 mg (added Mar 2019) - bleeding risk high."
    assert _status(summary, "amlodipine") == ["current"]
    assert _status("Amlodipine 5 mg (2019).", "amlodipine") == ["ended"]


@pytest.mark.parametrize(("names", "written"), [
    (["Anemia"], "He's anaemic."), (["Hypertension"], "Hypertensive on HCTZ 25."),
])
def test_the_adjective_of_a_problem_names_it(names: list[str], written: str) -> None:
    assert _decided(_criterion("condition", names), written) is True


def test_nitro_is_nitroglycerin() -> None:
    assert _decided(_criterion("medication", ["Nitroglycerin"]), "Nitro spray 0.4 if chest pain.") is True
