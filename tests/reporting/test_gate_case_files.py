"""A case file broken in a pull request fails the gate: lost whatever its SHA, unreadable files, collection errors.

Run records are built in the test (``_records``); one in-process plugin run checks
``--groundeval-fail-on-regression`` on a case file turned into invalid JSON.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundeval.cli import main as cli_main
from groundeval.records.run_record import RunRecord
from groundeval.reporting import BaselineGate, compare_runs
from groundeval.reporting.html import render_report
from groundeval.reporting.render import comparison_dict, comparison_text
from groundeval.reporting.summary_md import comparison_markdown
from tests._paths import REPO
from tests._records import case, run

LIZ = "Liz_Conn_27c911c6"
BROKEN = {"nodeid": f"groundeval/extraction::{LIZ}.json",
          "message": f"groundeval: data/{LIZ}.json: not valid JSON: Expecting value: line 1 column 1 (char 0)\nmore"}
FIXTURES = REPO / "fixtures" / "extraction"


def _baseline() -> RunRecord:
    return run([case(LIZ, run_id="A"), case("Max_Kris", run_id="A")], run_id="A")


def _write(tmp_path: Path, name: str, record: RunRecord) -> Path:
    path = tmp_path / name
    path.write_text(record.model_dump_json(), encoding="utf-8")
    return path


def test_a_file_now_invalid_json_is_lost_and_its_collection_error_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    current = run([case("Max_Kris", run_id="B")], run_id="B", collection_errors=[BROKEN])  # complete: true
    comp = compare_runs(_baseline(), current)
    gate = comp.gate
    assert comp.only_a == []  # not "only in A": its file could not be read
    (lost,) = gate.lost
    assert (lost.case_id, lost.outcome, lost.collection_error) == (LIZ, "collection_error", BROKEN["nodeid"])
    assert lost.text() == (f"{LIZ}: passed 1/1 -> no verdict (collection_error: its case file could not be read "
                           f"({BROKEN['nodeid']}))")
    unreadable = f"{BROKEN['nodeid']}: groundeval: data/{LIZ}.json: not valid JSON: Expecting value: line 1 column 1 (char 0)"
    assert gate.collection_errors == (unreadable,)
    assert gate.failed and gate.reasons() == [
        "1 lost (a verdict before -> none now: collection_error 1)", "1 case file(s) could not be read (collection errors)",
    ]
    assert f"UNREADABLE {unreadable}" in gate.summary_lines()
    text = comparison_text(comp)
    assert f"  LOST      {lost.text()}" in text and f"  UNREADABLE {unreadable}" in text and "only in A Liz" not in text
    assert comparison_dict(comp)["collection_errors"] == [unreadable]
    assert "could not be read (collection errors)" in comparison_markdown(comp)
    html = render_report(_baseline(), current)
    assert 'id="unreadable"' in html and f"<code>{BROKEN['nodeid']}: groundeval: data/{LIZ}.json" in html
    pa, pb = _write(tmp_path, "a.json", _baseline()), _write(tmp_path, "b.json", current)
    assert cli_main(["compare", str(pa), str(pb), "--fail-on-regression"]) == 1
    assert cli_main(["compare", str(pa), str(pb)]) == 0  # without the flag it only reports
    capsys.readouterr()


def test_any_collection_error_fails_the_gate_even_of_a_file_the_baseline_never_had() -> None:
    new_file = {"nodeid": "groundeval/extraction::New_Patient.json", "message": "groundeval: bad"}
    current = run([case(LIZ, run_id="B"), case("Max_Kris", run_id="B")], run_id="B", collection_errors=[new_file])
    gate = compare_runs(_baseline(), current).gate
    assert not gate.lost and not gate.regressed and gate.failed
    assert gate.collection_errors == ("groundeval/extraction::New_Patient.json: groundeval: bad",)
    assert compare_runs(_baseline(), run([case(LIZ, run_id="B"), case("Max_Kris", run_id="B")], run_id="B")).gate.failed \
        is False


def test_a_changed_file_without_a_verdict_now_is_lost_not_not_compared() -> None:
    current = run([case(LIZ, "invalid_case", run_id="B", sha="edited", counted=False, answered=False, metrics={}),
                   case("Max_Kris", run_id="B", sha="edited-too")], run_id="B")
    comp = compare_runs(_baseline(), current)
    gate = comp.gate
    (lost,) = gate.lost
    assert (lost.case_id, lost.outcome, lost.file_changed) == (LIZ, "invalid_case", True)
    assert lost.text() == f"{LIZ}: passed 1/1 -> no verdict (invalid_case; the case file changed)"
    assert gate.not_compared == {"Max_Kris": "the case file changed (fixture SHA-256 differs)"}  # counted both: as before
    assert gate.failed and "2 case file(s) changed" in " ".join(comp.warnings)
    # while the run is in progress (junit lost=true) the changed file does not hide it either
    baseline_gate = BaselineGate(_baseline())
    found = baseline_gate.lost([case(LIZ, "invalid_case", run_id="B", sha="edited", counted=False)])
    assert found is not None and found.file_changed
    assert baseline_gate.verdict([case("Max_Kris", "failed", run_id="B", sha="edited-too")]) is None


def test_the_plugin_gate_fails_on_a_case_file_broken_since_the_baseline(pytester: pytest.Pytester) -> None:
    data = pytester.path / "data"
    data.mkdir()
    for prefix in ("Liz_Conn_", "Max_Kris_"):
        (src,) = FIXTURES.glob(f"{prefix}*.json")
        shutil.copy(src, data / src.name)
    common = ("--groundeval-task=extraction", "--groundeval-agent=naive", "--groundeval-data-dir=data",
              "-p", "no:randomly", "-p", "no:cacheprovider")
    first = pytester.runpytest(*common, "--groundeval-out-dir=a")
    (baseline,) = (pytester.path / "a").glob("*.json")
    assert json.loads(baseline.read_text())["collection_errors"] == [], first.stdout.str()
    (liz,) = data.glob("Liz_Conn_*.json")
    liz.write_text("{not json", encoding="utf-8")
    result = pytester.runpytest(*common, "--groundeval-out-dir=b", f"--groundeval-baseline={baseline}",
                                "--groundeval-fail-on-regression")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert f"LOST {LIZ}: passed " in out and "(collection_error: its case file could not be read" in out
    assert f"UNREADABLE groundeval/extraction::{liz.name}: " in out
    assert "regression gate FAILED" in out and "1 case file(s) could not be read" in out


def test_a_new_case_file_that_fails_its_checks_fails_the_gate_in_every_output(tmp_path: Path) -> None:
    # not in the baseline at all ("only in B"), so not lost: it fails the gate as a broken file,
    # as an unreadable one does, once per case whatever its trials
    message = "invalid_case: MedicationRequest/r1 status 'actve' is not a MedicationRequest status code (file: x)"
    bad = [case("New_Patient", "invalid_case", run_id="B", counted=False, answered=False, metrics={}, trial=t)
           .model_copy(update={"nodeid": f"groundeval/extraction::New_Patient[trial-{t}]", "message": message})
           for t in range(2)]
    current = run([case(LIZ, run_id="B"), case("Max_Kris", run_id="B"), *bad], run_id="B")
    comp = compare_runs(_baseline(), current)
    gate = comp.gate
    assert not gate.lost and not gate.regressed and gate.failed
    assert gate.invalid_cases == ("groundeval/extraction::New_Patient: " + bad[0].message,)
    assert "1 case file(s) failed their checks (invalid_case)" in gate.reasons()
    assert any(line.startswith("INVALID groundeval/extraction::New_Patient: invalid_case:") for line in gate.summary_lines())
    assert comparison_dict(comp)["invalid_cases"] == list(gate.invalid_cases)
    assert "INVALID groundeval/extraction::New_Patient" in comparison_text(comp)
    assert "failed their checks (invalid_case)" in comparison_markdown(comp)
    assert 'id="invalid"' in render_report(_baseline(), current)


def test_baseline_cases_missing_from_the_run_are_said_in_the_gate_line_not_gated() -> None:
    current = run([case(LIZ, run_id="B")], run_id="B")  # Max_Kris's file deleted, or deselected with -k
    gate = compare_runs(_baseline(), current).gate
    assert gate.only_in_baseline == 1 and not gate.failed
    assert "only in the baseline: 1 (deleted or not selected; not gated)" in gate.summary_lines()[0]


def test_junit_suite_properties_count_the_unreadable_files() -> None:
    from groundeval.plugin.junit import suite_properties

    current = run([case("Max_Kris", run_id="B")], run_id="B", collection_errors=[BROKEN])
    assert dict(suite_properties(current))["collection_errors"] == 1
    assert dict(suite_properties(_baseline()))["collection_errors"] == 0


def test_the_report_of_one_run_lists_its_unreadable_files() -> None:
    current = run([case("Max_Kris", run_id="B")], run_id="B", collection_errors=[BROKEN])
    html = render_report(current)
    assert 'id="unreadable-1"' in html and f"<code>{BROKEN['nodeid']}: groundeval: data/{LIZ}.json" in html
    assert 'id="unreadable-1"' not in render_report(_baseline())


def test_the_pair_reports_comparison_says_its_verdicts_are_not_gated() -> None:
    """The HTML comparison section itself, not only each run's own section, says the regressions gate nothing."""
    from groundeval.records.scope import UNGATED_FACT

    why = "the case verdicts rest on the judge baseline: judge not calibrated"
    a = run([case(LIZ, run_id="A"), case("Max_Kris", run_id="A")], run_id="A", task_facts={UNGATED_FACT: why})
    b = run([case(LIZ, "failed", run_id="B"), case("Max_Kris", run_id="B")], run_id="B", task_facts={UNGATED_FACT: why})
    html = render_report(a, b)
    section = html[html.index('<section id="comparison">'):html.index("</section>", html.index('id="comparison"'))]
    assert 'id="comparison-ungated"' in section and why in section
    assert 'id="gate-failed"' not in section
    plain = render_report(_baseline(), run([case(LIZ, "failed", run_id="B"), case("Max_Kris", run_id="B")], run_id="B"))
    assert 'id="comparison-ungated"' not in plain


def test_a_figure_with_no_value_is_shown_as_a_dash_in_the_html_report() -> None:
    record = _baseline()
    record.aggregate.metrics["judge_model"] = None
    html = render_report(record)
    row = html[html.index(">judge_model<"):][:200]
    assert ">-<" in row and "None" not in row
