"""The summary task end to end through the plugin, offline: baseline agent and judge serial and on two
workers; a run with an uncalibrated judge is marked so in the terminal, junit, Markdown and HTML; the
rule-based agents keep the import wall."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from groundeval.agents.baselines import summary as summary_agents
from groundeval.cli import main as cli_main
from tests._xdist import assert_reports_cross_to_the_controller

JUDGE_MODULE = '''
import json
from groundeval.testing import ScriptedModel

def _no(request):
    return json.dumps({"met": False, "evidence": ""})

JUDGE = ScriptedModel(_no, role="judge", name="says-no")


def AGENT(request):  # the same model as the judge: self-preference
    from groundeval.agent_io import AgentResult
    return AgentResult(text="Please review the chart.", model="says-no")
'''


def _record(base: Path) -> dict[str, Any]:
    (path,) = (base / "runs").glob("*.json")
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def test_an_uncalibrated_judge_is_marked_so_in_every_output(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(scripted_judge=JUDGE_MODULE)
    result = pytester.runpytest("--groundeval-task=summary", "--groundeval-agent=scripted_judge:AGENT",
                                "-p", "no:cacheprovider",
                                "--groundeval-judge=scripted_judge:JUDGE", "--groundeval-limit=3",
                                "--junitxml=out.xml", "--groundeval-summary-md=summary.md",
                                "--groundeval-min-pass-rate=0.5")
    assert result.ret == 1
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["WARNING: the judge is the agent's own model (says-no)*",
                                 "rubric_score: 0.000", "must_mention_recall: 0.000",
                                 "judge: scripted_judge:JUDGE", "judge_kappa: -", "judge_reliability: judge not calibrated"])
    record = _record(pytester.path)
    assert record["aggregate"]["metrics"]["judge_reliability"] == "judge not calibrated"
    assert record["task_facts"]["judge"]["model"] == "says-no" and record["task_facts"]["judge"]["temperature"] == 0.0
    assert record["task_facts"]["judge_card"]["source"].startswith("no judge card for scripted_judge:JUDGE")
    assert record["aggregate"]["usage"]["judge_calls"] == record["aggregate"]["metrics"]["decided_by_judge"] > 0
    assert '<property name="judge_reliability" value="judge not calibrated"' in (pytester.path / "out.xml").read_text()
    # the pass rate says, on its own line right under it, that it rests on verdicts no gate reads
    out = result.stdout.lines
    at = next(i for i, line in enumerate(out) if line.startswith("pass rate: "))
    said = ("pass rate not gated: the case verdicts rest on the judge scripted_judge:JUDGE: judge not calibrated; "
            "no gate reads these verdicts")
    assert out[at + 1].startswith(said)
    result.stdout.fnmatch_lines(["cases passing (at least 0.5 of their counted trials): 0/3*(--groundeval-min-pass-rate "
                                 "not applied: verdicts not gated (an uncalibrated or unreliable judge))"])
    assert f'<property name="pass_rate_gated" value="{said}' in (pytester.path / "out.xml").read_text()
    markdown = (pytester.path / "summary.md").read_text()
    assert "judge not calibrated" in markdown and "self-preference" in markdown
    md_lines = markdown.splitlines()
    at = next(i for i, line in enumerate(md_lines) if line.startswith("**pass rate "))
    assert md_lines[at + 2].startswith(f"**{said}")
    assert "(--groundeval-min-pass-rate not applied: verdicts not gated" in markdown
    (run,) = (pytester.path / "runs").glob("*.json")
    assert cli_main(["report", str(run), "-o", str(pytester.path / "report.html")]) == 0
    html = (pytester.path / "report.html").read_text()
    assert "judge not calibrated" in html and "self-preference" in html
    assert f'<p class="warn ungated" id="ungated-1"><strong>{said}' in html


def test_baseline_agent_and_judge_pass_and_the_naive_control_fails_with_reports_that_cross_to_xdist(
    pytester: pytest.Pytester, request: pytest.FixtureRequest,
) -> None:
    result = pytester.runpytest("--groundeval-task=summary", "--groundeval-agent=baseline-summary",
                                "-p", "no:cacheprovider")
    assert result.ret == 0
    result.assert_outcomes(passed=25)
    # the packaged card was measured on the hand-written set a model labelled, not people, so the
    # verdicts are not gated and the run says so beside the pass rate
    result.stdout.fnmatch_lines([
        "pass rate: 1.000 (25/25)*",
        "pass rate not gated: the case verdicts rest on the judge baseline: judge calibrated on model-written labels*",
        "rubric_score: 1.000", "judge: baseline", "judge_kappa: 0.*",
        "judge_calibration_set: labels.jsonl (SHA-256 *; 100 summaries, 20 records;*labelled by a model*not people)",
        "judge_reliability: judge calibrated on model-written labels only (kappa 0.*"])
    record = _record(pytester.path)
    assert record["task_facts"]["judge_card"]["calibration_set"]["summaries"] == 100
    (pytester.path / "runs" / next((pytester.path / "runs").glob("*.json")).name).unlink()
    # The task's values under -n 2: the worker-to-controller trip, made in-process (tests/_xdist.py);
    # how xdist spreads cases and merges records is checked once for every task in tests/plugin.
    result = pytester.runpytest("--groundeval-task=summary", "--groundeval-agent=naive-summary",
                                "-p", "no:cacheprovider", "--groundeval-limit=6")
    assert result.ret == 1
    assert assert_reports_cross_to_the_controller(result, request.config) == 6 * 3  # setup, call, teardown
    record = _record(pytester.path)
    assert record["aggregate"]["counts"] == {"failed": 6}
    assert record["aggregate"]["metrics"]["contradictions"] > 0


def test_the_rule_based_agents_never_import_the_tasks_truth() -> None:
    source = Path(summary_agents.__file__).read_text()
    imported = [node.module or "" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)]
    assert imported and not any(m.startswith("groundeval.tasks") for m in imported)


def test_verdicts_of_an_uncalibrated_judge_are_shown_but_not_gated(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
) -> None:
    pytester.makepyfile(scripted_judge=JUDGE_MODULE)
    common = ("--groundeval-task=summary", "--groundeval-judge=scripted_judge:JUDGE", "--groundeval-limit=2",
              "-p", "no:cacheprovider")
    assert pytester.runpytest(*common, "--groundeval-agent=baseline-summary").ret == 0
    (baseline,) = (pytester.path / "runs").glob("*.json")
    assert json.loads(baseline.read_text())["task_facts"]["ungated_verdicts"] == (
        "the case verdicts rest on the judge scripted_judge:JUDGE: judge not calibrated")
    result = pytester.runpytest(*common, "--groundeval-agent=hedge-summary", f"--groundeval-baseline={baseline}",
                                "--groundeval-fail-on-regression")
    result.stdout.fnmatch_lines(["regressions vs *: 2  lost: 0*",
                                 "verdicts not gated: the case verdicts rest on the judge scripted_judge:JUDGE*",
                                 "REGRESSED *"])
    assert "regression gate FAILED" not in result.stdout.str()
    # the CLI gate applies the same rule and says why it exits 0 (it used to list REGRESSED cases only)
    current = next(p for p in (pytester.path / "runs").glob("*.json") if p != baseline)
    capsys.readouterr()
    assert cli_main(["compare", str(baseline), str(current), "--fail-on-regression"]) == 0
    text = capsys.readouterr().out
    assert ("verdicts not gated: the case verdicts rest on the judge scripted_judge:JUDGE: judge not calibrated; "
            "2 regressed, pass rate change -1.000 shown, not failing the gate") in text
    assert "regression gate passed (exit status 0): the regressions above rest on verdicts that are not gated" in text
    assert cli_main(["compare", str(baseline), str(current), "--format", "markdown"]) == 0
    assert "**verdicts not gated: the case verdicts rest on the judge" in capsys.readouterr().out
    assert cli_main(["compare", str(baseline), str(current), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["ungated"].endswith("judge not calibrated")


def test_a_lost_case_still_fails_an_ungated_gate() -> None:
    from groundeval.reporting.gate import CaseGate, CaseLost, GateResult

    regressed = CaseGate("c1", 1, 1, 0, 1, None, "regressed")
    assert not GateResult("a", "b", (regressed,), ungated="judge not calibrated").failed
    assert GateResult("a", "b", (regressed,)).failed
    lost = GateResult("a", "b", (regressed,), lost=(CaseLost("c2", 1, 1, ("agent_error",)),), ungated="judge not calibrated")
    assert lost.failed and lost.reasons() == ["1 lost (a verdict before -> none now: agent_error 1)"]
