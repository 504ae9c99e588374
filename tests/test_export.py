"""Export: run records as one table (``groundeval.load_runs``, ``groundeval export``), one row per case and trial."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import groundeval
from groundeval.cli import main as cli_main
from groundeval.records.run_record import RunRecord
from tests._records import case, run


def _write(tmp_path: Path, *records: RunRecord) -> list[str]:
    paths = []
    for r in records:
        p = tmp_path / f"{r.run_id}.json"
        p.write_text(r.model_dump_json(), encoding="utf-8")
        paths.append(str(p))
    return paths


def _runs() -> tuple[RunRecord, RunRecord]:
    a = run(
        [
            case("c1", trial=0, usage={"input_tokens": 10, "cost_usd": 0.5}),
            case("c1", "partial", trial=1, usage={"input_tokens": 12, "cost_usd": None}),
            case("c2", "infra_error", error={"type": "InfraError", "message": "down"}),
        ],
        run_id="A",
        model="m-a",
        settings={"trials": 2},
    )
    b = run([case("c1", run_id="B", f1=0.25)], run_id="B", model="m-b")
    return a, b


def test_load_runs_gives_one_row_per_case_and_trial_with_metrics_as_columns(tmp_path: Path) -> None:
    table = groundeval.load_runs(_write(tmp_path, *_runs()))
    assert len(table) == 4
    assert list(table.columns[:6]) == ["run_id", "task", "agent", "model", "started_at", "case_id"]
    assert {"f1", "precision", "tp", "input_tokens", "cost_usd"} <= set(table.columns)
    rows = table.set_index(["run_id", "case_id", "trial"])
    assert rows.loc[("A", "c1", 1), "outcome"] == "partial" and rows.loc[("A", "c1", 1), "f1"] == 0.5
    assert rows.loc[("B", "c1", 0), "f1"] == 0.25 and rows.loc[("B", "c1", 0), "model"] == "m-b"
    assert rows.loc[("A", "c2", 0), "error_type"] == "InfraError"
    assert bool(rows[["f1"]].isna().loc[("A", "c2", 0)].iloc[0])  # excluded: no metric, not 0
    assert rows.loc[("A", "c1", 0), "cost_usd"] == 0.5
    assert bool(table[(table.run_id == "A") & (table.trial == 1)].cost_usd.isna().iloc[0])  # unpriced stays unknown


def test_cli_export_csv_and_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    paths = _write(tmp_path, *_runs())
    out = tmp_path / "t.csv"
    assert cli_main(["export", *paths, "-o", str(out)]) == 0
    csv = pd.read_csv(out)
    assert len(csv) == 4 and set(csv.run_id) == {"A", "B"}
    parquet = tmp_path / "t.parquet"
    assert cli_main(["export", *paths, "-o", str(parquet)]) == 0
    assert pd.read_parquet(parquet).equals(groundeval.load_runs(paths))
    capsys.readouterr()
    assert cli_main(["export", paths[1]]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("run_id,task,agent,model")


def test_a_missing_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import groundeval.extras as extras

    real = extras.has_module
    monkeypatch.setattr(extras, "has_module", lambda m: m != "pyarrow" and real(m))
    paths = _write(tmp_path, _runs()[0])
    assert cli_main(["export", *paths, "-o", str(tmp_path / "x.parquet")]) == 4
    err = capsys.readouterr().err
    assert "needs the 'export' extra (pyarrow is not installed): pip install 'groundeval[export]'" in err
    monkeypatch.setattr(extras, "has_module", lambda m: m != "pandas" and real(m))
    import groundeval.export as export

    monkeypatch.setattr(export, "has_module", extras.has_module)
    with pytest.raises(ImportError, match=r"groundeval.load_runs needs the 'export' extra"):
        export.load_runs(paths)


def test_a_file_that_is_not_a_record_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([1]))
    with pytest.raises(SystemExit) as exc:
        cli_main(["export", str(bad)])
    assert exc.value.code == 2 and "bad.json: not a groundeval run record" in capsys.readouterr().err


def test_the_format_follows_the_output_suffix_and_a_spreadsheet_suffix_is_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pandas as pd

    paths = _write(tmp_path, *_runs())
    assert cli_main(["export", *paths, "-o", str(tmp_path / "t.pq")]) == 0
    assert len(pd.read_parquet(tmp_path / "t.pq")) == 4  # Parquet, from the suffix alone
    for name, message in [
        ("t.xlsx", "writes CSV or Parquet, not .xlsx; name the file .csv (spreadsheets such as Excel open it)"),
        ("t.csv", "--format parquet with -o"),
    ]:
        extra = ["--format", "parquet"] if name == "t.csv" else []
        with pytest.raises(SystemExit) as exc:
            cli_main(["export", *paths, *extra, "-o", str(tmp_path / name)])
        assert exc.value.code == 2 and message in capsys.readouterr().err
        assert not (tmp_path / name).exists()
