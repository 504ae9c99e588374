"""The labs task through the pytest plugin: in-process runs, offline, with each report's trip to an xdist controller."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundeval.clinical.lab_thresholds import default_thresholds
from tests._paths import REPO
from tests._xdist import assert_reports_cross_to_the_controller


def _record(base: Path) -> dict[str, Any]:
    (path,) = (base / "runs").glob("*.json")
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def test_the_baseline_passes_every_packaged_case_and_the_record_says_which_prompt(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--groundeval-task=labs", "--groundeval-agent=baseline-labs", "-p", "no:cacheprovider",
                                "--groundeval-option=thresholds_in_prompt=true", "--junitxml=out.xml")
    assert result.ret == 0
    result.assert_outcomes(passed=39)
    result.stdout.fnmatch_lines(["*groundeval labs*", "agent: baseline-labs  model: -  run: *",
                                 "pass rate: 1.000 (39/39)  answer rate: 1.000*", "category_macro_f1: 1.000"])
    record = _record(pytester.path)
    assert record["settings"]["task_options"] == {"thresholds_in_prompt": True}
    assert record["task_facts"] == {"thresholds": default_thresholds().facts}
    assert record["metric_directions"]["critical_missed"] == "lower"
    crit = next(c for c in record["cases"] if c["case_id"].startswith("variant-critical-potassium--"))
    potassium = next(t for t in crit["truth"]["tests"] if t["loinc"] == "6298-4")
    assert potassium["critical"] is True and crit["metrics"]["critical_results"] == 1
    xml = (pytester.path / "out.xml").read_text()
    assert '<property name="critical_missed" value="false"' in xml
    assert '<property name="value_accuracy" value=""' in xml  # n/a: the patient with no result


def test_the_naive_control_fails_and_every_labs_metric_can_reach_an_xdist_controller(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    result = pytester.runpytest("--groundeval-task=labs", "--groundeval-agent=naive-labs", "-p", "no:cacheprovider")
    assert result.ret == 1
    record = _record(pytester.path)
    agg = record["aggregate"]
    assert agg["counts"] == {"failed": 3, "partial": 35, "passed": 1}
    assert agg["metrics"]["answers_critical_missed"] == 3 and agg["metrics"]["micro_value_accuracy"] < 0.1
    assert assert_reports_cross_to_the_controller(result, request.config) >= 39 * 3
    failed = {c["case_id"].split("--")[0] for c in record["cases"] if c["outcome"] == "failed"}
    assert failed == {"variant-critical-potassium", "variant-critical-bp", "variant-critical-bp-systolic-only"}


def test_a_hand_edited_string_value_is_an_invalid_case_not_an_older_result(pytester: pytest.Pytester) -> None:
    fixtures = REPO / "fixtures" / "labs"
    (src,) = fixtures.glob("variant-critical-potassium--*.json")
    bundle = json.loads(src.read_text())
    latest = next(e["resource"] for e in reversed(bundle["entry"])
                  if e["resource"]["resourceType"] == "Observation"
                  and e["resource"]["code"]["coding"][0]["code"] == "6298-4")
    latest["valueQuantity"]["value"] = str(latest["valueQuantity"]["value"])
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / src.name).write_text(json.dumps(bundle))
    result = pytester.runpytest("--groundeval-task=labs", "--groundeval-agent=baseline-labs",
                                "--groundeval-data-dir=data", "-p", "no:cacheprovider")
    (case,) = _record(pytester.path)["cases"]
    assert case["outcome"] == "invalid_case" and result.ret != 0
    assert f"Observation/{latest['id']} valueQuantity.value is \"" in case["message"]
    assert src.name in case["message"] and "write it without quotes" in case["message"]
