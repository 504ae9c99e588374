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


def test_files_that_are_not_run_records_say_what_they_are(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "settings.json").write_text('{"theme": "dark"}')
    why = dict(load_runs(tmp_path).skipped)
    assert why["broken.json"].startswith("not valid JSON")
    assert why["settings.json"].startswith("not a groundeval run record (no run_id")
    assert "move other JSON files out" in why["settings.json"]


def test_a_below_filter_that_is_not_a_number_is_named_on_the_page(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from starlette.testclient import TestClient

    from groundeval.view.app import make_app

    data = pytester.mkdir("data")
    (src,) = FIXTURES.glob("Liz_Conn_*.json")
    shutil.copy(src, data)
    assert cli_main(["--agent", "baseline", "--data-dir", "data", "--out-dir", "runs", "--", "-q"]) == 0
    capsys.readouterr()
    (run_id,) = load_runs(pytester.path / "runs").records
    with TestClient(make_app(pytester.path / "runs")) as client:
        page = client.get(f"/run/{run_id}", params={"metric": "f1", "below": "abc"})
    assert page.status_code == 200
    assert "below &#39;abc&#39; is not a number; give one such as 0.5" in page.text
    assert "1 of 1 cases" in page.text  # the bad bound filters nothing out


def test_a_taken_port_is_one_line_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from groundeval.view.cli import HOST, main as view_main

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert view_main([str(tmp_path), "--no-browser", "--port", str(port)]) == 4
    err = capsys.readouterr().err
    assert f"cannot listen on {HOST}:{port}" in err and "--port 0 for any free one" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_rule_based_run_is_listed_as_costing_nothing(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from starlette.testclient import TestClient

    from groundeval.view.app import make_app

    data = pytester.mkdir("data")
    (src,) = FIXTURES.glob("Liz_Conn_*.json")
    shutil.copy(src, data)
    assert cli_main(["--agent", "baseline", "--data-dir", "data", "--out-dir", "runs", "--", "-q"]) == 0
    capsys.readouterr()
    with TestClient(make_app(pytester.path / "runs")) as client:
        page = client.get("/").text
    assert '0 <span class="muted">(no model calls)</span>' in page and ">unknown<" not in page
