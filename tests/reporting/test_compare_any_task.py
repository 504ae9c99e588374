"""Comparing runs and reports of any task: dimensions come from the run record, not from names.

Two real (offline, in-process) runs of the built-in ``reconcile`` task and of the outside example
task (``examples/conditions_task``), compared and rendered; and records written before
``metric_names`` existed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundeval.records.run_record import RunRecord
from groundeval.reporting import BaselineGate, compare_runs, comparison_markdown, load_record, summary_markdown
from groundeval.reporting.cases import dimensions
from groundeval.reporting.html import render_report, score_columns
from groundeval.reporting.render import comparison_dict, comparison_text
from groundeval.tasks.reconcile.scorer import METRIC_NAMES
from tests._paths import REPO
from tests._records import case, run

ROOT = REPO
CONDITIONS = ROOT / "examples" / "conditions_task"


def _run(pytester: pytest.Pytester, out: Path, *args: str) -> RunRecord:
    pytester.runpytest(*args, f"--groundeval-out-dir={out}", "-q", "-p", "no:randomly", "-p", "no:cacheprovider")
    (path,) = out.glob("*.json")
    return load_record(path)


def _without_metric_names(record: RunRecord, tmp_path: Path) -> RunRecord:
    """The record as an older groundeval wrote it: no ``metric_names``/``metric_directions`` keys."""
    data = json.loads(record.model_dump_json())
    del data["metric_names"], data["metric_directions"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_record(path)


def test_two_reconcile_runs_compare_on_the_tasks_own_metrics(pytester: pytest.Pytester, tmp_path: Path) -> None:
    task = ("--groundeval-task=reconcile", "--groundeval-limit=6")
    base = _run(pytester, tmp_path / "base", *task, "--groundeval-agent=baseline-reconcile")
    naive = _run(pytester, tmp_path / "naive", *task, "--groundeval-agent=naive-reconcile")
    assert base.metric_names == list(METRIC_NAMES) and base.metric_directions["high_alert_missed"] == "lower"

    comp = compare_runs(base, naive)
    assert comp.dimensions[:3] == ("passed", "answered", "discrepancy_precision")
    assert {"discrepancy_f1", "recall_omission", "matched_f1", "high_alert_missed"} <= set(comp.dimensions)
    changed = [c for c in comp.cases if "discrepancy_f1" in c.changes]
    for c in changed:  # higher is better
        before, after = c.changes["discrepancy_f1"]
        assert ("discrepancy_f1" in c.regressed_dims()) is (after < before)
        assert ("discrepancy_f1" in c.improved_dims()) is (after > before)
    worse = [c for c in changed if c.changes["discrepancy_f1"][1] < c.changes["discrepancy_f1"][0]]
    assert worse, "the naive control names no discrepancy: its discrepancy F1 drops"
    missed = [c for c in comp.cases if "high_alert_missed" in c.changes]
    assert missed and all(c.changes["high_alert_missed"] == (0.0, 1.0) for c in missed)
    assert all("high_alert_missed" in c.regressed_dims() for c in missed)  # lower is better: True is worse
    # the headline figure of the per-case metric carries its paired interval
    fig = next(f for f in comp.figures if f.name == "macro_discrepancy_f1")
    assert fig.diff is not None and fig.diff < 0 and fig.interval is not None and fig.interval.n == len(comp.cases)
    text = comparison_text(comp)
    assert f"discrepancy_f1 {worse[0].changes['discrepancy_f1'][0]:.3f}->" in text
    assert "discrepancy_f1" in comparison_markdown(comp)
    gate = BaselineGate(base)  # the plugin's per-case gate, from the record
    regressed = [c for c in comp.cases if c.verdict == "regressed"]
    assert regressed and all(gate.regressed([t for t in naive.cases if t.case_id == c.case_id]) for c in regressed)
    data = comparison_dict(comp)
    assert "discrepancy_f1" in data["dimensions"] and data["directions"]["fp"] == "lower"
    assert any("discrepancy_f1" in c["worse"] for c in data["cases"])

    md = summary_markdown(naive)
    assert "| macro_discrepancy_f1 | " in md and "| macro_discrepancy_f1 | - | |" not in md
    line = next(x for x in md.splitlines() if x.startswith("| macro_discrepancy_f1 |"))
    assert line.rstrip(" |").endswith(")") and "] (" in line  # an interval over the cases' discrepancy_f1, named

    page = render_report(naive)
    columns = score_columns(naive)
    assert columns[:3] == ["discrepancy_precision", "discrepancy_recall", "discrepancy_f1"]
    assert "high_alert_missed" in columns and "tp" not in columns  # counts stay in the record
    assert '<span class="num">discrepancy_f1</span>' in page and '<span class="num">high_alert_missed</span>' in page
    assert "<li>extra: (uncoded) allegra" in page  # the reconcile scorer's details follow the missing/extra convention

    # an older record of the same run: dimensions from the metric keys its cases carry
    old = _without_metric_names(naive, tmp_path)
    assert old.metric_names == []
    old_comp = compare_runs(base, old)
    assert [c.changes for c in old_comp.cases] == [c.changes for c in comp.cases]
    assert '<span class="num">discrepancy_f1</span>' in render_report(old)


def test_the_outside_example_task_compares_on_its_own_metric(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.syspathinsert(ROOT)
    data = pytester.path / "data"
    data.mkdir()
    for prefix in ("Beatrice_Aufderhar", "Max_Kris", "Trey_Berge"):
        (src,) = (CONDITIONS / "fixtures").glob(f"{prefix}_*.json")
        shutil.copy(src, data / src.name)
    task = ("--groundeval-task=examples.conditions_task:ConditionsTask", "--groundeval-data-dir=data")
    base = _run(pytester, tmp_path / "base", *task, "--groundeval-agent=examples.conditions_task:BaselineConditionsAgent")
    naive = _run(pytester, tmp_path / "naive", *task, "--groundeval-agent=examples.conditions_task:NaiveConditionsAgent")
    assert base.task == "conditions" and base.metric_directions == {"fp": "lower", "fn": "lower", "duplicates": "lower"}

    comp = compare_runs(base, naive)
    assert "fp" in comp.dimensions
    changed = [c for c in comp.cases if "fp" in c.changes]
    assert changed, "the naive control lists conditions that are no longer active"
    for c in changed:
        assert c.changes["fp"][1] > c.changes["fp"][0]
        assert {"precision", "fp"} <= set(c.regressed_dims()) and c.improved_dims() == []  # more fp is worse
    assert next(f for f in comp.figures if f.name == "macro_precision").interval is not None
    page = render_report(base, naive)
    assert '<span class="num">precision</span>' in page and '<span class="num">f1</span>' in page
    assert "<li>extra: " in page


def test_old_records_without_metric_names_still_compare() -> None:
    a = run([case("c1"), case("c2")], run_id="A")
    b = run([case("c1", run_id="B"), case("c2", "partial", run_id="B", f1=0.5)], run_id="B")
    assert a.metric_names == [] and dimensions(a) == ("passed", "answered", "precision", "recall", "f1",
                                                      "display_accuracy", "tp")
    c2 = next(c for c in compare_runs(a, b).cases if c.case_id == "c2")
    assert c2.changes == {"passed": (1.0, 0.0), "precision": (1.0, 0.5), "f1": (1.0, 0.5)}
    assert score_columns(b) == ["precision", "recall", "f1", "display_accuracy"]  # tp is a count


def test_directions_label_changes_and_none_is_neither() -> None:
    def rec(run_id: str, fp: int, dose: float) -> RunRecord:
        cases = [case("c1", "partial", run_id=run_id, task="t", metrics={"f1": 0.5, "fp": fp, "dose_mg": dose})]
        return run(cases, run_id=run_id, task="t", metric_names=["f1", "fp", "dose_mg"],
                   metric_directions={"fp": "lower", "dose_mg": "none"})

    (c,) = compare_runs(rec("A", 1, 10.0), rec("B", 0, 20.0)).cases
    assert c.changes == {"fp": (1.0, 0.0), "dose_mg": (10.0, 20.0)}
    assert c.improved_dims() == ["fp"] and c.regressed_dims() == []
    assert "better" in comparison_text(compare_runs(rec("A", 1, 10.0), rec("B", 0, 20.0)))
    assert score_columns(rec("A", 1, 10.0)) == ["f1"]  # an int count and a "none" value are no score columns
