"""Comparing runs, the regression gate, Markdown summaries and the HTML report.

Everything here reads finished run records (``groundeval.records.run_record.RunRecord``); nothing
recomputes a score. scipy and jinja2 are imported only when an interval or a report is made.
"""

from __future__ import annotations

from groundeval.reporting.compare import (
    CaseGate,
    Comparison,
    GateResult,
    case_values,
    compare_runs,
    load_record,
    regressions,
)
from groundeval.reporting.gate import BaselineGate
from groundeval.reporting.summary_md import comparison_markdown, summary_markdown, write_summary_markdown

__all__ = [
    "BaselineGate",
    "CaseGate",
    "Comparison",
    "GateResult",
    "case_values",
    "compare_runs",
    "comparison_markdown",
    "load_record",
    "regressions",
    "summary_markdown",
    "write_summary_markdown",
]
