"""The run record's JSON Schema: generated from its model, and a real run record validates."""

from __future__ import annotations

import json
import runpy
from collections.abc import Callable, Iterable
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]  # no stubs installed; the validator is the point
import pytest

from tests._paths import REPO

from .conftest import run_records

ROOT = REPO


def test_the_committed_schema_is_generated_from_the_model() -> None:
    script = runpy.run_path(str(ROOT / "scripts" / "make_schema.py"))
    committed = (ROOT / "src" / "groundeval" / "schemas" / "run_record.schema.json").read_text(encoding="utf-8")
    assert committed == script["schema_text"](), "run scripts/make_schema.py"


def test_a_real_run_record_validates_against_the_schema(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> None:
    copy_fixtures(pytester.path / "data", ["Liz_Conn", "Clemente_Kreiger"])
    (pytester.path / "data" / "broken.json").write_text("{")
    pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=naive", "--groundeval-data-dir=data",
                       "-p", "no:cacheprovider")
    (record,) = run_records(pytester.path)
    schema = json.loads((ROOT / "src" / "groundeval" / "schemas" / "run_record.schema.json").read_text())
    jsonschema.validate(record, schema)
    assert record["collection_errors"] and len(record["cases"]) == 2
    record["cases"][0]["outcome"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, schema)
