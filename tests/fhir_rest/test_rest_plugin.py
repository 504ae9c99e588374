"""End to end through the plugin: ``--groundeval-fhir=sandbox`` with ``langgraph-rest`` over a scripted model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fhirpy")
pytest.importorskip("langgraph")

from tests._paths import REPO
from tests._xdist import run_xdist

HERE = Path(__file__).parent
PICK = {"extraction": 3, "labs": 2, "write": ("tylenol-brand-lookup", "gabapentin-not-in-catalog")}


def _setup(pytester: pytest.Pytester, task: str) -> None:
    shutil.copy(HERE / "rest_scripts.py", pytester.path / "rest_scripts.py")
    shutil.copy(REPO / "tests" / "fhir" / "reader_agent.py", pytester.path / "reader_agent.py")
    data = pytester.path / "data"
    data.mkdir()
    pick = PICK[task]
    files = sorted((REPO / "fixtures" / task).glob("[!M]*.json"))
    chosen = files[:pick] if isinstance(pick, int) else [REPO / "fixtures" / task / f"{n}.json" for n in pick]
    for path in chosen:
        shutil.copy(path, data / path.name)


def _run(pytester: pytest.Pytester, task: str, xdist: bool, *extra: str) -> tuple[Any, dict[str, Any]]:
    args = [f"--groundeval-task={task}", "--groundeval-agent=rest_scripts:agent", "--groundeval-fhir=sandbox",
            "--groundeval-data-dir=data", "--groundeval-out-dir=runs", "-p", "no:cacheprovider",
            "-o", "pythonpath=.", *extra]
    result = run_xdist(pytester, *args) if xdist else pytester.runpytest(*args)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-3000:]
    (record,) = (pytester.path / "runs").glob("*.json")
    return result, json.loads(record.read_text())


@pytest.mark.parametrize(("task", "xdist"), [("extraction", False), ("labs", False), ("write", False),
                                              ("extraction", True)],
                         ids=["extraction-serial", "labs-serial", "write-serial", "extraction-n2"])
def test_a_rest_agent_run_scores_its_cases_over_the_sandbox(pytester: pytest.Pytester, task: str, xdist: bool) -> None:
    _setup(pytester, task)
    _result, record = _run(pytester, task, xdist)
    assert record["agent"] == "langgraph-rest"
    cases = record["cases"]
    assert len(cases) == (PICK[task] if isinstance(PICK[task], int) else len(PICK[task]))
    assert all(c["outcome"] not in ("agent_error", "infra_error", "harness_error", "config_error") for c in cases)
    assert any(c["outcome"] == "passed" for c in cases)
    for case in cases:
        tools = [t["tool"] for t in case["trace"]]
        assert tools and set(tools) <= {"fhir_read", "fhir_search", "fhir_create", "lookup_rxnorm"}
        assert ("fhir_create" in tools) == (task == "write")
        assert case["metrics"]["fhir_calls"] >= len(tools) - tools.count("lookup_rxnorm")


def test_without_the_fhir_option_the_rest_agent_is_refused_before_any_case(pytester: pytest.Pytester) -> None:
    _setup(pytester, "extraction")
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=rest_scripts:agent",
                                "--groundeval-data-dir=data", "-p", "no:cacheprovider", "-o", "pythonpath=.")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--groundeval-fhir=sandbox*"])


def test_the_built_in_rest_agent_without_the_option_is_told_so_before_a_missing_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from groundeval.cli import main as cli_main

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _setup(pytester, "extraction")
    plugin = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=langgraph-rest",
                                "--groundeval-data-dir=data", "-p", "no:cacheprovider")
    assert plugin.ret == pytest.ExitCode.USAGE_ERROR
    plugin.stderr.fnmatch_lines(["*'langgraph-rest' reads the record over FHIR*add --groundeval-fhir=sandbox*"])
    plugin.stderr.no_fnmatch_line("*ANTHROPIC_API_KEY*")
    assert cli_main(["--task", "extraction", "--agent", "langgraph-rest", "--data-dir", "data"]) == 4
    err = capsys.readouterr().err
    assert "reads the record over FHIR" in err and "ANTHROPIC_API_KEY" not in err
    assert cli_main(["--task", "extraction", "--agent", "langgraph-rest", "--fhir", "sandbox",
                     "--data-dir", "data"]) == 4
    assert "ANTHROPIC_API_KEY is not set" in capsys.readouterr().err  # with the option given, the key is next


def _full_records(pytester: pytest.Pytester) -> None:
    shutil.copy(HERE / "rest_scripts.py", pytester.path / "rest_scripts.py")
    shutil.copy(REPO / "tests" / "fhir" / "reader_agent.py", pytester.path / "reader_agent.py")
    shutil.copytree(REPO / "fixtures" / "full-records", pytester.path / "data")


def test_whole_records_are_cases_over_fhir(pytester: pytest.Pytester) -> None:
    _full_records(pytester)
    _result, record = _run(pytester, "extraction", False)
    manifest = json.loads((REPO / "fixtures" / "full-records" / "MANIFEST.json").read_text())
    assert len(record["cases"]) == len(manifest["fixtures"]) >= 5
    assert all(c["outcome"] == "passed" for c in record["cases"]), [c["message"] for c in record["cases"]]
    assert record["complete"]


def test_whole_records_are_left_out_of_a_file_run_with_the_reason(pytester: pytest.Pytester) -> None:
    _full_records(pytester)
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=baseline",
                                "--groundeval-data-dir=data", "--groundeval-out-dir=runs", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*7 case(s) not run: a whole record*--groundeval-fhir=sandbox*", "*7 deselected*"])
    (path,) = (pytester.path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    assert record["cases"] == [] and record["complete"]
