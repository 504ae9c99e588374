"""The summary rubric derived from the record, the rule layer, and the fixture script's --check."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundeval.tasks.summary import SummaryTask
from groundeval.tasks.summary.record import drug_names
from groundeval.tasks.summary.scorer import rule_verdict
from groundeval.tasks.summary.text import stated_values, value_matches
from tests._paths import REPO, load_script

CASES = REPO / "fixtures" / "summary"
TASK = SummaryTask()
MOISES = CASES / "Moises22_Rowe323_7b84f6f4-1d93-52f2-dbeb-f71177ac1fc9.json"
MAX_KRIS = CASES / "Max_Kris_f9120576-f949-45de-ae43-c0d902ecb249.json"
TAMA = CASES / "Tama137_Schamberger479_9311ccc6-c1d0-ccae-d783-09d5d41709d4.json"


def _criteria(path: Path) -> list[dict[str, Any]]:
    criteria: list[dict[str, Any]] = TASK.truth(TASK.load_case(path))["criteria"]
    return criteria


def test_disorders_come_by_semantic_tag_and_ended_items_become_must_not_criteria() -> None:
    criteria = {c["id"]: c for c in _criteria(MOISES)}
    names = {c["names"][0] for c in criteria.values() if c["type"] == "condition"}
    assert "Ischemic heart disease" in names and "Anemia" in names
    assert "Prediabetes" not in names and "Stress" not in names  # (finding): not a diagnosis
    # Gingivitis is both resolved and active again: it is a current problem, never a must-not
    assert "Gingivitis" in names and not any(
        c["type"] == "resolved_condition" and c["names"] == ["Gingivitis"] for c in criteria.values())
    stopped = [c for c in criteria.values() if c["type"] == "stopped_medication"]
    assert stopped and all(c["points"] < 0 and c["kind"] == "must_not_state" for c in stopped)
    hydrocodone = [c for c in stopped if any("hydrocodone" in n.lower() for n in c["names"])]
    assert hydrocodone and all(c["safety"] and c["points"] == -2 for c in hydrocodone)  # ISMP: opioids


def test_a_display_without_its_semantic_tag_takes_the_concepts_tag_from_its_fully_specified_name() -> None:
    # Older Synthea records write "Hypertension", not "Hypertensive disorder, systemic arterial (disorder)":
    # the record's hypertension, atrial fibrillation, coronary heart disease and cardiac arrest are active
    # disorders to mention, never a "no active diagnosis" record; its resolved colon polyp is a must-not.
    criteria = {c["id"]: c for c in _criteria(MAX_KRIS)}
    assert {c["names"][0] for c in criteria.values() if c["type"] == "condition"} == {
        "Hypertension", "Atrial Fibrillation", "Coronary Heart Disease", "Cardiac Arrest"}
    assert "no_condition" not in criteria
    assert "resolved_condition:68496003" in criteria  # Polyp of colon, resolved


def test_the_fixture_script_refuses_a_concept_whose_tag_it_cannot_know(tmp_path: Path) -> None:
    build = load_script("make_summary").build
    bundle = json.loads(MAX_KRIS.read_text())
    for entry in bundle["entry"]:
        if entry["resource"]["resourceType"] == "Condition":
            entry["resource"]["code"]["coding"][0].update(code="999999001", display="Mystery illness")
            break
    (tmp_path / "x.json").write_text(json.dumps(bundle))
    with pytest.raises(SystemExit, match=r"FSN_TAGS: 999999001 'Mystery illness'"):
        build(tmp_path)


def test_the_drug_allergy_is_safety_critical_and_counts_match_the_manifest() -> None:
    allergy = [c for c in _criteria(TAMA) if c["type"] == "allergy"]
    assert len(allergy) == 1 and allergy[0]["safety"] and allergy[0]["points"] == 2
    manifest = json.loads((CASES / "MANIFEST.json").read_text())
    for path in TASK.case_files(CASES):
        counts: dict[str, int] = {}
        for c in _criteria(path):
            counts[c["type"]] = counts.get(c["type"], 0) + 1
        assert counts == manifest["files"][path.name]["criteria"], path.name


def test_drug_names_drop_package_words_and_keep_ingredients() -> None:
    assert drug_names("Acetaminophen 325 MG / HYDROcodone Bitartrate 7.5 MG Oral Tablet") == (
        ("Acetaminophen", "HYDROcodone Bitartrate"), None)
    assert drug_names("Abuse-Deterrent 12 HR Oxycodone Hydrochloride 10 MG Extended Release Oral Tablet [Oxycontin]") \
        == (("Oxycodone Hydrochloride",), "Oxycontin")
    assert drug_names("Lasix 40mg") == (("Lasix",), None)


def test_the_rule_layer_decides_verbatim_names_and_values_and_leaves_the_rest() -> None:
    med = {"type": "medication", "kind": "must_mention", "names": ["metoprolol succinate"], "alternatives": ["Toprol"]}
    assert rule_verdict(med, "Takes Metoprolol  Succinate 100 mg daily.") is True
    assert rule_verdict(med, "Takes Toprol XL.") is True
    assert rule_verdict(med, "Takes a beta blocker.") is None  # the judge decides
    lab = {"type": "lab", "kind": "must_mention", "names": ["Blood pressure panel"], "alternatives": [],
           "values": [{"value": 132.0, "unit": "mm[Hg]"}, {"value": 85.0, "unit": "mm[Hg]"}]}
    assert rule_verdict(lab, "Blood pressure panel 132/85 mmHg on 2025-01-02.") is True
    assert rule_verdict(lab, "Blood pressure panel 132/86 mmHg.") is False  # its own number, wrong
    assert rule_verdict(lab, "BP 132/85 mmHg.") is None  # an abbreviation: the judge decides
    stopped = {"type": "stopped_medication", "kind": "must_not_state", "names": ["Amoxicillin"], "alternatives": []}
    assert rule_verdict(stopped, "No antibiotics.") is False  # not named: not stated
    assert rule_verdict(stopped, "Amoxicillin was stopped.") is False  # named as ended
    assert rule_verdict(stopped, "Takes amoxicillin.") is True


def test_a_stated_value_must_be_one_the_record_holds() -> None:
    record = [{"value": 6.27, "unit": "%"}, {"value": 100.0, "unit": "mg"}]
    a1c, dose = stated_values("A1c 6.3 %, metoprolol 150 mg, age 54 years.")  # years is not a unit read
    assert (a1c["value"], a1c["unit"], dose["value"]) == (6.3, "%", 150.0)
    assert value_matches(a1c, record) and not value_matches(dose, record)


@pytest.fixture(scope="module")
def make_summary(built_script: Callable[[str], ModuleType]) -> ModuleType:
    return built_script("make_summary")


def test_the_fixture_script_check_passes_and_names_a_stale_file(
    make_summary: ModuleType, synthea_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert make_summary.main(["--source", str(synthea_dir), "--check"]) == 0
    assert "checked 25 case files and MANIFEST.json" in capsys.readouterr().out
    assert make_summary.main(["--source", str(synthea_dir), "--out", str(tmp_path)]) == 0
    first = sorted(tmp_path.glob("*_*.json"))[0]
    first.write_text(first.read_text().replace('"active"', '"stopped"', 1))
    capsys.readouterr()
    assert make_summary.main(["--source", str(synthea_dir), "--out", str(tmp_path), "--check"]) == 1
    assert f"stale or missing: {first}" in capsys.readouterr().err
