"""One junit XML file from the junit files of a split run's shards (``groundeval merge --junitxml``).

Every shard's testcases are kept as pytest wrote them (messages, captured output, properties), in
shard order, with the ``run_id`` property set to the merged run's; the ``<testsuite>`` counts are
the sums, its ``time`` the longest shard's, and its properties are the merged record's
(``groundeval.plugin.junit.suite_properties``), as one run of every case would write them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groundeval.records.run_record import RunRecord

__all__ = ["merge_junit"]

_COUNTS = ("tests", "failures", "errors", "skipped")


def merge_junit(shard_files: Sequence[Path], record: RunRecord) -> str:
    """The merged junit XML text.

    Args:
        shard_files: Each shard's junit file (pytest's ``--junitxml``), in shard order.
        record: The merged run record (``groundeval.records.merge.merge_records``).

    Raises:
        OSError: A file cannot be read.
        ValueError: A file is not junit XML (the message names it).
    """
    from groundeval.plugin.junit import suite_properties

    merged = ET.Element("testsuite", {"name": "pytest"})
    props = ET.SubElement(merged, "properties")
    for name, value in suite_properties(record):
        ET.SubElement(props, "property", {"name": name, "value": str(value)})
    counts = dict.fromkeys(_COUNTS, 0)
    times: list[float] = []
    stamps: list[str] = []
    for path in shard_files:
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as exc:
            raise ValueError(f"{path}: not a junit XML file ({exc}); give each shard's --junitxml file") from None
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        if not suites:
            raise ValueError(f"{path}: no <testsuite> in it; give each shard's --junitxml file")
        for suite in suites:
            for key in _COUNTS:
                counts[key] += int(suite.get(key) or 0)
            times.append(float(suite.get("time") or 0))
            stamps += [s] if (s := suite.get("timestamp")) else []
            for case in suite.iter("testcase"):
                for prop in case.iter("property"):
                    if prop.get("name") == "run_id":
                        prop.set("value", record.run_id)
                merged.append(case)
    for key, value in counts.items():
        merged.set(key, str(value))
    merged.set("time", f"{max(times, default=0.0):.3f}")
    if stamps:
        merged.set("timestamp", min(stamps))
    top = ET.Element("testsuites")
    top.append(merged)
    ET.indent(top)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(top, encoding="unicode") + "\n"
