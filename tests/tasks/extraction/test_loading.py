"""Extraction case loading: collection reads the file; the case's checks, when it runs, fail naming the file and the field."""

from __future__ import annotations

import copy
import fnmatch
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groundeval.errors import DatasetError
from groundeval.tasks.extraction.task import ExtractionTask, case_id_from_stem, is_manifest
from tests._paths import REPO

FIXTURE = REPO / "fixtures" / "extraction" / "Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json"
BASE = json.loads(FIXTURE.read_text())


def _mutated(tmp_path: Path, mutate: Callable[[dict[str, Any]], object]) -> Path:
    """Write a copy of the fixture changed by ``mutate`` and return its path."""
    bundle = copy.deepcopy(BASE)
    mutate(bundle)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(bundle))
    return path


def _first(bundle: dict[str, Any], rtype: str) -> dict[str, Any]:
    resource: dict[str, Any] = next(e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == rtype)
    return resource


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: _first(b, "MedicationRequest").update(subject="Patient/x"), "MedicationRequest/* subject:"),
        (lambda b: _first(b, "Patient").update(id=12345), "Patient/12345 id: Input should be a valid string"),
        (lambda b: _first(b, "MedicationRequest")["medicationCodeableConcept"].update(coding={"system": "x"}),
         "medicationCodeableConcept.coding: Input should be a valid list"),
        (lambda b: _first(b, "Patient").update(name={"given": ["A"]}), "Patient/* name: Input should be a valid list"),
    ],
)
def test_shape_errors_are_dataset_errors_not_silent_empty_truth(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], object], message: str
) -> None:
    path = _mutated(tmp_path, mutate)
    with pytest.raises(DatasetError) as info:
        _checked(path)
    assert str(info.value).startswith(f"{path}: not valid FHIR R4B: ")
    assert fnmatch.fnmatch(str(info.value), f"*{message}*"), str(info.value)


def _checked(path: Path) -> None:
    task = ExtractionTask()
    task.check_case(task.load_case(path))  # the check the runner makes just before the case runs


def test_collection_reads_only_what_the_id_needs_and_the_r4b_check_waits_for_the_run(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda b: _first(b, "MedicationRequest").update(status="ACTIVE"))
    task = ExtractionTask()
    case = task.load_case(path)  # collection: JSON, a Bundle, one Patient; no FHIR validation
    assert case.case_id == path.stem
    with pytest.raises(DatasetError, match="status 'ACTIVE'"):
        task.check_case(case)


def test_valid_fixture_loads_with_an_id_that_is_a_prefix_of_its_file_name() -> None:
    case = ExtractionTask().load_case(FIXTURE)
    assert case.case_id == "Liz_Conn_27c911c6"  # the file's UUID, not Patient.id (ee9f8dd8...)
    assert FIXTURE.name.startswith(case.case_id)
    assert ExtractionTask(case_ids="file").load_case(FIXTURE).case_id == "Liz_Conn_27c911c6_f045_4ffa_af5d_6eba57ac94b2"


@pytest.mark.parametrize(
    ("stem", "case_id"),
    [
        ("Ellena683_Allene83_Reilly981_3f7e3cbc-a278-a448-e30a-24ef17ed8c99", "Ellena683_Allene83_Reilly981_3f7e3cbc"),
        ("variant-status-draft--Jacquelyn628_Sophia44_Bosco882_6456c0a5", "variant-status-draft--Jacquelyn628_Sophia44_Bosco882_6456c0a5"),
        ("my patient (copy)", "my_patient_copy"),
        ("3f7e3cbc-a278-a448-e30a-24ef17ed8c99", "3f7e3cbc"),
    ],
)
def test_default_case_id_shortens_a_trailing_uuid_only(stem: str, case_id: str) -> None:
    assert case_id_from_stem(stem) == case_id


def test_every_packaged_case_id_is_a_prefix_of_its_file_name_and_unique() -> None:
    task = ExtractionTask()
    paths = task.case_files(FIXTURE.parent)
    ids = [case_id_from_stem(p.stem) for p in paths]
    assert all(p.name.startswith(i) for p, i in zip(paths, ids, strict=True))
    assert len(set(ids)) == len(ids)


def test_manifests_are_not_cases(tmp_path: Path) -> None:
    for name in ("MANIFEST.json", "MANIFEST.variants.json", "a.json"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in ExtractionTask().case_files(tmp_path)] == ["a.json"]
    assert not any(is_manifest(p) for p in ExtractionTask().case_files(FIXTURE.parent))
    assert {"MANIFEST.json", "MANIFEST.variants.json"} <= {p.name for p in FIXTURE.parent.iterdir()}


def test_a_request_intent_outside_the_value_set_is_refused(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda b: _first(b, "MedicationRequest").update(intent="prescription"))
    with pytest.raises(DatasetError, match=r"intent 'prescription' is not a MedicationRequest intent code .*plan"):
        _checked(path)


def test_a_request_status_outside_the_value_set_is_refused(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda b: _first(b, "MedicationRequest").update(status="ACTIVE"))
    with pytest.raises(DatasetError, match=r"status 'ACTIVE' is not a MedicationRequest status code .*lower-case"):
        _checked(path)


def test_a_string_where_a_reference_belongs_gets_an_actionable_message(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda b: _first(b, "MedicationRequest").update(subject="Patient/x"))
    with pytest.raises(DatasetError, match=r'subject: expected a JSON object \(e.g. a Reference .*\), got "Patient/x"'):
        _checked(path)


def test_a_misspelled_resource_type_is_refused_not_an_empty_truth(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda b: _first(b, "MedicationRequest").update(resourceType="Medicationrequest"))
    with pytest.raises(DatasetError, match=r"resourceType 'Medicationrequest' is not an R4B resource type "
                                           r"\(did you mean 'MedicationRequest'\?\)"):
        _checked(path)


def test_a_resource_outside_what_the_truth_reads_is_validated_too(tmp_path: Path) -> None:
    # the agent is shown the whole Bundle: a MedicationRequest relabelled MedicationStatement keeps
    # fields a MedicationStatement does not have, and a strict reader would fail on the file
    def relabel(bundle: dict[str, Any]) -> None:
        _first(bundle, "MedicationRequest")["resourceType"] = "MedicationStatement"

    path = _mutated(tmp_path, relabel)
    with pytest.raises(DatasetError, match=r"not valid FHIR R4B: MedicationStatement/\S+ "):
        _checked(path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: _first(b, "MedicationRequest").update(contained=[{"resourceType": "Medicaton", "id": "m1"}]),
         r"entry\[\d+\]\.resource\.contained\[0\] \(id 'm1'\): resourceType 'Medicaton' is not an R4B resource "
         r"type \(did you mean 'Medication'\?\)"),
        (lambda b: b["entry"].append({"resource": {"resourceType": "Bundle", "type": "collection", "entry": [
            {"resource": {"resourceType": "Condtion", "id": "c1"}}]}}),
         r"entry\[\d+\]\.resource\.entry\[0\]\.resource \(id 'c1'\): resourceType 'Condtion' .* \(did you mean 'Condition'\?\)"),
        (lambda b: b["entry"].append({"resource": {"id": "x1", "status": "active"}}),
         r"entry\[\d+\] \(id 'x1'\): the resource has no resourceType"),
    ],
)
def test_a_bad_resource_type_anywhere_in_the_bundle_is_named(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], object], message: str
) -> None:
    # fhir.resources raises KeyError for these (not a validation error): without the walk they
    # were harness errors, counted against the agent as "ran"
    path = _mutated(tmp_path, mutate)
    with pytest.raises(DatasetError, match=message):
        _checked(path)


def test_a_misspelled_patient_is_named_in_the_collection_error(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda b: _first(b, "Patient").update(resourceType="Patinet"))
    with pytest.raises(DatasetError, match=r"no Patient entry \(an entry's resourceType is 'Patinet': did you mean 'Patient'\?\)"):
        ExtractionTask().load_case(path)
