"""Case sets that run only over FHIR REST: a directory whose ``MANIFEST.json`` says ``"record_access": "fhir"``.

Whole records (``fixtures/full-records``, made by ``scripts/make_full_records.py``) are 20,000 to
700,000 tokens of FHIR JSON: pasted into a prompt they would be refused as too long or cost a
fortune, and that is not how an agent reads a record of that size. Their directory's manifest
declares it, a task's ``load_case`` copies the declaration into ``Case.meta["record_access"]``
(``record_access_of``), and the plugin skips such a case, with ``FHIR_ONLY_REASON``, unless the run
serves records over FHIR (``--groundeval-fhir``). Standard library only.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

__all__ = ["FHIR_ONLY_REASON", "record_access_of", "serves_records_over_fhir"]

FHIR_ONLY_REASON = (
    "a whole record (its directory's MANIFEST.json says record_access: fhir): too large for a prompt, it runs only "
    "with --groundeval-fhir=sandbox or --groundeval-fhir=URL, where the agent queries it (e.g. "
    "--groundeval-agent=langgraph-rest or baseline-rest)"
)
"""The skip reason of such a case in a run without ``--groundeval-fhir``."""


@functools.lru_cache(maxsize=64)
def _declared(directory: Path, mtime_ns: int) -> str | None:
    del mtime_ns  # part of the cache key only: a rewritten manifest is read again
    try:
        data = json.loads((directory / "MANIFEST.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("record_access") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def record_access_of(case_file: Path) -> str | None:
    """How the case set of ``case_file`` must be read: ``"fhir"``, or None when its manifest says nothing.

    Reads ``MANIFEST.json`` beside the file (once per directory and manifest version); a missing or
    unreadable manifest is None (an ordinary case set).
    """
    manifest = case_file.parent / "MANIFEST.json"
    try:
        mtime = manifest.stat().st_mtime_ns
    except OSError:
        return None
    return _declared(case_file.parent, mtime)


def serves_records_over_fhir(task: object) -> bool:
    """True when the run's task is wrapped to serve its records over FHIR REST (``tasks.fhir_mode.FhirModeTask``)."""
    from groundeval.tasks.fhir_mode import FhirModeTask

    return isinstance(task, FhirModeTask)
