"""``--groundeval-fhir`` through the plugin: the option, the agents it admits, and the retrieval figures in
the run record, junit, the terminal, Markdown and HTML, serially and under ``-n 2``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundeval.reporting.cases import load_record
from groundeval.reporting.html import render_report
from groundeval.tasks.prompt_reference import render_prompt
from groundeval.testing.junit import junit_cases
from tests._outcomes import outcomes
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"
PICK = ("Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json", "Max_Kris_f9120576-f949-45de-ae43-c0d902ecb249.json",
        "Trey_Berge_99153850-84f1-4de6-9e19-3e0d6eeedeb2.json", "Beatrice_Aufderhar_5451401c-ab1b-4adc-9df6-c02e856e492a.json")


@pytest.fixture
def data_dir(pytester: pytest.Pytester) -> Path:
    data = pytester.path / "data"
    data.mkdir()
    for name in PICK:
        shutil.copy(FIXTURES / name, data / name)
    return data


def args(agent: str, out: str, *extra: str) -> list[str]:
    return ["--groundeval-task=extraction", f"--groundeval-agent={agent}", "--groundeval-data-dir=data",
            f"--groundeval-out-dir={out}", "-p", "no:cacheprovider", "-p", "no:randomly", *extra]


def _record(pytester: pytest.Pytester, out: str) -> Path:
    (path,) = (pytester.path / out).glob("*.json")
    return path


@pytest.mark.parametrize("workers", [None, "2"])
def test_retrieval_figures_reach_every_output(pytester: pytest.Pytester, data_dir: Path, workers: str | None) -> None:
    extra = ("--groundeval-fhir=sandbox", "--junitxml=out.xml", "--groundeval-summary-md=summary.md",
             "--groundeval-conversation=reference")
    if workers is None:
        result = pytester.runpytest(*args("baseline-rest", "runs", *extra))
    else:
        result = pytester.runpytest_subprocess(*args("baseline-rest", "runs", *extra, "-n", workers))
    assert outcomes(result) == {"passed": 4}
    result.stdout.fnmatch_lines(["fhir: retrieval precision *, recall 100% (macro over 4 case(s)); * call(s), *"])
    record = json.loads(_record(pytester, "runs").read_text())
    assert record["settings"]["fhir"] == "sandbox"
    assert record["aggregate"]["metrics"]["macro_fhir_recall"] == 1.0
    assert record["aggregate"]["metrics"]["fhir_writes"] == 0
    assert record["aggregate"]["statements"]["fhir"].startswith("fhir: retrieval precision")
    for case in record["cases"]:
        assert case["metrics"]["fhir_calls"] == 2  # the Patient, then one search with _include
        calls = case["agent_meta"]["fhir"]["calls"]
        assert [c[0] for c in calls] == ["GET", "GET"]
        assert "127.0.0.1" not in json.dumps(case)  # no port, no URL, no token in a record
    junit = junit_cases(pytester.path / "out.xml")
    assert {props["fhir_recall"] for props in junit.values()} == {"1.0"}
    assert all("fhir_precision" in props for props in junit.values())
    assert "fhir: retrieval precision" in (pytester.path / "summary.md").read_text()
    loaded = load_record(_record(pytester, "runs"))
    assert 'class="fhir"' in render_report(loaded) and "retrieval precision" in render_report(loaded)
    # --groundeval-conversation=reference: the prompt rendered again is the FHIR one, placeholders and all
    prompt = render_prompt(loaded, loaded.cases[0], data_dir)
    assert "{fhir_base_url}" in prompt.user


def test_an_agent_that_does_not_read_over_fhir_is_a_usage_error(pytester: pytest.Pytester, data_dir: Path) -> None:
    result = pytester.runpytest(*args("baseline", "runs", "--groundeval-fhir=sandbox"))
    result.stderr.fnmatch_lines(["*agent 'baseline' does not read the record over FHIR*langgraph-rest*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = pytester.runpytest(*args("baseline-rest", "runs"))
    result.stderr.fnmatch_lines(["*agent 'baseline-rest' reads the record over FHIR*--groundeval-fhir=sandbox*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize(("value", "message"), [
    ("sqlite", "*--groundeval-fhir='sqlite': must be sandbox or the base URL of a FHIR R4 server*"),
    ("http://user:secret@127.0.0.1:8080/fhir", "*must not hold credentials*GROUNDEVAL_FHIR_TOKEN*"),
])
def test_a_bad_fhir_value_is_a_usage_error(pytester: pytest.Pytester, data_dir: Path, value: str, message: str) -> None:
    result = pytester.runpytest(*args("baseline-rest", "runs", f"--groundeval-fhir={value}"))
    result.stderr.fnmatch_lines([message])
    assert "secret" not in result.stderr.str().replace("user:secret@", "")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_fhir_with_mcp_tools_is_a_usage_error(pytester: pytest.Pytester, data_dir: Path) -> None:
    result = pytester.runpytest(*args("baseline-rest", "runs", "--groundeval-fhir=sandbox", "--groundeval-tools=mcp"))
    result.stderr.fnmatch_lines(["*--groundeval-fhir with --groundeval-tools=mcp*drop one of them*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_counterfactual_twins_run_over_fhir(pytester: pytest.Pytester, data_dir: Path) -> None:
    # a seed whose order calls some twins before their original and some after (record_sensitivity
    # needs both; a drawn seed may call them all after, and the figure is then "-")
    result = pytester.runpytest(*args("baseline-rest", "runs", "--groundeval-fhir=sandbox",
                                      "--groundeval-counterfactual", "--groundeval-twin-seed=7"))
    record = json.loads(_record(pytester, "runs").read_text())
    twins = [c for c in record["cases"] if "[cf-" in c["case_id"]]
    assert twins and all("fhir" in c["agent_meta"] for c in twins)
    assert record["aggregate"]["counterfactual"]["record_sensitivity"]["value"] == 1.0
    assert result.ret == 0
