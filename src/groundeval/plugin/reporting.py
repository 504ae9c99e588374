"""How eval items appear in pytest's reports: the record on the report, status words, redaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from groundeval.plugin.items import EvalItem, explains_itself
from groundeval.records.outcomes import OUTCOMES
from groundeval.redaction import clean_text

__all__ = ["ReportHooks"]


class ReportHooks:
    """Registered with the session while a task is active (every process)."""

    def __init__(self) -> None:
        self._restore_output: Callable[[], None] | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Keep what agent calls made ahead print for their own cases (``plugin.thread_output``)."""
        from groundeval.plugin.thread_output import install

        self._restore_output = install(session.config)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Put pytest's capture streams back as they were."""
        if self._restore_output is not None:
            self._restore_output()
            self._restore_output = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """Attach the case record to the report that decides the case; redact what the report shows.

        The record travels on the report (as JSON-safe data) so that under pytest-xdist the
        controller receives it with the report; captured output (stdout, stderr, log) and the
        failure text are cleaned by the one output rule (``groundeval.redaction``).
        """
        report = yield
        if not isinstance(item, EvalItem):
            return report
        record = item.record
        if call.when == "setup" and report.failed and record is not None:
            raised = call.excinfo.value if call.excinfo is not None else None
            if explains_itself(record, raised):
                # its message, not the frames that raised it (``EvalItem._repr_failure_py`` did not build them)
                report.longrepr = record.message or record.outcome
            elif record.outcome == "harness_error":
                report.longrepr = f"{report.longrepr}\n\nharness_error: a bug in groundeval or the task's code"
        if report.longrepr is not None:
            text = str(report.longrepr)
            if clean_text(text) != text:
                report.longrepr = clean_text(text)
        report.sections = [(title, clean_text(content)) for title, content in report.sections]
        deciding = call.when == "call" or (call.when == "setup" and report.failed)
        if item.record is not None and not item.record_sent and deciding:
            report.groundeval = item.record.model_dump(mode="json")
            item.record_sent = True
            item.record = None  # shipped: the item (kept by pytest to the end) no longer holds it
        return report

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        """``partial`` (letter P) for partial credit; outcome names for no-answer failures and errors."""
        record = getattr(report, "groundeval", None)
        if not isinstance(record, dict):
            return None
        outcome = str(record.get("outcome"))
        if report.when == "call" and outcome == "partial":
            return "partial", "P", ("PARTIAL", {"yellow": True})
        if report.when == "call" and report.failed and outcome in OUTCOMES and outcome != "failed":
            return "failed", "F", (outcome.upper(), {"red": True})
        if report.when == "setup" and report.failed and outcome in OUTCOMES:
            return "error", "E", (outcome.upper(), {"red": True})
        return None
