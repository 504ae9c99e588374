"""Drop what pytest keeps of a finished case that no one reads again: its junit properties.

pytest keeps every item and every report to the end of the session. A case's junit properties
(``item.user_properties``, about 25 pairs, 1.3 KB a case) are read once, when junit's
``LogXML`` finalizes the case's ``<testcase>`` on its teardown report; afterwards they are dead
weight, 65 MB at 50,000 cases. This plugin (registered on the controlling process) empties them
once junit has read them: after the item's whole protocol in a serial run (the item and its three
reports share one list), and after the teardown report is logged on the pytest-xdist controller
(each report there has its own copy; setup and call reports' properties are never read there).
Groundeval's own items only; the junit file is the same (tests/plugin/test_scale_outputs.py).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

__all__ = ["ReportTrim"]

_OURS = "groundeval/"


class ReportTrim:
    """Registered as ``groundeval-report-trim`` on the controlling process of a groundeval run."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
        """A serial run: after the item's reports are logged (junit has its properties), empty the shared list."""
        try:
            return (yield)
        finally:
            if item.nodeid.startswith(_OURS):
                item.user_properties.clear()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The xdist controller: a report's own copy, once junit's ``LogXML`` (which runs before) has read it."""
        if getattr(report, "node", None) is not None and report.nodeid.startswith(_OURS):
            report.user_properties = []
