"""The viewer's run list: records in subdirectories are found, other files are named as skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from groundeval.cli import main as cli_main
from groundeval.view.runs import load_runs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "extraction"


def test_run_records_in_subdirectories_are_listed_and_other_json_is_skipped_by_its_path(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    data = pytester.mkdir("data")
    (src,) = FIXTURES.glob("Liz_Conn_*.json")
    shutil.copy(src, data)
    for name in ("a", "b"):  # as docs/ci/compare.md writes them: runs/a, runs/b
        assert cli_main(["--agent", "baseline", "--data-dir", "data", "--out-dir", f"runs/{name}", "--", "-q"]) == 0
    capsys.readouterr()
    (pytester.path / "runs" / "b" / "notes.json").write_text("{}")
    runs = load_runs(pytester.path / "runs")
    assert len(runs.records) == 2
    assert [name for name, _ in runs.skipped] == [str(Path("b") / "notes.json")]
