"""Read the junit XML file of a groundeval run back, for tests and dashboards of your own."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["junit_cases"]


def junit_cases(path: str | Path) -> dict[str, dict[str, str]]:
    """Each testcase's properties, keyed by the testcase name (the case id, or ``<id>[trial-i]``).

    Returns:
        ``{name: {property: value, ..., "_result": "passed" | "failure" | "error" | "skipped"}}``;
        values are the strings junit holds (booleans as ``true``/``false``, n/a as ``""``).

    Raises:
        OSError: The file cannot be read.
        xml.etree.ElementTree.ParseError: It is not XML.
    """
    cases: dict[str, dict[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        props = {str(p.get("name")): str(p.get("value")) for p in case.iter("property")}
        props["_result"] = next((t for t in ("failure", "error", "skipped") if case.find(t) is not None), "passed")
        cases[str(case.get("name"))] = props
    return cases
