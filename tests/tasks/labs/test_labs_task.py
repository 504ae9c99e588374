"""The labs task object: options, prompt (with and without thresholds), case loading and checks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from groundeval.clinical.lab_thresholds import default_thresholds
from groundeval.clinical.lab_truth import labs_truth
from groundeval.errors import ConfigError, DatasetError
from groundeval.tasks import make_task
from groundeval.tasks.base import FHIR_BUNDLE, TEXT_PROMPT, TOOLS
from groundeval.tasks.labs import LabsTask
from groundeval.tasks.labs.prompt import ANSWER_FORMAT, EXAMPLE_BUNDLE, answer_from_truth
from tests._paths import REPO

ROOT = REPO
CASES = ROOT / "fixtures" / "labs"
DELORES = next(CASES.glob("Delores12*.json"))


def test_the_option_is_declared_on_the_class_and_parsed_like_any_other() -> None:
    assert make_task("labs").thresholds_in_prompt is False  # type: ignore[attr-defined]
    assert make_task("labs", {"thresholds_in_prompt": "yes"}).thresholds_in_prompt is True  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="task 'labs' option thresholds_in_prompt='maybe': must be true or false"):
        make_task("labs", {"thresholds_in_prompt": "maybe"})
    from groundeval.registry import builtin_tasks

    assert not builtin_tasks()["labs"].options  # no first-class flag: --groundeval-option=thresholds_in_prompt=true


def test_the_prompt_names_categories_and_sources_and_gives_thresholds_only_when_asked() -> None:
    case = LabsTask().load_case(DELORES)
    plain, given = LabsTask().prompt(case).system, LabsTask(thresholds_in_prompt=True).prompt(case).system
    table = default_thresholds()
    for row in table.tests:
        for text in (plain, given):
            assert f"- {row.loinc} {row.name}, unit {row.unit}: categories {', '.join(row.order)}" in text
            assert row.source["cite_as"] in text
    assert "Thresholds (" not in plain and "< 5.7" not in plain and "6.5 mmol/L" not in plain
    assert "Thresholds (%): normal < 5.7 <= prediabetes < 6.5 <= diabetes." in given
    assert "Critical (severe hypokalaemia or severe hyperkalaemia (ERC 2021)): < 2.5 or >= 6.5 mmol/L." in given
    assert "Systolic blood pressure > 180 mm[Hg]; Diastolic blood pressure > 120 mm[Hg]" in given
    assert "Critical: a latest value in the range of hypertensive crisis (2017 ACC/AHA, Section 11)." in plain


def test_the_worked_example_is_the_truth_codes_answer_and_shows_the_rules() -> None:
    answer = answer_from_truth(labs_truth(EXAMPLE_BUNDLE, default_thresholds(), "example"))
    assert json.dumps(answer, ensure_ascii=False) in LabsTask().prompt(LabsTask().load_case(DELORES)).system
    got = {a["loinc"]: a for a in answer}
    assert (got["4548-4"]["value"], got["4548-4"]["category"], got["4548-4"]["direction"]) == (6.8, "diabetes", "up")
    assert (got["2339-0"]["unit"], got["2339-0"]["category"]) == ("mmol/L", "diabetes")
    assert got["85354-9"]["category"] == "stage_1" and got["6298-4"]["category"] == "high"
    assert got["39156-5"]["category"] == got["33914-3"]["category"] == "no_result"


def test_the_user_turn_is_the_bundle_and_the_context_holds_it_for_tools() -> None:
    task = LabsTask()
    case = task.load_case(DELORES)
    user = task.prompt(case).user
    body, _, tail = user.removeprefix("Bundle:\n").partition("\n\nAnswer format: ")
    assert json.loads(body) == case.data and tail == ANSWER_FORMAT
    assert task.context(case) == {"bundle": case.data}
    assert task.provides == frozenset({TEXT_PROMPT, TOOLS, FHIR_BUNDLE})
    assert task.tools == ("get_resources", "resolve_reference", "lookup_code", "get_observations")
    assert case.case_id == "Delores12_Cronin387_0d154268" and case.meta["observations"] > 0
    assert task.run_facts() == {"thresholds": default_thresholds().facts}


def _bundle(*entries: Mapping[str, object]) -> dict[str, object]:
    return {"resourceType": "Bundle", "type": "collection", "entry": [{"resource": e} for e in entries]}


PATIENT = {"resourceType": "Patient", "id": "p"}


@pytest.mark.parametrize(("data", "match"), [
    ({"resourceType": "Patient", "id": "p"}, "not a FHIR Bundle .resourceType 'Patient'."),
    (_bundle(PATIENT, PATIENT), "the Bundle holds 2 Patient resources"),
    (_bundle({"resourceType": "Observation", "id": "o"}), "the Bundle holds 0 Patient resources"),
])
def test_a_file_that_is_not_one_patients_bundle_is_a_collection_error(tmp_path: Path, data: object, match: str) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=match):
        LabsTask().load_case(path)


@pytest.mark.parametrize(("observation", "match"), [
    ({"status": "Final"}, "Observation/o status 'Final' is not an ObservationStatus code"),
    ({"valueQuantity": "5 mmol/L"}, "not valid FHIR R4B: Observation/o valueQuantity"),
])
def test_check_case_refuses_invalid_fhir_and_bad_status_codes(
    tmp_path: Path, observation: dict[str, object], match: str
) -> None:
    resource = {"resourceType": "Observation", "id": "o", "status": "final",
                "code": {"coding": [{"system": "http://loinc.org", "code": "6298-4"}]}, **observation}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(_bundle(PATIENT, resource)))
    task = LabsTask()
    case = task.load_case(path)
    with pytest.raises(DatasetError, match=match):
        task.check_case(case)


def test_the_task_claims_bundles_with_observations_and_refuses_a_directory_of_extraction_cases() -> None:
    from groundeval.errors import ConfigError
    from groundeval.run.preflight import check_data_dir_task

    task = LabsTask()
    assert task.claims(json.loads(DELORES.read_text()))
    extraction = ROOT / "fixtures" / "extraction"
    assert not task.claims(json.loads(next(extraction.glob("Delores12*.json")).read_text()))
    with pytest.raises(ConfigError, match="this is a case of the extraction task"):
        check_data_dir_task(task, extraction)
    check_data_dir_task(task, CASES)  # its own cases: no error
