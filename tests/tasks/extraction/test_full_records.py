"""The full-size record cases: derived by scripts/make_full_records.py (``--check``), whole, truth from the same resources."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from tests._paths import REPO

CASES = REPO / "fixtures" / "full-records"


@pytest.fixture(scope="module")
def make_full_records(built_script: Callable[[str], ModuleType]) -> ModuleType:
    return built_script("make_full_records")


def test_check_passes_and_reports_a_stale_and_a_stray_file(
    make_full_records: ModuleType, synthea_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert make_full_records.main(["--source", str(synthea_dir), "--check"]) == 0
    assert "checked 7 whole records and MANIFEST.json" in capsys.readouterr().out
    assert make_full_records.main(["--source", str(synthea_dir), "--out", str(tmp_path)]) == 0
    first = sorted(p for p in tmp_path.glob("*.json") if p.name != "MANIFEST.json")[0]
    first.write_text(first.read_text().replace('"active"', '"stopped"', 1))
    (tmp_path / "hand-made.json").write_text("{}")
    capsys.readouterr()
    assert make_full_records.main(["--source", str(synthea_dir), "--out", str(tmp_path), "--check"]) == 1
    assert "1 stale, 1 stray" in capsys.readouterr().out


def test_each_case_is_the_whole_source_record(synthea_dir: Path) -> None:
    manifest = json.loads((CASES / "MANIFEST.json").read_text())
    assert manifest["record_access"] == "fhir"
    for row in manifest["fixtures"]:
        assert json.loads((CASES / row["fixture"]).read_text()) == json.loads((synthea_dir / row["source"]).read_text())
    assert sum(r["fixture_bytes"] for r in manifest["fixtures"]) < 3_000_000  # kept small
    assert max(r["record_tokens_estimate"] for r in manifest["fixtures"]) > 200_000  # one past a 200k context


def test_the_extraction_task_marks_them_fhir_only_and_finds_their_truth() -> None:
    from groundeval.tasks import make_task

    task = make_task("extraction")
    manifest = json.loads((CASES / "MANIFEST.json").read_text())
    counts = {r["fixture"]: r["active_medications"] for r in manifest["fixtures"]}
    for path in task.case_files(CASES):
        case = task.load_case(path)
        assert case.meta["record_access"] == "fhir"
        assert len(task.truth(case)["medications"]) == counts[path.name] > 0
    ordinary = task.load_case(sorted((REPO / "fixtures" / "extraction").glob("B*.json"))[0])
    assert "record_access" not in ordinary.meta
