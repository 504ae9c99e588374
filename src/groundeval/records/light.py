"""Light copies of case records: what the end of a run reads, kept in memory while the whole records wait on disk.

A run's controlling process gathers every case record, and the end of the run (the aggregate and
its intervals, counterfactual sensitivity, grounding figures, the terminal and Markdown summaries,
junit's suite properties, the regression gate) reads them all at once. Whole records are large (a
case's conversation holds its prompt: about 40 KB for an extraction case), so a 50,000-case run
cannot hold them; the whole record goes to the partial file as the case ends
(``records.run_writer``) and is read back from there when the run record is written, while the
session keeps the light copy made here.

A light copy drops what none of those readers reads: the conversation, the raw answer, the truth,
an error's traceback, a tool call's arguments and result (the tool's name stays:
``records.grounding`` reads it), every ``details`` key but ``GROUNDING_DETAIL_KEYS`` (read by
``records.grounding`` and ``reporting.summary_md``), every ``meta`` key but ``META_KEYS`` (read by
``records.sensitivity``), the prompt's and the raw answer's SHA-256, and every line of ``message``
but the first, except in a partial case (the terminal summary prints its lines) and a case that
wrote to the FHIR sandbox (``records.fhir_figures`` looks for its line); ``reporting.summary_md``
and ``reporting.gate`` read the first line.
``parsed`` stays only in a counterfactual run (``records.sensitivity`` reads each side's answer).
Outside a counterfactual run ``started_at`` goes too (``records.sensitivity`` reads it for the
twins). An empty ``details``, ``meta``, ``usage``, ``agent_meta`` or ``capped`` is one dict shared
by every light copy (readers never change a record). A reader of the end of a run that needs another
field must add it here; tests/records/test_light.py builds every end-of-run output from light and
from whole records and compares them.
"""

from __future__ import annotations

import sys
from typing import Any

from groundeval.records.run_record import CaseRecord

__all__ = ["GROUNDING_DETAIL_KEYS", "META_KEYS", "light_copy"]

GROUNDING_DETAIL_KEYS = ("reasoned_not_looked_up", "missed_lookups")
"""``CaseRecord.details`` keys read at the end of a run."""
META_KEYS = ("counterfactual", "subject")
"""``CaseRecord.meta`` keys read at the end of a run (``records.sensitivity``)."""


def light_copy(record: CaseRecord, keep_parsed: bool = False) -> CaseRecord:
    """``record`` without the fields the end of a run never reads (see the module docstring).

    Args:
        record: A whole case record.
        keep_parsed: Keep the parsed answer (a counterfactual run's sensitivity reads it).

    Returns:
        A new ``CaseRecord``; the fields kept are the same objects as ``record``'s.
    """
    update: dict[str, Any] = {"conversation": None, "raw_output": None, "truth": None,
                              "prompt_sha256": None, "raw_output_sha256": None,
                              "details": _kept(record.details, GROUNDING_DETAIL_KEYS),
                              "meta": _kept(record.meta, META_KEYS)}
    if "\n" in record.message and record.outcome != "partial" and not record.metrics.get("fhir_writes"):
        update["message"] = record.message.partition("\n")[0]
    for name in ("usage", "agent_meta", "capped"):  # empty in most cases: the one shared empty dict
        if not getattr(record, name):
            update[name] = _EMPTY
    if not keep_parsed:
        update["parsed"] = None
        update["started_at"] = None  # read only for a counterfactual twin's subject (records.sensitivity)
    if record.trace:
        update["trace"] = [{"tool": step.get("tool")} for step in record.trace]
    if record.error is not None and record.error.traceback is not None:
        update["error"] = record.error.model_copy(update={"traceback": None})
    values = {**record.__dict__, **update}
    for name in _SHARED_TEXT:  # the same few values in every case of a run: one string each
        if isinstance(values[name], str):
            values[name] = sys.intern(values[name])
    # every field's name, one set for every light copy (a copy of a record's own set is 2 KB a case)
    return CaseRecord.model_construct(_fields_set=_ALL_FIELDS, **values)


def _kept(values: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The entries of ``values`` under ``keys``; the one shared empty dict when there are none."""
    kept = {k: values[k] for k in keys if k in values}
    return kept or _EMPTY


_EMPTY: dict[str, Any] = {}
"""The empty dicts of every light copy (never changed: readers only read)."""
_ALL_FIELDS: set[str] = set(CaseRecord.model_fields)
"""``__pydantic_fields_set__`` of every light copy: the names of all fields (so an update adds none)."""
_SHARED_TEXT = ("run_id", "task", "agent", "outcome", "model", "worker")
