"""A rule-based agent's run costs 0 and says it made no model call (not "cost unknown")."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run_records


def test_a_baseline_run_records_no_model_calls_and_zero_cost(pytester: pytest.Pytester, eval_dir: Path) -> None:
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=baseline", "--groundeval-data-dir=data",
        "-p", "no:cacheprovider",
    )
    result.stdout.fnmatch_lines(["usage: no model calls (cost 0 USD)"])
    result.stdout.no_fnmatch_line("*unknown*")
    (record,) = run_records(pytester.path)
    assert record["aggregate"]["usage"] == {"model_calls": 0, "cost_usd": 0.0}
    assert all(case["usage"] == {"model_calls": 0, "cost_usd": 0.0} for case in record["cases"])
