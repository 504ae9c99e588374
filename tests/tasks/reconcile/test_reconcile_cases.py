"""The packaged reconcile cases: the generator's --check, coverage of every transformation, and
that the truth the task computes is the one each transformation means (unit and brand rules
checked on the packaged cases themselves)."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundeval.agent_io import Prompt
from groundeval.datasets import Case
from groundeval.errors import DatasetError
from groundeval.tasks import make_task
from groundeval.tasks.reconcile.cases import TRANSFORMATIONS
from groundeval.tasks.reconcile.task import ReconcileTask
from tests._paths import REPO, load_script

ROOT = REPO
CASES = ROOT / "fixtures" / "reconcile"
REFUSED = ROOT / "fixtures" / "reconcile_refused"
TASK = ReconcileTask()


@functools.cache
def _script() -> ModuleType:
    return load_script("make_reconcile")


@pytest.fixture(scope="module")
def loaded() -> list[tuple[Case, dict[str, Any], dict[str, Any]]]:
    out = []
    for path in TASK.case_files(CASES):
        case = TASK.load_case(path)
        out.append((case, json.loads(path.read_text()), TASK.truth(case)))
    return out


def _status(truth: dict[str, Any], code: str) -> str:
    return str(next(e["status"] for e in truth["entries"] if code in e["codes"]))


def test_check_mode_passes_on_the_committed_cases_and_says_what_it_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert _script().main(["--check"]) == 0
    out = capsys.readouterr().out
    assert "checked 46 reconcile cases and MANIFEST.json" in out and out.rstrip().endswith("OK")
    assert "checked 10 refused reconcile cases (each refusal checked) and MANIFEST.json" in out


def test_check_mode_fails_on_an_edited_case_and_a_stray_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in CASES.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    victim = next(tmp_path.glob("exact--Liz*.json"))
    victim.write_text(victim.read_text().replace("25 mg", "50 mg"))
    (tmp_path / "hand-made.json").write_text("{}")
    assert _script().main(["--check", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "2 problem(s)" in out and f"differs: {victim}" in out and "stray" in out and "hand-made.json" in out


def test_a_missing_source_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"--source .*nowhere: the directory does not exist"):
        _script().main(["--check", "--source", str(tmp_path / "nowhere")])


def test_at_least_30_cases_from_15_patients_and_every_transformation(loaded: list[Any]) -> None:
    assert len(loaded) >= 30
    patients = {case.meta["patient_id"] for case, _, _ in loaded}
    assert len(patients) >= 15
    kinds = Counter(t["kind"] for _, data, _ in loaded for t in data["transformations"])
    refused = {t["kind"] for path in REFUSED.glob("refused-*.json") for t in json.loads(path.read_text())["transformations"]}
    assert set(kinds) | refused == set(TRANSFORMATIONS), set(TRANSFORMATIONS) - set(kinds) - refused
    assert any(case.meta["fixture"].startswith("variant-") for case, _, _ in loaded)
    assert any(len({t["kind"] for t in data["transformations"]}) >= 3 for _, data, _ in loaded)


EFFECT = {"omission": "omission", "commission": "commission", "dose_change": "dose_mismatch",
          "frequency_change": "dose_mismatch", "as_needed_flip": "dose_mismatch", "unit_equivalent": "matched",
          "stopped_reported": "stopped_but_taken", "brand_name": "matched", "brand_rxcui": "matched",
          "other_strength": "dose_mismatch", "combination_dose": "dose_mismatch", "excluded_reported": "commission"}


def test_each_transformation_gets_its_status_from_the_truth_code(loaded: list[Any]) -> None:
    checked = 0
    for case, data, truth in loaded:
        kinds_by_code: dict[str, set[str]] = {}
        for t in data["transformations"]:
            if t["kind"] not in ("exact", "bundle_edit"):
                kinds_by_code.setdefault(t["rxnorm_code"], set()).add(t["kind"])
        for code, kinds in kinds_by_code.items():
            expected = {EFFECT[k] for k in kinds} - ({"matched"} if len(kinds) > 1 else set())
            assert {_status(truth, code)} == expected, (case.case_id, code, kinds)
            checked += 1
        untouched = [e for e in truth["entries"] if not set(e["codes"]) & set(kinds_by_code)]
        assert all(e["status"] == "matched" for e in untouched), case.case_id
    assert checked >= 45


def _case(loaded: list[Any], prefix: str) -> Any:
    return next(item for item in loaded if item[0].case_id.startswith(prefix))


def test_the_unit_rule_on_packaged_cases(loaded: list[Any]) -> None:
    _, data, truth = _case(loaded, "unit-equivalent--")
    assert "digoxin 125 micrograms" in data["report"]["text"] and "levothyroxine 75 micrograms" in data["report"]["text"]
    digoxin = next(e for e in truth["entries"] if e["rxnorm_code"] == "197604")
    assert digoxin["status"] == "matched" and digoxin["record"]["dose"] == {"value": 0.125, "unit": "mg"}
    _, data, truth = _case(loaded, "mixed-high-alert--Maximina")
    assert "fentanyl ER patch 25 micrograms an hour every 3 days" in data["report"]["text"]
    assert _status(truth, "245134") == "matched"  # 0.025 mg/h, every 72 h, in the record
    _, data, truth = _case(loaded, "dose-high-alert--")
    warfarin = next(e for e in truth["entries"] if e["rxnorm_code"] == "855332")
    assert warfarin["status"] == "dose_mismatch" and warfarin["why"] == "dose 5 mg vs 7.5 mg" and warfarin["high_alert"]


def test_the_brand_rule_on_packaged_cases(loaded: list[Any]) -> None:
    _, data, truth = _case(loaded, "brand-name--Delores")
    assert "Toprol XL 100 mg" in data["report"]["text"] and "Zocor 20 mg" in data["report"]["text"]
    assert "metoprolol" not in data["report"]["text"] and "simvastatin" not in data["report"]["text"]
    assert [e["status"] for e in truth["entries"]] == ["matched"] * 4
    _, data, truth = _case(loaded, "generic-for-brand--")
    assert "furosemide 40 mg" in data["report"]["text"] and _status(truth, "315971") == "matched"


def _entry(truth: dict[str, Any], code: str) -> dict[str, Any]:
    return next(e for e in truth["entries"] if code in e["codes"])


@pytest.mark.parametrize(("prefix", "said", "code", "dose"), [
    ("unit-grams--", "naproxen 0.22 g", "849574", {"value": 0.22, "unit": "g"}),
    ("unit-tablets--", "lisinopril one tablet", "314076", {"value": 1.0, "unit": "{tablet}"}),
    ("mixed-high-alert--Maximina", "fentanyl ER patch 25 micrograms an hour", "245134", {"value": 25.0, "unit": "ug/h"}),
    ("unit-equivalent--", "digoxin 125 micrograms", "197604", {"value": 125.0, "unit": "ug"}),
])
def test_every_unit_conversion_that_must_be_equal_is_packaged(loaded: list[Any], prefix: str, said: str, code: str,
                                                              dose: dict[str, Any]) -> None:
    _, data, truth = _case(loaded, prefix)
    entry = _entry(truth, code)
    assert said in data["report"]["text"] and entry["reported"]["dose"] == dose
    assert entry["status"] == "matched" and entry["reported"]["amounts"] == entry["record"]["amounts"]


def test_pairing_by_concept_whatever_rxcui_the_case_author_wrote(loaded: list[Any]) -> None:
    _, data, truth = _case(loaded, "brand-rxcui--Delores")  # Toprol XL's own RxCUI for the record's generic
    assert {"866414"} == {i["rxnorm_code"] for i in data["report"]["items"]} - {e["rxnorm_code"] for e in truth["entries"]}
    toprol = _entry(truth, "866412")
    assert (toprol["status"], toprol["pairing"], toprol["codes"]) == ("matched", "clinical drug", ["866412", "866414"])
    _, _, truth = _case(loaded, "generic-rxcui--Demarcus")  # the generic's RxCUI for the record's Tylenol
    assert (_entry(truth, "313782")["rxnorm_code"], _entry(truth, "313782")["status"]) == ("209387", "matched")
    _, _, truth = _case(loaded, "other-strength--Janene")  # lisinopril 5 mg's RxCUI for the record's 10 mg
    lisinopril = _entry(truth, "311354")
    assert (lisinopril["rxnorm_code"], lisinopril["status"], lisinopril["pairing"]) == (
        "314076", "dose_mismatch", "ingredients")
    assert lisinopril["why"] == "dose 10 mg vs 5 mg" and len(truth["entries"]) == 7  # no omission + commission


def test_combination_products_compare_per_ingredient_and_a_doubled_opioid_is_high_alert(loaded: list[Any]) -> None:
    _, data, truth = _case(loaded, "combination-opioid-doubled--")
    oxycodone = _entry(truth, "1049221")
    assert "with 10 mg of oxycodone" in data["report"]["text"]
    assert oxycodone["status"] == "dose_mismatch" and oxycodone["high_alert"] is not None
    assert oxycodone["why"] == "dose of oxycodone hydrochloride 5 mg vs 10 mg"  # acetaminophen was not said
    _, data, truth = _case(loaded, "combination-two-tablets--")
    norco = _entry(truth, "856987")
    assert "two tablets" in data["report"]["text"] and norco["status"] == "dose_mismatch" and norco["high_alert"]
    assert norco["why"] == "dose of acetaminophen 300 mg vs 600 mg; dose of hydrocodone bitartrate 5 mg vs 10 mg"


def test_the_latest_authored_request_gives_the_dosage(loaded: list[Any]) -> None:
    latest, earlier = _case(loaded, "refill-latest-dose--"), _case(loaded, "refill-earlier-dose--")
    requests = [r for r in _requests(latest[0].data["bundle"]) if "310325" in json.dumps(r)]
    assert len(requests) == 2 and requests[0]["authoredOn"] < requests[1]["authoredOn"]  # the refill is later
    assert _entry(latest[2], "310325")["status"] == "matched" and "ferrous sulfate 650 mg" in latest[1]["report"]["text"]
    assert _entry(earlier[2], "310325")["why"] == "dose 650 mg vs 325 mg"


def _refused() -> list[tuple[Path, str]]:
    manifest = json.loads((REFUSED / "MANIFEST.json").read_text())
    return [(REFUSED / f"{row['case']}.json", row["refused"]) for row in manifest["entries"]]


@pytest.mark.parametrize(("path", "words"), _refused(), ids=lambda v: v.name.split("--")[0] if isinstance(v, Path) else "")
def test_each_refused_case_is_an_invalid_case_naming_the_file_the_item_the_unit_and_the_fix(path: Path, words: str) -> None:
    from groundeval.execution.outcome_policy import RunInfo
    from groundeval.testing import ScriptedAgent
    from groundeval.testing.one_case import run_case

    case = TASK.load_case(path)  # the schema accepts it: the rule is the truth's, checked before any agent call
    calls: list[str] = []

    def answer(request: Any) -> str:
        calls.append(request.case_id)
        return "[]"

    agent = ScriptedAgent(answer)
    record = run_case(TASK, agent, case, RunInfo(run_id="r", task="reconcile", agent="x", model=None), "n").record
    assert record.outcome == "invalid_case" and calls == []
    assert words in record.message and path.name in record.message
    assert "report.items[" in record.message  # the item


def test_exact_and_empty_cases(loaded: list[Any]) -> None:
    exact = [t for c, _, t in loaded if c.case_id.startswith("exact--")]
    assert exact and all(e["status"] == "matched" for t in exact for e in t["entries"])
    _, data, truth = _case(loaded, "no-medication--Clemente")
    assert truth["entries"] == [] and data["report"]["items"] == []
    for prefix in ("no-active-stopped--", "no-medication-commission--"):
        _, _, truth = _case(loaded, prefix)
        assert truth["entries"] and all(e["status"] != "matched" for e in truth["entries"])


def test_a_high_alert_medication_in_every_discrepancy_status(loaded: list[Any]) -> None:
    statuses = {e["status"] for _, _, t in loaded for e in t["entries"] if e["high_alert"]}
    assert {"omission", "commission", "dose_mismatch", "stopped_but_taken"} <= statuses


def test_the_agent_sees_the_bundle_and_the_text_only(loaded: list[Any]) -> None:
    case, data, _ = _case(loaded, "mixed-high-alert--Maximina")
    prompt: Prompt = TASK.prompt(case)
    assert data["report"]["text"] in prompt.user
    assert '"items"' not in prompt.user and "transformations" not in prompt.user and "dose_change" not in prompt.text
    context = TASK.context(case)
    assert context["bundle"] == case.data["bundle"] and context["bundle"] is not case.data["bundle"]
    assert set(context) == {"bundle", "report"}
    assert '"status": "matched" | "omission"' in prompt.system and "1049504: Abuse-Deterrent" in prompt.system


def test_the_task_is_built_in_and_refuses_a_changed_fixture(tmp_path: Path) -> None:
    assert isinstance(make_task("reconcile", {"min_f1": "0.5"}), ReconcileTask)
    source = next(CASES.glob("exact--Liz*.json"))
    data = json.loads(source.read_text())
    data["fixture"]["sha256"] = "0" * 64
    (tmp_path / source.name).write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"pin its new SHA-256 in fixture.sha256 .*scripts/make_reconcile\.py"):
        TASK.load_case(tmp_path / source.name)


def test_an_inline_bundle_case_loads(tmp_path: Path) -> None:
    bundle = {"resourceType": "Bundle", "type": "collection", "entry": [
        {"fullUrl": "urn:uuid:p1", "resource": {"resourceType": "Patient", "id": "p1"}}]}
    case = {"id": "inline", "bundle": bundle, "report": {"text": "I take ibuprofen 200 mg.", "items": [
        {"name": "ibuprofen", "rxnorm_code": "310965", "dose": {"value": 200, "unit": "mg"}}]}}
    (tmp_path / "inline.json").write_text(json.dumps(case))
    loaded = TASK.load_case(tmp_path / "inline.json")
    (entry,) = TASK.truth(loaded)["entries"]
    assert entry["status"] == "commission" and entry["display"] == "Ibuprofen 200 MG Oral Tablet"


def test_a_malformed_inline_bundle_fails_its_check_naming_the_field(tmp_path: Path) -> None:
    bundle = {"resourceType": "Bundle", "type": "collection", "entry": [
        {"fullUrl": "urn:uuid:p1", "resource": {"resourceType": "Patient", "id": "p1"}},
        {"resource": {"resourceType": "MedicationRequest", "id": "r1", "status": "active", "intent": "order",
                      "subject": "Patient/p1", "medicationCodeableConcept": {"text": "x"}}}]}
    case = {"id": "bad", "bundle": bundle, "report": {"text": "", "items": []}}
    (tmp_path / "bad.json").write_text(json.dumps(case))
    loaded = TASK.load_case(tmp_path / "bad.json")  # collection reads it; the R4B check waits for the run
    with pytest.raises(DatasetError, match="subject"):
        TASK.check_case(loaded)


def _inline(tmp_path: Path, change: Any) -> Case:
    """A packaged case rewritten with its fixture Bundle inline, changed by ``change``."""
    source = next(CASES.glob("exact--Liz*.json"))
    data = json.loads(source.read_text())
    fixture = ROOT / "fixtures" / "extraction" / data.pop("fixture")["file"]
    bundle = json.loads(fixture.read_text())
    change(bundle)
    data.update(id="inline", bundle=bundle)
    (tmp_path / "inline.json").write_text(json.dumps(data))
    return TASK.load_case(tmp_path / "inline.json")


def _requests(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "MedicationRequest"]


def test_an_inline_bundle_gets_the_extraction_tasks_checks(tmp_path: Path) -> None:
    upper = _inline(tmp_path, lambda b: _requests(b)[0].update(status="ACTIVE"))
    with pytest.raises(DatasetError, match=r"status 'ACTIVE' is not a MedicationRequest status code"):
        TASK.check_case(upper)  # not a wrong truth (a recorded drug called a commission)
    intent = _inline(tmp_path, lambda b: _requests(b)[0].update(intent="ORDER"))
    with pytest.raises(DatasetError, match=r"intent 'ORDER' is not a MedicationRequest intent code"):
        TASK.check_case(intent)


def test_a_pinned_fixture_of_your_own_is_validated_not_only_hashed(tmp_path: Path) -> None:
    source = next(CASES.glob("exact--Liz*.json"))
    data = json.loads(source.read_text())
    fixture = ROOT / "fixtures" / "extraction" / data["fixture"]["file"]
    bundle = json.loads(fixture.read_text())
    _requests(bundle)[0]["subject"] = "Patient/x"  # a string where a Reference belongs
    (tmp_path / "extraction").mkdir()
    mine = tmp_path / "extraction" / fixture.name
    mine.write_text(json.dumps(bundle))
    import hashlib

    data["fixture"]["sha256"] = hashlib.sha256(mine.read_bytes()).hexdigest()
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / source.name).write_text(json.dumps(data))
    case = TASK.load_case(tmp_path / "cases" / source.name)  # the sibling extraction/ directory's file
    assert case.meta["bundle_sha256"] == data["fixture"]["sha256"]
    with pytest.raises(DatasetError, match=r"not valid FHIR R4B: MedicationRequest/\S+ subject") as info:
        TASK.check_case(case)
    # the bad data is in the pinned Bundle: the error names that file, and the case that pins it
    assert info.value.path == str(mine) and info.value.problem.endswith(f"(the Bundle that {source.name} pins)")
