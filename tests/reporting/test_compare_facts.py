"""Text in a run's aggregate is a fact of the run, not a figure to subtract."""

from __future__ import annotations

from groundeval.records.run_record import RunRecord
from groundeval.reporting import compare_runs
from tests._records import case, run


def _with(record: RunRecord, **metrics: object) -> RunRecord:
    agg = record.aggregate.model_copy(update={"metrics": {**record.aggregate.metrics, **metrics}})
    return record.model_copy(update={"aggregate": agg})


def test_text_and_figures_neither_run_has_are_not_rows_of_the_figure_table() -> None:
    facts = {"judge": "baseline", "judge_reliability": "calibrated (kappa 0.97)", "judge_temperature": None}
    a = _with(run([case("c1"), case("c2", "partial", f1=0.5)], run_id="A"), judge_kappa=0.97, **facts)
    b = _with(run([case("c1", run_id="B"), case("c2", run_id="B")], run_id="B"), judge_kappa=0.97, **facts)
    names = [f.name for f in compare_runs(a, b).figures]
    assert {"pass_rate", "macro_f1", "judge_kappa"} <= set(names)  # numbers stay, with or without a change
    assert not set(names) & set(facts), names
