"""Drop what pytest keeps of a finished case that no one reads again: its junit properties, its empty reports.

pytest keeps every item and every report to the end of the session. A case's junit properties
(``item.user_properties``, about 25 pairs, 1.3 KB a case) are read once, when junit's
``LogXML`` finalizes the case's ``<testcase>`` on its teardown report; afterwards they are dead
weight, 65 MB at 50,000 cases. This plugin (registered on the controlling process) empties them
once junit has read them: the item's own list after the item's whole protocol, and each report's
copy once the report is logged (junit reads only the teardown report's, before this plugin's
hook; pytest copies the list into every report, and pytest-xdist's controller gets its own).
A passed setup or teardown report without captured output (two a case, about 1.5 KB each with
their keywords) is dropped from the terminal reporter's list of such reports, which pytest reads
only to show teardown output in a FAILURES block. Each report's ``keywords`` (a dict of the item's
keywords, read by plugins as the report is logged, never by pytest's summaries or junit) becomes one
shared empty dict. Once an item's protocol is over, ``forget_finished`` drops what the item itself
holds that nothing reads again (its stash entries, its case's ``meta``, pytest's cached relative
path of its case file). Groundeval's own items only; the outputs are the same
(tests/plugin/test_report_trim.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["ReportTrim", "forget_finished"]

_OURS = "groundeval/"
_NO_KEYWORDS: dict[str, Any] = {}
"""The ``keywords`` of every logged groundeval report (never changed)."""
_NO_PROPERTIES: list[tuple[str, object]] = []
"""The ``user_properties`` of every logged groundeval report (never changed: read by junit before this plugin)."""
_NO_SECTIONS: list[tuple[str, str]] = []
"""The ``sections`` of every logged groundeval report that captured nothing (never changed)."""
_NO_MATCHES: set[str] = set()
"""The ``extra_keyword_matches`` of every finished groundeval item that had none (never changed)."""
_NO_META: dict[str, Any] = {}
"""The case ``meta`` of every finished groundeval item (never changed)."""


def forget_finished(item: pytest.Item) -> None:
    """Drop what a groundeval item holds once its reports are logged, and that nothing reads again.

    pytest keeps every item to the end of the session (about 2.9 KB each at collection). Once the
    item's protocol is over: its stash's entries (pytest's skipping plugin leaves its marks' results
    there; nothing reads them after the teardown), an empty ``extra_keyword_matches`` becomes one
    shared empty set (read only by ``-k`` at collection), the case's ``meta`` (read when the case
    runs and when it is collected) one shared empty dict, and the session's cache of the case
    file's path relative to the root dir (each case file is its own entry, read once to make the
    item's ``location``, which the item keeps).
    """
    storage = getattr(item.stash, "_storage", None)  # pytest's Stash has no public clear()
    if isinstance(storage, dict):
        storage.clear()
    if not item.extra_keyword_matches:
        item.extra_keyword_matches = _NO_MATCHES
    case = getattr(item, "case", None)
    source = getattr(case, "source", None)
    if isinstance(source, Path):
        cache = getattr(item.session, "_bestrelpathcache", None)  # pytest's; no public accessor
        if isinstance(cache, dict):
            cache.pop(Path(os.path.abspath(source)), None)
    if case is not None and (getattr(case, "meta", None) or getattr(case, "data", None)):
        item.case = dataclasses.replace(case, meta=_NO_META, data={})  # type: ignore[attr-defined]


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
                forget_finished(item)

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Once junit and the terminal reporter (which run before) have the report: what they will not read again.

        The report's own copy of the properties (junit read the teardown report's). A passed setup or
        teardown report with no captured output leaves the terminal reporter's ``stats[""]``
        (pytest reads that list only for the teardown sections of a FAILURES block, and this
        report has none).
        """
        if not report.nodeid.startswith(_OURS):
            return
        report.user_properties = _NO_PROPERTIES  # each report holds its own copy (pytest copies the item's list)
        if not report.sections:
            report.sections = _NO_SECTIONS  # a list per report, empty for most
        report.keywords = _NO_KEYWORDS  # a dict per report (about 0.2 KB); nothing reads it once logged
        if report.when in ("setup", "teardown") and report.passed and not report.sections:
            terminal = self.config.pluginmanager.get_plugin("terminalreporter")
            bucket = getattr(terminal, "stats", {}).get("")
            if bucket and bucket[-1] is report:
                bucket.pop()
