"""Text read as clinicians write it: sections, lists, tables, negation, history, collective qualifiers,
abbreviations, brands and values per item (each kind over short texts, scored by rules and baseline judge)."""

from __future__ import annotations

from typing import Any

import pytest

from groundeval.scoring import Parsed
from groundeval.tasks.summary.judge import BaselineJudge
from groundeval.tasks.summary.reading_layout import none_under
from groundeval.tasks.summary.record import record_values
from groundeval.tasks.summary.scorer import SummaryScorer, rule_verdict
from groundeval.tasks.summary.text import collective, word_count
from tests._summary_kinds import criterion as _criterion, decided as _decided, status as _status

JUDGE = BaselineJudge()


# -- sections and lists ------------------------------------------------------------------------

@pytest.mark.parametrize("summary", [
    "Past:\n- oxycodone 5 mg",
    "## Resolved problems\n- oxycodone dependence",
    "**Completed/Stopped medications**\n- oxycodone",
    "Completed medications: oxycodone, amoxicillin",
    "Current medications:\n- lisinopril\n\nStopped medications:\n- oxycodone",
    "| Drug | Status |\n|---|---|\n| lisinopril | current |\n| oxycodone | stopped 2019 |",
])
def test_a_heading_a_lead_in_or_a_table_row_gives_its_items_an_ended_status(summary: str) -> None:
    assert _status(summary, "oxycodone") == ["ended"]
    stopped = _criterion("stopped_medication", ["oxyCODONE Hydrochloride"], kind="must_not_state")
    assert _decided(stopped, summary) is False  # a past opioid under its heading is not stated as current


def test_items_under_a_current_heading_stay_current_after_a_past_section() -> None:
    summary = "Past:\n- gout\n\n## Active problems\n- Essential hypertension\nMedications: lisinopril"
    assert _status(summary, "gout") == ["ended"] and _status(summary, "essential hypertension") == ["current"]
    assert _decided(_criterion("condition", ["Essential hypertension"]), summary)
    assert not _decided(_criterion("condition", ["Gout"]), summary)


def test_a_drug_allergy_as_a_bullet_under_allergies_is_credited() -> None:
    allergy = _criterion("allergy", ["Aspirin"])
    assert rule_verdict(allergy, "Allergies:\n- Aspirin (hives)\n\nMedications:\n- lisinopril") is True
    assert _decided(allergy, "Allergies: ASA") is True  # its abbreviation, under the heading
    assert not _decided(allergy, "Medications:\n- aspirin 81 mg")  # a drug taken is not an allergy
    assert not _decided(_criterion("medication", ["aspirin"]), "Allergies:\n- aspirin")  # nor an allergy a drug


@pytest.mark.parametrize(("summary", "says_none"), [
    ("Medications:\n- None current", True),
    ("Medications: none.", True),
    ("**Medications**\n- None", True),
    ("Medications:\n- lisinopril", False),
    ("Allergies:\n- None known\nMedications:\n- lisinopril", False),
])
def test_none_under_a_medications_heading_states_no_current_medication(summary: str, says_none: bool) -> None:
    assert bool(none_under(summary, ("medication",))) is says_none
    assert _decided(_criterion("no_medication", []), summary) is says_none


def test_words_counted_are_words() -> None:
    table = "| Drug | Dose |\n|---|---|\n| **lisinopril** | 10 mg |\n| metformin | 500 mg |"
    assert word_count(table) == 8
    assert word_count("## Past\n- gout\n- asthma") == 3


# -- negation, history, collective qualifiers ------------------------------------------------------

def test_a_negated_item_is_never_a_mention_of_an_active_one() -> None:
    summary = "Not on lisinopril, metformin or aspirin. No essential hypertension, hyperlipidemia."
    for phrase in ("lisinopril", "metformin", "aspirin", "essential hypertension", "hyperlipidemia"):
        assert _status(summary, phrase) == ["negated"], phrase
    assert not _decided(_criterion("medication", ["lisinopril"]), summary)
    assert not _decided(_criterion("condition", ["Essential hypertension"]), summary)
    assert _decided(_criterion("stopped_medication", ["metformin"], kind="must_not_state"), summary) is False


@pytest.mark.parametrize(("summary", "phrase", "status"), [
    ("Currently on lisinopril; metformin (stopped 2020).", "metformin", "ended"),
    ("Currently on lisinopril; metformin (stopped 2020).", "lisinopril", "current"),
    ("Lisinopril 10 mg daily, metformin stopped.", "lisinopril", "current"),
    ("No longer on metformin.", "metformin", "ended"),
    ("History of gout, resolved.", "gout", "ended"),
])
def test_history_read_by_context_and_the_rules_the_defaults_miss(summary: str, phrase: str, status: str) -> None:
    assert _status(summary, phrase) == [status]


@pytest.mark.parametrize("summary", [
    "Medications on file, some current, others stopped: lisinopril, oxycodone.",
    "Medications (all ever prescribed), several since stopped: lisinopril, oxycodone",
    "Medications (current and past):\n- lisinopril\n- oxycodone",
    "Lisinopril, oxycodone, some stopped.",
])
def test_a_collective_qualifier_gives_no_item_a_status(summary: str) -> None:
    assert collective(summary)
    assert _status(summary, "lisinopril") == ["hedged"] and _status(summary, "oxycodone") == ["hedged"]
    assert not _decided(_criterion("medication", ["lisinopril"]), summary)  # the active one is not met
    assert _decided(_criterion("stopped_medication", ["oxyCODONE Hydrochloride"], kind="must_not_state"), summary)


def test_a_list_with_each_item_labelled_is_not_collective() -> None:
    summary = "Current: lisinopril. Stopped: oxycodone (2019), amoxicillin."
    assert not collective(summary)
    assert _status(summary, "lisinopril") == ["current"] and _status(summary, "oxycodone") == ["ended"]


# -- abbreviations, synonyms, brands ----------------------------------------------------------------

@pytest.mark.parametrize(("name", "written"), [
    ("Essential hypertension", "HTN"), ("Ischemic heart disease", "IHD"),
    ("Acute non-ST segment elevation myocardial infarction", "NSTEMI"),
    ("Traumatic or nontraumatic brain injury", "TBI"), ("Osteoarthritis of knee", "OA knee"),
    ("Chronic kidney disease stage 1", "CKD stage 1"), ("Hyperlipidemia", "hyperlipidaemia"),
    ("Disorder of kidney due to diabetes mellitus", "diabetic kidney disease"), ("Anemia", "anaemia"),
])
def test_clinical_abbreviations_and_synonyms_name_a_condition(name: str, written: str) -> None:
    criterion = _criterion("condition", [name])
    assert JUDGE.decide(criterion, f"Problems: {written}.", label="t").met
    assert not JUDGE.decide(criterion, f"No {written}.", label="t").met


@pytest.mark.parametrize(("names", "written"), [
    (["aspirin"], "ASA 81 mg"), (["Nitroglycerin"], "NTG SL prn"), (["Hydrochlorothiazide"], "HCTZ 25 mg"),
    (["metoprolol succinate"], "Toprol XL"), (["Warfarin Sodium"], "Coumadin"),
])
def test_drug_abbreviations_and_brands_name_a_drug(names: list[str], written: str) -> None:
    assert JUDGE.decide(_criterion("medication", names), f"Medications: {written}.", label="t").met


def test_a_stopped_drug_named_by_its_brand_is_that_drug() -> None:
    stopped = _criterion("stopped_medication", ["medroxyPROGESTERone acetate"], kind="must_not_state")
    assert _decided(stopped, "Medications: Depo-Provera injection every 3 months.")
    assert not _decided(stopped, "Depo-Provera stopped in 2019.")


# -- values per item --------------------------------------------------------------------------------

def _request(display: str, status: str = "active") -> dict[str, Any]:
    return {"resource": {"resourceType": "MedicationRequest", "status": status, "medicationCodeableConcept": {
        "coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": display[:6], "display": display}]}}}


def _observation(text: str, value: float, unit: str) -> dict[str, Any]:
    return {"resource": {"resourceType": "Observation", "status": "final", "code": {"text": text},
                         "valueQuantity": {"value": value, "code": unit}}}


BUNDLE = {"resourceType": "Bundle", "entry": [
    _request("lisinopril 10 MG Oral Tablet"), _request("Simvastatin 20 MG Oral Tablet"),
    _request("NDA020800 0.3 ML Epinephrine 1 MG/ML Auto-Injector"), _request("Hydrocortisone 10 MG/ML Topical Cream"),
    _observation("Low Density Lipoprotein Cholesterol", 162.4, "mg/dL"),
]}


def _invented(summary: str) -> list[str]:
    criteria = [_criterion("lab", ["LDL cholesterol"], values=[{"value": 162.4, "unit": "mg/dL"}])]
    scorer = SummaryScorer(JUDGE, max_words=250, min_rubric_score=0.8, reliability=dict)
    score = scorer.score(_CASE, {"criteria": criteria, "record_values": record_values(BUNDLE)}, Parsed(summary, True))
    invented: list[str] = score.details["invented_values"]
    return invented


class _Case:
    case_id = "c"  # the scorer reads only the case id (judge labels)


_CASE: Any = _Case()


@pytest.mark.parametrize(("summary", "wrong"), [
    ("Lisinopril 20 mg daily; simvastatin 20 mg.", ["20 mg"]),  # simvastatin's strength is not lisinopril's
    ("Lisinopril 10 mg daily; simvastatin 20 mg.", []),
    ("EpiPen: epinephrine 0.3 mg IM prn.", []),  # 0.3 mL of 1 mg/mL
    ("Epinephrine 300 mcg auto-injector.", []),  # UCUM: 0.3 mg
    ("Epinephrine 0.5 mg.", ["0.5 mg"]),
    ("Hydrocortisone 1% cream.", []),  # 10 mg/mL is 1 % (w/v)
    ("Hydrocortisone 2.5% cream.", ["2.5%"]),
    ("LDL 162 (high).", []),
    ("LDL 98, above target.", ["LDL 98"]),  # a number beside a result's name is its value
    ("LDL 98 mg/dL.", ["98 mg/dL"]),
])
def test_a_value_is_compared_with_its_own_items_values(summary: str, wrong: list[str]) -> None:
    assert _invented(summary) == wrong


def test_a_result_without_a_unit_is_judged_as_that_results_value() -> None:
    ldl = _criterion("lab", ["LDL cholesterol"], values=[{"value": 162.4, "unit": "mg/dL"}])
    assert rule_verdict(ldl, "LDL cholesterol 162 (2020-01-01).") is True
    assert rule_verdict(ldl, "LDL cholesterol 98 (2020-01-01).") is False
    assert JUDGE.decide(ldl, "LDL 162, high.", label="t").met
    assert not JUDGE.decide(ldl, "LDL 98; HbA1c 162.", label="t").met


# -- kinds found on the development set (fixtures/summary-calibration/dev-labels.jsonl) -------------

@pytest.mark.parametrize("summary", [
    "PROBLEMS\n- Hypertension\n\nDISCONTINUED\n- Penicillin V potassium 500 mg",
    "Medications\n- lisinopril\nDiscontinued\n- Penicillin V potassium 500 mg",
])
def test_a_bare_or_capitalised_heading_governs_its_list(summary: str) -> None:
    assert _status(summary, "penicillin v potassium") == ["ended"]
    stopped = _criterion("stopped_medication", ["Penicillin V Potassium"], kind="must_not_state")
    assert _decided(stopped, summary) is False


@pytest.mark.parametrize(("summary", "status"), [
    ("Past acute bronchitis, viral pharyngitis and gingivitis.", "ended"),
    ("Acute bronchitis, viral pharyngitis and gingivitis, all resolved.", "ended"),
    ("History of gingivitis, viral pharyngitis.", "ended"),
    ("Hypertension, gingivitis and asthma, all current.", "current"),
    ("Gingivitis, asthma, some resolved.", "hedged"),  # a collective qualifier still hedges
])
def test_a_sentence_opening_with_an_ended_word_or_qualifying_each_item_ends_its_list(summary: str,
                                                                                     status: str) -> None:
    assert _status(summary, "gingivitis") == [status]


def test_a_none_line_with_a_parenthesis_under_a_problems_heading_says_none() -> None:
    assert none_under("Active problems:\n- None (findings only: chronic pain)", ("problem",))
    assert none_under("Active problems:\n- Hypertension (since 2003: stage 1)", ("problem",)) is None


@pytest.mark.parametrize(("name", "written"), [
    ("Opioid abuse", "opioid use disorder"), ("Coronary Heart Disease", "CHD"),
])
def test_snomed_and_dsm_synonyms_name_a_condition(name: str, written: str) -> None:
    assert JUDGE.decide(_criterion("condition", [name]), f"Problems: {written}.", label="t").met


def test_a_brand_names_its_drugs_values() -> None:
    bundle = {"resourceType": "Bundle", "entry": [
        _request("Simvastatin 20 MG Oral Tablet"),
        _request("24 HR metoprolol succinate 100 MG Extended Release Oral Tablet")]}
    scorer = SummaryScorer(JUDGE, max_words=250, min_rubric_score=0.8, reliability=dict)
    truth = {"criteria": [], "record_values": record_values(bundle)}
    assert scorer.score(_CASE, truth, Parsed("Simvastatin 20 mg, Toprol XL 100 mg.", True)).details[
        "invented_values"] == []
    assert scorer.score(_CASE, truth, Parsed("Simvastatin 20 mg, Toprol XL 50 mg.", True)).details[
        "invented_values"] == ["50 mg"]


@pytest.mark.parametrize(("ctype", "names", "summary", "flagged"), [
    ("medication", ["buprenorphine", "naloxone"], "Buprenorphine/naloxone was stopped.", True),
    ("medication", ["Warfarin Sodium"], "Not on warfarin.", True),
    ("medication", ["Warfarin Sodium"], "Warfarin daily.", False),
    ("condition", ["Hypertension"], "No hypertension.", True),
    ("condition", ["Stroke"], "Prior stroke (2006).", False),  # an event disorder written as history
])
def test_a_current_item_stated_as_ended_is_a_contradiction(ctype: str, names: list[str], summary: str,
                                                          flagged: bool) -> None:
    scorer = SummaryScorer(JUDGE, max_words=250, min_rubric_score=0.0, reliability=dict)
    truth = {"criteria": [_criterion(ctype, names)], "record_values": []}
    score = scorer.score(_CASE, truth, Parsed(summary, True))
    assert (score.details["criteria"][0].get("flag") == "stated_as_ended") is flagged
    assert (score.metrics["contradictions"] >= 1) is flagged
