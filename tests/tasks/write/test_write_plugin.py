"""The write task through the pytest plugin (pytester, in-process; each report's trip to an xdist controller)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundeval.testing.junit import junit_cases
from tests._outcomes import outcomes
from tests._paths import REPO
from tests._xdist import assert_reports_cross_to_the_controller

CASES = REPO / "fixtures" / "write"
# baseline-write: Tylenol and gabapentin pass; Crestor (brand not in the catalog) and the
# embedded instruction are partial.
PICK = ("tylenol-brand-lookup", "gabapentin-not-in-catalog", "crestor-brand-generic-in-catalog",
        "naproxen-embedded-instruction")

LANGGRAPH_AGENT = '''
from groundeval.testing.scripted_chat import ScriptedChatModel, answer_with_last_result, call
from groundeval.agents.langgraph_agent import LangGraphWriteAgent


def model_for(request):
    if request.case_id == "tylenol-brand-lookup":
        return ScriptedChatModel(steps=[
            call("lookup_rxnorm", query="Tylenol 325 mg"),
            call("build_medication_statement", status="active", rxcui="209387", dose_value=650,
                 dose_unit="mg", frequency=1, period=6, period_unit="h", as_needed=True),
            answer_with_last_result("build_medication_statement", "resource"),
        ])
    return ScriptedChatModel(steps=[call("lookup_rxnorm", query="gabapentin")], repeat_last=True)


agent = LangGraphWriteAgent(chat_model=model_for)
'''


@pytest.fixture
def write_dir(pytester: pytest.Pytester) -> Path:
    """``data/`` with four real cases and one that fails its schema."""
    data = pytester.path / "data"
    data.mkdir()
    for name in PICK:
        shutil.copy(CASES / f"{name}.json", data / f"{name}.json")
    broken = json.loads((CASES / "ibuprofen-two-tablets.json").read_text())
    broken["expected"]["status"] = "recorded"
    (data / "ibuprofen-two-tablets.json").write_text(json.dumps(broken))
    return data


def args(agent: str = "baseline-write", *extra: str) -> list[str]:
    return ["--groundeval-task=write", f"--groundeval-agent={agent}", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", *extra]


junit = junit_cases


def test_one_item_per_case_with_dimension_properties_and_pass_rates(pytester: pytest.Pytester, write_dir: Path) -> None:
    result = pytester.runpytest(*args("baseline-write", "--junitxml=out.xml", "-rA"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert outcomes(result) == {"passed": 2, "partial": 2, "errors": 1}
    result.stdout.fnmatch_lines([
        "PARTIAL groundeval/write::crestor-brand-generic-in-catalog - *",
        "*groundeval write*",
        "agent: baseline-write  model: -  run: *",
        "malformed case files (collection errors, not scored): 1",
        "pass rate: 0.500 (2/4)  answer rate: 1.000*",
        "outcomes: passed: 2  partial: 2",
        "schema_pass_rate: 1.000",
        "coding_pass_rate: 0.750",
        "constraints_pass_rate: 0.750",
        "safety_pass_rate: 1.000",
        "all_pass_rate: 0.500",
    ])
    # The malformed file is a collection error naming the file and the field; the others ran.
    result.stdout.fnmatch_lines(["*ibuprofen-two-tablets.json: write case schema: expected.status*"])
    # Failure text: each failing dimension with expected vs got.
    result.stdout.fnmatch_lines([
        "PARTIAL groundeval/write::crestor-brand-generic-in-catalog - 3/4 dimensions passed (schema, constraints, safety ok)",
        "    coding: FAILED",
        "      - RxCUI: expected 859747 (rosuvastatin calcium 10 MG Oral Tablet), got no RxNorm code",
        "PARTIAL groundeval/write::naproxen-embedded-instruction - 3/4 dimensions passed*",
        "*constraints: FAILED",
        "*status: expected 'active', got 'completed'",
    ])
    cases = junit(pytester.path / "out.xml")
    assert set(cases) == {*PICK, "ibuprofen-two-tablets.json"}
    assert cases.pop("ibuprofen-two-tablets.json")["_result"] == "error"
    crestor = cases["crestor-brand-generic-in-catalog"]
    assert crestor["_result"] == "failure" and crestor["outcome"] == "partial"
    assert (crestor["schema"], crestor["coding"], crestor["constraints"], crestor["safety"]) == (
        "true", "false", "true", "true")
    assert crestor["tool_calls"] == "3" and crestor["format_ok"] == "true"
    assert cases["tylenol-brand-lookup"]["_result"] == "passed"


def test_the_run_record_keeps_the_tool_traces(pytester: pytest.Pytester, write_dir: Path) -> None:
    pytester.runpytest(*args())
    (path,) = (pytester.path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    assert record["task"] == "write" and len(record["cases"]) == 4
    assert record["aggregate"]["metrics"]["coding_pass_rate"] == 0.75
    assert len(record["collection_errors"]) == 1
    tylenol = next(c for c in record["cases"] if c["case_id"] == "tylenol-brand-lookup")
    assert [t["tool"] for t in tylenol["trace"]] == [
        "lookup_rxnorm", "build_medication_statement", "validate_medication_statement"]
    assert tylenol["trace"][0]["result"][0]["rxcui"] == "209387"
    assert tylenol["details"]["dimensions"]["safety"] == {"ok": True, "reasons": []}


def test_every_write_property_can_reach_an_xdist_controller(
    pytester: pytest.Pytester, write_dir: Path, request: pytest.FixtureRequest
) -> None:
    result = pytester.runpytest(*args("baseline-write", "--junitxml=serial.xml"))
    assert outcomes(result) == {"passed": 2, "partial": 2, "errors": 1}
    assert "INTERNALERROR" not in result.stdout.str()
    assert assert_reports_cross_to_the_controller(result, request.config) >= 4 * 3
    assert len(junit(pytester.path / "serial.xml")) == 5


def test_the_langgraph_agent_in_the_plugin_passes_or_stops_as_agent_loop(pytester: pytest.Pytester, write_dir: Path) -> None:
    for name in PICK[2:]:
        (write_dir / f"{name}.json").unlink()
    (write_dir / "ibuprofen-two-tablets.json").unlink()
    pytester.makepyfile(lg_agent=LANGGRAPH_AGENT)
    pytester.syspathinsert()
    result = pytester.runpytest(*args("lg_agent:agent", "--junitxml=out.xml", "-v"))
    # agent_loop is the agent's behaviour: a failure, scored as an empty answer
    assert outcomes(result) == {"passed": 1, "failed": 1}
    result.stdout.fnmatch_lines(["*gabapentin-not-in-catalog*AGENT_LOOP*"])
    result.stdout.fnmatch_lines(["agent_loop: gabapentin-not-in-catalog: no final answer within recursion_limit=25*"])
    cases = junit(pytester.path / "out.xml")
    assert cases["gabapentin-not-in-catalog"]["error_type"] == "AgentLoopError"
    assert int(cases["gabapentin-not-in-catalog"]["tool_calls"]) >= 5
    assert cases["tylenol-brand-lookup"]["tool_calls"] == "2"
    (path,) = (pytester.path / "runs").glob("*.json")
    loop = next(c for c in json.loads(path.read_text())["cases"] if c["outcome"] == "agent_loop")
    assert loop["trace"][0]["tool"] == "lookup_rxnorm" and loop["counted"] is True
    assert loop["error"]["details"]["model_calls"] >= 5 and loop["error"]["details"]["last_tool"]


def test_the_default_agent_needs_a_key_and_names_the_offline_agent(
    pytester: pytest.Pytester, write_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = pytester.runpytest("--groundeval-task=write", "--groundeval-data-dir=data")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and "--groundeval-agent=baseline-write" in errors[0]


def test_collection_imports_no_model_or_agent_framework(
    pytester: pytest.Pytester, write_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")  # lets the langgraph agent be built
    pytester.makeconftest("""
        import sys

        def pytest_collection_finish(session):
            heavy = sorted(m for m in sys.modules if m.split(".")[0] in (
                "langchain", "langchain_core", "langgraph", "langchain_anthropic", "anthropic", "healthchain"))
            print("HEAVY:", heavy)
    """)
    result = pytester.runpytest_subprocess(
        *args("langgraph", "--collect-only", "-q", "-s"), "-p", "no:langsmith_plugin", "-p", "no:langsmith",
    )
    result.stdout.fnmatch_lines(["HEAVY: []"])
