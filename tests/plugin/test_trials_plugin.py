"""Repeated trials through the plugin: the summary, the run record, junit and the exit status at a min pass rate."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from .conftest import run_records

PICK = ("Liz_Conn", "Garrett_Thompson")

# A scripted agent whose answer depends on the trial: the baseline's correct answer, except on
# the trials listed in FAIL_TRIALS (case prefix -> trial indices), where it answers "[]" (a wrong,
# empty list: both picked patients have active medications).
AGENT_MODULE = '''
import os

from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.testing import ScriptedAgent

BASE = BaselineExtractionAgent()
FAIL_TRIALS = {name: {int(i) for i in spec.split(",") if i}
               for name, _, spec in (item.partition("=") for item in os.environ.get("FAIL_TRIALS", "").split(";"))
               if name}


def answer(request):
    prefix = next((p for p in FAIL_TRIALS if request.case_id.startswith(p)), None)
    if prefix is not None and request.trial in FAIL_TRIALS[prefix]:
        return "[]"
    return BASE.run(request).text


agent = ScriptedAgent(answer)
'''


@pytest.fixture
def trials_dir(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    data = copy_fixtures(pytester.path / "data", PICK)
    pytester.makepyfile(trial_agent=AGENT_MODULE)
    pytester.syspathinsert()
    return data


def _args(*extra: str) -> list[str]:
    return ["--groundeval-task=extraction", "--groundeval-agent=trial_agent:agent", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", *extra]


def _suite(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    return {str(p.get("name")): str(p.get("value")) for p in suite.iter("property") if p.get("name")}


def test_k1_summary_and_junit_carry_the_intervals(pytester: pytest.Pytester, trials_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_TRIALS", "Liz_Conn=0")
    result = pytester.runpytest(*_args("--junitxml=out.xml"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["pass rate: 0.500 (1/2)*",
                                 "95% intervals (Wilson score over 2 cases): pass_rate [[]0.095, 0.905[]]*"])
    result.stdout.no_fnmatch_line("trials: *")
    agg = run_records(pytester.path)[0]["aggregate"]
    assert agg["trials"]["k"] == 1 and agg["trials"]["pass_k"][0]["pass_at_k"] == agg["pass_rate"] == 0.5
    suite = _suite(pytester.path / "out.xml")
    assert suite["trials"] == "1" and float(suite["pass_at_1"]) == 0.5 and suite["pass_rate_ci_low"] == "0.094531"
    assert suite["pass_rate_ci_method"] == "wilson"


def test_min_pass_rate_rejects_values_outside_0_1(pytester: pytest.Pytester, trials_dir: Path) -> None:
    for bad in ("0", "1.5"):
        result = pytester.runpytest(*_args(f"--groundeval-min-pass-rate={bad}"))
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*--groundeval-min-pass-rate='{bad}': must be greater than 0 and at most 1*"])


@pytest.mark.parametrize(("fail", "rate", "ret", "verdicts"), [
    # Liz fails one trial of three: 2/3 >= 0.6, so every case meets R and the run exits 0
    ("Liz_Conn=2", "0.6", pytest.ExitCode.OK, "2/2"),
    # Liz fails two of three: 1/3 < 0.6
    ("Liz_Conn=1,2", "0.6", pytest.ExitCode.TESTS_FAILED, "1/2  below: Liz_Conn* (1/3)"),
    # no min pass rate: every failing trial fails the run
    ("Liz_Conn=2", None, pytest.ExitCode.TESTS_FAILED, "1/2  below: Liz_Conn* (2/3)"),
])
def test_trials_and_min_pass_rate_decide_the_exit_status(
    pytester: pytest.Pytester, trials_dir: Path, monkeypatch: pytest.MonkeyPatch,
    fail: str, rate: str | None, ret: pytest.ExitCode, verdicts: str,
) -> None:
    monkeypatch.setenv("FAIL_TRIALS", fail)
    extra = ["--groundeval-trials=3", *([f"--groundeval-min-pass-rate={rate}"] if rate else [])]
    result = pytester.runpytest(*_args(*extra, "-rf"))
    assert result.ret == ret, result.stdout.str()[-2000:]
    failed = fail.partition("=")[2].count(",") + 1
    assert result.parseoutcomes() == {"passed": 6 - failed, "failed": failed}  # each trial shows its own outcome
    result.stdout.fnmatch_lines(["FAILED groundeval/extraction::Liz_Conn*[[]trial-2[]]*"])
    result.stdout.fnmatch_lines([
        "trials: 3 per case, 2 cases  pass@1: *  pass@3: 1.000*  pass^3: *",
        f"cases passing ({'at least ' + rate + ' of' if rate else 'all'} their counted trials): {verdicts}",
    ])
    record = run_records(pytester.path)[0]
    stats = record["aggregate"]["trials"]
    assert stats["k"] == 3 and stats["min_pass_rate"] == (float(rate) if rate else None)
    assert record["exit_status"] == int(ret)
    liz = next(c for c in stats["per_case"] if c["case_id"].startswith("Liz_Conn"))
    assert (liz["passes"], liz["counted"]) == (3 - failed, 3)
    assert json.dumps(stats["intervals"]["pass_rate"]["value"]) == json.dumps(record["aggregate"]["pass_rate"])


def test_under_xdist_the_controller_applies_the_min_pass_rate(
    xdist_trials: tuple[Path, dict[str, pytest.RunResult]],
) -> None:
    """The shared ``-n 2`` trials run (``shared_runs.make_trials_run``): five cases, Liz_Conn fails one trial of three."""
    run, results = xdist_trials
    result = results["n2"]
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert result.parseoutcomes() == {"passed": 14, "failed": 1}
    result.stdout.fnmatch_lines(["cases passing (at least 0.6 of their counted trials): 5/5"])
    (record,) = run_records(run)
    assert record["exit_status"] == 0 and {c["worker"] for c in record["cases"]} == {"gw0", "gw1"}
