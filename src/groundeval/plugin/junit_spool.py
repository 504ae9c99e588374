"""Keep each finished ``<testcase>`` of the junit file on disk, not in memory, until pytest writes the file.

pytest's junitxml (``LogXML``) builds each test's ``<testcase>`` element when the test ends and
keeps it until the session ends, then assembles every element into one tree and serialises the
tree in one string: about 10 KB a groundeval case (two dozen properties each), 500 MB at 50,000
cases, and as much again while the file is written. This plugin, registered on the controlling
process when ``--junitxml`` is given, serialises each finished groundeval ``<testcase>`` as it is
finalized into a spool file (a temporary file) and leaves in its place an empty placeholder
element; once ``LogXML`` has written its file, the placeholders are replaced by the spooled text,
streamed, so the file is byte for byte what pytest writes (``ElementTree`` serialises a child the
same alone as in its tree; tests/plugin/test_junit_spool.py compares the two). Tests that are not
groundeval cases, and collection errors, are left to pytest.

``LogXML`` has no public hook for this: ``finalize`` (an instance method it calls for each test's
teardown report) is wrapped on the instance (FRICTION.md, "pytest's junitxml").
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import IO, Any

import pytest

__all__ = ["JunitSpool"]

_TAG = "groundeval-junit-spool"
_PLACEHOLDER = re.compile(rb'<groundeval-junit-spool i="(\d+)" />')
_OURS = "groundeval/"


class JunitSpool:
    """Registered as ``groundeval-junit-spool`` on the controlling process of a run with ``--junitxml``."""

    def __init__(self) -> None:
        self._spool: IO[bytes] | None = None
        self._spans: list[tuple[int, int]] = []
        self._xml: Any = None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Wrap junit's ``LogXML.finalize`` (when junit is on)."""
        from _pytest.junitxml import xml_key  # the LogXML object; pytest has no public accessor

        xml = session.config.stash.get(xml_key, None)
        if xml is None or not callable(getattr(xml, "finalize", None)):
            return
        self._xml = xml
        self._spool = tempfile.TemporaryFile(prefix="groundeval-junit-")  # noqa: SIM115 - closed at the end
        original = xml.finalize

        def finalize(report: Any) -> None:
            reporter = xml.node_reporters.get((report.id, getattr(report, "node", None)))
            original(report)
            if reporter is None or self._spool is None or not str(report.nodeid).startswith(_OURS):
                return
            data = ET.tostring(reporter.to_xml(), encoding="unicode").encode("utf-8")
            self._spans.append((self._spool.tell(), len(data)))
            self._spool.write(data)
            index = str(len(self._spans) - 1)
            reporter.to_xml = lambda: ET.Element(_TAG, i=index)  # type: ignore[method-assign]

        xml.finalize = finalize  # type: ignore[method-assign]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """After ``LogXML`` wrote its file: put each spooled ``<testcase>`` in its placeholder's place."""
        spool, xml = self._spool, self._xml
        if spool is None or xml is None:
            return
        self._spool = None
        try:
            if self._spans:
                _fill(Path(xml.logfile), spool, self._spans)
        except OSError as exc:
            warnings.warn(f"groundeval: the junit file {xml.logfile} could not be completed: {exc}", stacklevel=1)
        finally:
            spool.close()
            self._spans = []


def _fill(path: Path, spool: IO[bytes], spans: list[tuple[int, int]]) -> None:
    """Rewrite ``path`` with each placeholder replaced by its spooled text, through a temporary file.

    Raises:
        OSError: The file could not be read or written.
    """
    skeleton = path.read_bytes()  # the placeholders and everything pytest wrote around them: small
    tmp = path.with_name(path.name + ".groundeval-tmp")
    try:
        with tmp.open("wb") as out:
            start = 0
            for found in _PLACEHOLDER.finditer(skeleton):
                out.write(skeleton[start:found.start()])
                offset, length = spans[int(found.group(1))]
                spool.seek(offset)
                out.write(spool.read(length))
                start = found.end()
            out.write(skeleton[start:])
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
