"""Extraction with and without tools through the plugin (in-process, with each report's trip to an xdist
controller), then ``groundeval compare``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundeval.cli import main as cli_main
from groundeval.testing.junit import junit_cases
from tests._outcomes import outcomes
from tests._paths import REPO
from tests._xdist import assert_reports_cross_to_the_controller

HERE = Path(__file__).resolve().parent
FIXTURES = REPO / "fixtures" / "extraction"
VARIANTS = {v["transformation"]: v["fixture"]
            for v in json.loads((FIXTURES / "MANIFEST.variants.json").read_text())["variants"]}
PICK = ("medref-contained", "subject-other-server", "text-only", "dangling-reference")


@pytest.fixture
def data_dir(pytester: pytest.Pytester) -> Path:
    """``data/`` with four variants, and the scripted reader as the agent module ``reader_agent``."""
    data = pytester.path / "data"
    data.mkdir()
    for name in PICK:
        shutil.copy(FIXTURES / VARIANTS[name], data / VARIANTS[name])
    shutil.copy(HERE / "reader_agent.py", pytester.path / "reader_agent.py")
    return data


def args(agent: str, out: str, *extra: str) -> list[str]:
    return ["--groundeval-task=extraction", f"--groundeval-agent={agent}", "--groundeval-data-dir=data",
            f"--groundeval-out-dir={out}", "-p", "no:cacheprovider", "-p", "no:randomly", *extra]


TOOLS = ("--groundeval-bundle-in-prompt=false",)


junit = junit_cases


def record(pytester: pytest.Pytester, out: str) -> Path:
    (path,) = (pytester.path / out).glob("*.json")
    return path


def test_extraction_with_and_without_tools_side_by_side(
    pytester: pytest.Pytester, data_dir: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    plain = pytester.runpytest(*args("baseline", "plain"))
    tools = pytester.runpytest(*args("reader_agent:agent", "tools", *TOOLS, "--junitxml=serial.xml"))
    assert outcomes(plain) == outcomes(tools) == {"passed": 4}
    tools.stdout.fnmatch_lines(["agent: langgraph-fhir  model: scripted  run: *"])
    with_tools = json.loads(record(pytester, "tools").read_text())
    assert with_tools["settings"]["task_options"]["bundle_in_prompt"] is False
    contained = next(c for c in with_tools["cases"] if c["case_id"].startswith("variant-medref-contained"))
    assert [t["tool"] for t in contained["trace"]][:2] == ["get_resources", "get_resources"]
    assert "resolve_reference" in {t["tool"] for t in contained["trace"]}
    cases = junit(pytester.path / "serial.xml")
    assert {p["tool_calls"] for p in cases.values()} != {"0"}
    capsys.readouterr()

    assert cli_main(["compare", str(record(pytester, "plain")), str(record(pytester, "tools"))]) == 0
    text = capsys.readouterr().out
    assert "extraction  agent baseline  model -  4 cases" in text
    assert "extraction  agent langgraph-fhir  model scripted  4 cases" in text
    assert "task options differ" in text and '"bundle_in_prompt": false' in text
    assert cli_main(["compare", str(record(pytester, "plain")), str(record(pytester, "tools")), "--format", "json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert (comparison["a"]["agent"], comparison["b"]["agent"]) == ("baseline", "langgraph-fhir")
    figures = {f["name"]: f for f in comparison["figures"]}
    assert (figures["pass_rate"]["a"], figures["pass_rate"]["b"]) == (1.0, 1.0)
    assert figures["micro_f1"]["diff"] == 0.0
    assert comparison["regressed"] == [] and len(comparison["cases"]) == 4

    # the tool-using run's per-case properties (tool counts, traces' figures) can reach an xdist controller
    assert assert_reports_cross_to_the_controller(tools, request.config) >= 4 * 3


def test_a_text_agent_on_extraction_without_the_bundle_is_a_usage_error(
    pytester: pytest.Pytester, data_dir: Path
) -> None:
    result = pytester.runpytest(*args("baseline", "runs", *TOOLS))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent 'baseline' requires text_prompt, which the extraction task does not provide*"])


def test_langgraph_fhir_on_the_write_task_stops_before_any_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")  # the agent can be built; the task refuses it
    result = pytester.runpytest("--groundeval-task=write", "--groundeval-agent=langgraph-fhir", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agent 'langgraph-fhir' requires fhir_bundle, which the write task does not provide*"])


RECONCILE = REPO / "fixtures" / "reconcile"
RECONCILE_PICK = ("exact--Liz_Conn_27c911c6", "exact--variant-medref-urn-uuid--Max_Kris_f9120576",
                  "unit-equivalent--variant-medref-contained--Trey_Berge_99153850", "omission-high-alert--Max_Kris_f9120576")


def test_the_langgraph_agent_reconciles_through_the_read_tools(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    data = pytester.path / "data"
    data.mkdir()
    for name in RECONCILE_PICK:
        shutil.copy(RECONCILE / f"{name}.json", data / f"{name}.json")
    shutil.copy(HERE / "reader_agent.py", pytester.path / "reader_agent.py")
    result = pytester.runpytest(
        "--groundeval-task=reconcile", "--groundeval-agent=reader_agent:reconcile_agent", "--groundeval-data-dir=data",
        "-p", "no:cacheprovider", "-p", "no:randomly", "--junitxml=out.xml",
    )
    # the scripted reconciler calls everything "matched": right on the exact and unit-equivalent
    # reports, and the missed omission of a high-alert drug fails that case
    counts = outcomes(result)
    assert counts.get("passed") == 3 and counts.get("passed", 0) + counts.get("failed", 0) == 4, counts
    result.stdout.fnmatch_lines(["agent: langgraph-fhir  model: scripted  run: *"])
    cases = junit(pytester.path / "out.xml")
    missed = cases["omission-high-alert--Max_Kris_f9120576"]
    assert missed["_result"] == "failure" and missed["high_alert_missed"] == "true"
    assert all(cases[name]["_result"] == "passed" for name in RECONCILE_PICK[:3])
    assert all(int(p["tool_calls"]) >= 4 for p in cases.values())  # list, list, resolve..., look up
    (path,) = (pytester.path / "runs").glob("*.json")
    contained = next(c for c in json.loads(path.read_text())["cases"] if c["case_id"].startswith("unit-equivalent"))
    tools_used = [t["tool"] for t in contained["trace"]]
    assert tools_used[:2] == ["get_resources", "get_resources"] and "lookup_code" in tools_used
    assert any(t["tool"] == "resolve_reference" and t["args"].get("reference", "").startswith("#") and t["ok"]
               for t in contained["trace"])  # the contained Medication, resolved with its parent's id
    # Every reconcile metric (booleans, n/a) of this run can reach an xdist controller unchanged.
    assert assert_reports_cross_to_the_controller(result, request.config) >= 4 * 3
    assert {p.get("high_alert_missed") for p in cases.values()} == {"false", "true"}
