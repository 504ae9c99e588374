"""The regression gate and the Markdown summary, through the plugin (serial and -n 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundeval.records.outcomes import OUTCOMES

from .conftest import junit_cases
from .matrix import MATRIX, SharedRun, prefix_of

ARGS = ("--groundeval-task=extraction", "--groundeval-data-dir=data", "-p", "no:cacheprovider")


def _baseline(pytester: pytest.Pytester) -> Path:
    result = pytester.runpytest(*ARGS, "--groundeval-agent=baseline", "--groundeval-out-dir=base")
    assert result.ret == pytest.ExitCode.OK
    (path,) = (pytester.path / "base").glob("*.json")
    return path


def test_regressions_are_named_marked_in_junit_and_gate_the_exit_status(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = _baseline(pytester)
    step = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = pytester.runpytest(
        *ARGS, "--groundeval-agent=naive", f"--groundeval-baseline={baseline}", "--groundeval-fail-on-regression",
        "--junitxml=out.xml", "--groundeval-summary-md=summary.md",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["regressions vs *: 3*", "REGRESSED *Garrett_Thompson*"])
    props = {name.split("_")[0]: p for name, p in junit_cases(pytester.path / "out.xml").items()}
    assert props["Garrett"]["regression"] == "true" and props["Liz"]["regression"] == "false"
    summary = (pytester.path / "summary.md").read_text()
    assert "Garrett_Thompson" in summary and "egress" in summary
    assert step.read_text() == summary  # appended to the CI step summary too
    (record,) = (pytester.path / "runs").glob("*.json")
    assert json.loads(record.read_text())["exit_status"] == result.ret  # the final status, gate included

    # the same agent as the baseline: nothing regressed, and the flag keeps a green run green
    same = pytester.runpytest(*ARGS, "--groundeval-agent=baseline", f"--groundeval-baseline={baseline}",
                              "--groundeval-fail-on-regression")
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["regressions vs *: 0*"])


def test_the_gate_under_xdist(xdist_matrix: SharedRun) -> None:
    """The shared -n 2 matrix run (``matrix.py``) against the ``baseline`` agent's record, with the flag."""
    result = xdist_matrix.result
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    regressed = {prefix_of(name) for name, p in xdist_matrix.junit.items() if p.get("regression") == "true"}
    # passed in the baseline, counted and not passed now
    passed_before = {prefix_of(c["case_id"]) for c in xdist_matrix.baseline["cases"] if c["outcome"] == "passed"}
    expected = {p for p, outcome in MATRIX.items() if outcome != "passed" and OUTCOMES[outcome].counted} & passed_before
    assert regressed == expected and {"Garrett_Thompson", "Max_Kris"} <= regressed
    assert all(p.get("regression") == "false" for n, p in xdist_matrix.junit.items() if n.startswith("Liz_Conn"))
    result.stdout.fnmatch_lines([f"regressions vs *: {len(expected)}*", "REGRESSED *Garrett_Thompson*"])
    # passed in the baseline, no verdict now (excluded): lost, named with the outcome, and the gate fails on them
    lost = {p: o for p, o in MATRIX.items() if not OUTCOMES[o].counted and p in passed_before}
    assert {"Gordon377", "Jayson808"} <= set(lost)
    result.stdout.fnmatch_lines([f"regressions vs *: {len(expected)}  lost: {len(lost)}  *"])
    for prefix, outcome in lost.items():
        result.stdout.fnmatch_lines([f"LOST {prefix}*: passed 1/1 -> no verdict ({outcome})"])
    result.stdout.fnmatch_lines([f"regression gate FAILED: {len(expected)} regressed (passed -> not passed); {len(lost)} lost*"])
    marked = {prefix_of(name) for name, p in xdist_matrix.junit.items() if p.get("lost") == "true"}
    assert marked == set(lost)  # junit marks each lost case, as it marks each regression


def test_a_bad_baseline_is_a_usage_error(pytester: pytest.Pytester, eval_dir: Path) -> None:
    (pytester.path / "not-a-record.json").write_text(json.dumps({"hello": 1}))
    result = pytester.runpytest(*ARGS, "--groundeval-agent=baseline", "--groundeval-baseline=not-a-record.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --groundeval-baseline: *not-a-record.json*"])
    result = pytester.runpytest(*ARGS, "--groundeval-agent=baseline", "--groundeval-fail-on-regression")
    result.stderr.fnmatch_lines(["ERROR: --groundeval-fail-on-regression needs --groundeval-baseline=RUN.json*"])


def test_a_baseline_of_another_task_is_a_usage_error(pytester: pytest.Pytester, eval_dir: Path) -> None:
    path = _baseline(pytester)
    other = json.loads(path.read_text())
    other["task"] = "write"
    (pytester.path / "write-run.json").write_text(json.dumps(other))
    result = pytester.runpytest(*ARGS, "--groundeval-agent=baseline", "--groundeval-baseline=write-run.json",
                                "--groundeval-fail-on-regression")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*a run record of the write task; this run is extraction*"])
