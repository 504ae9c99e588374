"""Extraction case loading: bad data fails at collection, naming the file and the field."""

from __future__ import annotations

import copy
import fnmatch
import json
from pathlib import Path

import pytest

from groundeval.errors import DatasetError
from groundeval.tasks.extraction import ExtractionTask

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "extraction" / "Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json"
BASE = json.loads(FIXTURE.read_text())


def _mutated(tmp_path: Path, mutate) -> Path:
    """Write a copy of the fixture changed by ``mutate`` and return its path."""
    bundle = copy.deepcopy(BASE)
    mutate(bundle)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(bundle))
    return path


def _first(bundle: dict, rtype: str) -> dict:
    return next(e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == rtype)


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
def test_shape_errors_are_dataset_errors_not_silent_empty_truth(tmp_path: Path, mutate, message: str) -> None:
    path = _mutated(tmp_path, mutate)
    with pytest.raises(DatasetError) as info:
        ExtractionTask().load_case(path)
    assert str(info.value).startswith(f"{path}: not valid FHIR R4B: ")
    assert fnmatch.fnmatch(str(info.value), f"*{message}*"), str(info.value)


def test_valid_fixture_loads(tmp_path: Path) -> None:
    case = ExtractionTask().load_case(FIXTURE)
    assert case.case_id == "Liz_Conn-ee9f8dd8"


def test_a_request_status_outside_the_value_set_is_refused(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda b: _first(b, "MedicationRequest").update(status="ACTIVE"))
    with pytest.raises(DatasetError, match=r"status 'ACTIVE' is not a MedicationRequest status code .*lower-case"):
        ExtractionTask().load_case(path)


def test_a_string_where_a_reference_belongs_gets_an_actionable_message(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda b: _first(b, "MedicationRequest").update(subject="Patient/x"))
    with pytest.raises(DatasetError, match=r'subject: expected a JSON object \(e.g. a Reference .*\), got "Patient/x"'):
        ExtractionTask().load_case(path)
