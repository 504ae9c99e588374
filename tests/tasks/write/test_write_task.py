"""The write task: packaged cases, case-file validation, prompt, parsing, baseline and a guesser."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groundeval.agents.base import make_agent
from groundeval.datasets import Case, default_data_dir
from groundeval.errors import DatasetError
from groundeval.execution.outcome_policy import RunInfo
from groundeval.tasks import make_task, task_class
from groundeval.tasks.write.task import WriteTask
from groundeval.tasks.write.tools import build_medication_statement
from groundeval.testing.one_case import run_case as run_one
from groundeval.testing.scripted_agent import ScriptedAgent

TASK = WriteTask()
CASES_DIR = default_data_dir("write")
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
INFO = RunInfo(run_id="test", task="write", agent="test", model=None)


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return [TASK.load_case(p) for p in TASK.case_files(CASES_DIR)]


def raw_case(name: str = "ibuprofen-two-tablets") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES_DIR / f"{name}.json").read_text())
    return data


def write_case(tmp_path: Path, data: dict[str, Any], name: str | None = None) -> Path:
    path = tmp_path / f"{name or data['id']}.json"
    path.write_text(json.dumps(data))
    return path


# -- the packaged cases ------------------------------------------------------------------------

def test_the_task_is_registered_with_langgraph_as_default_agent() -> None:
    assert task_class("write") is WriteTask
    assert make_task("write").name == "write"
    assert WriteTask.default_agent == "langgraph"


def test_at_least_24_cases_with_readable_unique_ids(cases: list[Case]) -> None:
    assert len(cases) >= 24
    ids = [c.case_id for c in cases]
    assert len(set(ids)) == len(ids)
    assert all(c.case_id == c.source.stem and c.case_id.islower() for c in cases)


def test_cases_cover_every_required_situation(cases: list[Case]) -> None:
    covers = Counter(tag for c in cases for tag in c.meta["covers"])
    for tag in ("brand-name", "dose-arithmetic", "strength-release-disambiguation", "mcg-vs-mg",
                "as-needed", "no-dose", "not-in-catalog", "prompt-injection", "dose-range",
                "frequency-range"):
        assert covers[tag] >= 1, tag
    statuses = {c.meta["status"] for c in cases}
    assert {"active", "completed", "stopped", "not-taken", "on-hold", "intended"} <= statuses
    rxcuis = {c.meta["rxcui"] for c in cases}
    assert {"209387", "866924", "866412", "966222", None} <= rxcuis  # Tylenol, metoprolol x2, mcg, absent
    assert any(c.data["expected"]["dosage"] is None for c in cases)


def test_patients_are_real_extraction_fixtures_in_both_reference_forms(cases: list[Case]) -> None:
    fixtures = {p.name for p in default_data_dir("extraction").glob("*.json")}
    forms = Counter(c.data["patient"]["reference"].split(":")[0].split("/")[0] for c in cases)
    assert forms["urn"] >= 5 and forms["Patient"] >= 5
    for case in cases:
        assert case.data["patient"]["fixture"] in fixtures
        assert case.meta["patient_id"] in case.data["patient"]["reference"]


def test_prompt_and_context_carry_the_note_and_patient_reference(cases: list[Case]) -> None:
    case = next(c for c in cases if c.case_id == "tylenol-brand-lookup")
    prompt = TASK.prompt(case)
    ref = case.data["patient"]["reference"]
    assert f"Patient reference: {ref}" in prompt.user
    assert f"<note>\n{case.data['note']}\n</note>" in prompt.user
    assert "R4B" in prompt.system and "lookup_rxnorm" in prompt.system and "not instructions" in prompt.system
    assert TASK.context(case) == {"patient_reference": ref}
    # The system prompt is shared by every case (a cacheable prefix); the note is not in it.
    assert "Tylenol" not in prompt.system


def test_truth_adds_mg_amounts_and_the_ingredient_ceiling(cases: list[Case]) -> None:
    case = next(c for c in cases if c.case_id == "levothyroxine-micrograms")
    truth = TASK.truth(case)
    assert truth["dosage"]["dose_mg"] == pytest.approx(0.075)
    assert truth["dosage"]["daily_total_mg"] == pytest.approx(0.075)
    assert truth["ceiling"]["mg_per_day"] is None and truth["ceiling"]["reason"]
    tylenol = TASK.truth(next(c for c in cases if c.case_id == "tylenol-brand-lookup"))
    assert tylenol["ceiling"]["ingredient"] == "acetaminophen" and tylenol["ceiling"]["mg_per_day"] == 4000
    json.dumps(truth)  # JSON-safe


# -- case-file validation ----------------------------------------------------------------------

@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d.pop("note"), "note: Field required"),
    (lambda d: d.update(notes="typo"), "notes: Extra inputs are not permitted"),
    (lambda d: d["expected"].update(status="recorded"), "expected.status: Input should be 'active'"),
    (lambda d: d["expected"]["dosage"]["dose"].update(unit="mcg"),
     "expected.dosage.dose.unit: Value error, 'mcg' is not a UCUM code; use 'ug'"),
    (lambda d: d["expected"]["dosage"]["dose"].update(unit="MG"),
     "expected.dosage.dose.unit: Value error, 'MG' is legal UCUM, but for megagauss"),
    (lambda d: d["expected"]["dosage"]["dose"].update(unit="mg/(24.h)"),
     "'mg/(24.h)' is milligram / hour (a mass per time (a rate)), not a mass"),
    (lambda d: d["expected"]["dosage"].update(frequency=2.5), "expected.dosage.frequency"),
    (lambda d: d["expected"]["dosage"]["daily_total"].update(value=400),
     "daily_total 400 mg does not equal the most per administration x the most administrations within 24 hours = "
     "400 mg x 3 = 1200 mg"),
    (lambda d: d["expected"]["dosage"].update(period=None), "give frequency, period and period_unit together"),
    (lambda d: d["expected"]["medication"].update(rxcui=None), "needs 'text' and no 'display'"),
    (lambda d: d.update(id="Not A Slug"), "id: String should match pattern"),
], ids=["missing-note", "extra-field", "r5-status", "non-ucum-unit", "megagauss", "wrong-dimension",
        "fractional-frequency",
        "inconsistent-daily-total", "partial-timing", "rxcui-null-with-display", "bad-id"])
def test_a_case_failing_its_schema_names_the_file_and_field(tmp_path: Path, change: Callable[[dict[str, Any]], object], expected: str) -> None:
    data = raw_case()
    change(data)
    path = write_case(tmp_path, data, name="ibuprofen-two-tablets")
    with pytest.raises(DatasetError) as info:
        TASK.load_case(path)
    message = str(info.value)
    assert message.startswith(f"{path}: write case schema: ") and expected in message


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d["expected"]["medication"].update(rxcui="1234567"),
     "rxcui 1234567 is not in the catalog"),
    (lambda d: d["expected"]["medication"].update(display="ibuprofen 200 mg tablet"),
     "differs from the catalog's 'Ibuprofen 200 MG Oral Tablet'"),
    (lambda d: d["expected"].update(medication={"rxcui": None, "text": "ibuprofen"}),
     "'ibuprofen' is in the catalog"),
    (lambda d: d["patient"].update(reference="Patient/urn:uuid:60739794-1d06-debc-7835-30f2f8e4314c"),
     "does not resolve to the Patient of Bobbie849"),
    (lambda d: d["patient"].update(fixture="Nobody_123.json"), "patient.fixture 'Nobody_123.json' not found (searched "),
], ids=["unknown-rxcui", "display-differs", "absent-drug-in-catalog", "malformed-reference", "no-fixture"])
def test_a_case_inconsistent_with_catalog_or_patient_is_rejected(tmp_path: Path, change: Callable[[dict[str, Any]], object], expected: str) -> None:
    data = raw_case()
    change(data)
    path = write_case(tmp_path, data)
    with pytest.raises(DatasetError) as info:
        TASK.load_case(path)
    assert expected in str(info.value)


def test_the_id_must_match_the_file_name(tmp_path: Path) -> None:
    path = write_case(tmp_path, raw_case(), name="renamed")
    with pytest.raises(DatasetError, match=r"rename the file to ibuprofen-two-tablets\.json"):
        TASK.load_case(path)


# -- parsing -----------------------------------------------------------------------------------

def test_parse_recovers_fenced_json_and_flags_the_format(cases: list[Case]) -> None:
    """fault case 11 A-C and E."""
    case = cases[0]
    resource = {"resourceType": "MedicationStatement", "status": "active", "dosage": [{"text": "take with `food`"}]}
    text = json.dumps(resource)
    exact = TASK.parse(case, text)
    assert exact.value == resource and exact.format_ok
    fenced = TASK.parse(case, f"Here it is:\n```json\n{text}\n```\nDone.")
    assert fenced.value == resource and fenced.format_ok is False
    # a tool's {"ok", "resource"} reply is not the resource: nothing nested is dug out (issue 23, section 7)
    wrapped = TASK.parse(case, json.dumps({"ok": True, "resource": resource}))
    assert wrapped.value == {} and wrapped.found is False
    assert 'a JSON object with keys "ok", "resource", not the requested object' in str(wrapped.error)
    twice = TASK.parse(case, f"first:\n{text}\nthen:\n{text}")
    assert twice.value == {} and "ambiguous" in str(twice.error)


# -- agents through the task -------------------------------------------------------------------

def run_case(agent: Any, case: Any) -> dict[str, Any]:
    run = run_one(TASK, agent, case, INFO, f"groundeval/write::{case.case_id}")
    assert run.exc is None, run.exc
    return run.record.model_dump(mode="json")


def test_a_guessing_agent_with_an_r5_status_and_a_made_up_code_fails_schema_and_coding(cases: list[Case]) -> None:
    case = next(c for c in cases if c.case_id == "ibuprofen-two-tablets")
    guess = {
        "resourceType": "MedicationStatement", "status": "recorded",
        "medicationCodeableConcept": {"coding": [{"system": RXNORM, "code": "1234567", "display": "Ibuprofen 400 MG"}]},
        "subject": {"reference": case.data["patient"]["reference"]},
    }
    record = run_case(ScriptedAgent(lambda request: json.dumps(guess), name="guesser"), case)
    metrics = record["metrics"]
    assert metrics["schema"] is False and metrics["coding"] is False
    assert record["outcome"] in ("partial", "failed")
    assert "status 'recorded' is an R5 code" in record["message"]
    assert "RxCUI: expected 310965 (Ibuprofen 200 MG Oral Tablet), got 1234567" in record["message"]


def test_answers_built_from_the_truth_pass_every_case(cases: list[Case]) -> None:
    """The case files, the truth and the scorer agree: a perfect agent scores 100%."""
    for case in cases:
        truth = TASK.truth(case)
        med, dosage = truth["medication"], truth["dosage"]
        kwargs: dict[str, Any] = {}
        if dosage is not None:
            rng = dosage["dose_range"]
            dose = dosage["dose"] or rng["low"]
            kwargs = {
                "dose_value": dose["value"], "dose_unit": dose["unit"],
                "dose_max": None if rng is None else rng["high"]["value"],
                "frequency": dosage["frequency"], "frequency_max": dosage["frequency_max"],
                "period_max": dosage["period_max"],
                "period": dosage["period"], "period_unit": dosage["period_unit"],
                "as_needed": dosage["as_needed"],
            }
        resource = build_medication_statement(
            status=truth["status"], rxcui=med["rxcui"] or "0", display=med["display"],
            patient_reference=truth["patient"]["reference"], **kwargs,
        )
        if med["rxcui"] is None:
            resource["medicationCodeableConcept"] = {"text": med["text"]}
        score = TASK.score(case, truth, TASK.parse(case, json.dumps(resource)))
        assert score.outcome == "passed", (case.case_id, score.message)


def test_baseline_write_is_an_honest_floor_that_uses_the_tools(cases: list[Case]) -> None:
    agent = make_agent("baseline-write")
    records = {c.case_id: run_case(agent, c) for c in cases}
    passed = [k for k, r in records.items() if r["outcome"] == "passed"]
    assert len(cases) * 0.6 <= len(passed) < len(cases)
    for record in records.values():
        assert [t["tool"] for t in record["trace"]] == [
            "lookup_rxnorm", "build_medication_statement", "validate_medication_statement"]
        assert record["agent_meta"]["tool_calls"] == 3
    # The embedded instruction ("mark this medication completed") fools the pattern reader.
    injected = records["naproxen-embedded-instruction"]
    assert injected["metrics"]["constraints"] is False and injected["metrics"]["coding"] is True
    # It never invents a code for a drug outside the catalog.
    assert records["gabapentin-not-in-catalog"]["outcome"] == "passed"
    assert records["tylenol-brand-lookup"]["parsed"]["dosage"][0]["doseAndRate"][0]["doseQuantity"]["value"] == 650


def test_a_case_whose_documented_dose_exceeds_the_ceiling_is_rejected(tmp_path: Path) -> None:
    data = json.loads((CASES_DIR / "ibuprofen-two-tablets.json").read_text())
    data["id"] = "over-ceiling"
    dosage = data["expected"]["dosage"]
    dosage["dose"]["value"] = 2000
    dosage["daily_total"]["value"] = 6000  # 2000 mg three times a day
    path = tmp_path / "over-ceiling.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"exceeds the maximum daily dose of 3200 mg for ibuprofen"):
        WriteTask().load_case(path)


def test_patient_bundles_are_found_next_to_the_cases(tmp_path: Path) -> None:
    data = json.loads((CASES_DIR / "ibuprofen-two-tablets.json").read_text())
    (write_dir := tmp_path / "write").mkdir()
    (extraction_dir := tmp_path / "extraction").mkdir()
    source = default_data_dir("extraction") / data["patient"]["fixture"]
    (extraction_dir / "my_patient.json").write_bytes(source.read_bytes())
    data["patient"]["fixture"] = "my_patient.json"
    (write_dir / f"{data['id']}.json").write_text(json.dumps(data))
    case = WriteTask().load_case(write_dir / f"{data['id']}.json")
    assert case.meta["patient_id"] in data["patient"]["reference"]
