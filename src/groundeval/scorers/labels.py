"""Human labels: the JSONL a calibration of a model-graded scorer against people reads.

One line per graded text per labeller (the summary task documents it in docs/tasks/summary.md,
"Human labels"; any model-graded task can use the same file):

``{"case_id", "summary_id", "labeller", "summary", "labels": {<criterion id>: "met" | "not_met" |
"contradicted"}, "verdict": "pass" | "fail", "note"?, "writer"?, "kind"?, "flaw"?, "labelled_by"?}``

* ``case_id`` names a case of the task; ``summary_id`` is unique per graded text (the
  ``summary`` field holds that text, exactly as scored), and the same text labelled by several
  labellers has the same ``summary_id``, ``case_id`` and ``summary``.
* A label says whether the criterion's **statement** is true of the text, read against the
  patient's record. The scorer's decision is binary, so labels map to it as: ``met`` is met;
  ``not_met`` and ``contradicted`` are not met (for a criterion that describes a mistake, ``met``
  means the mistake was made).
* ``verdict``: whether a clinician would sign the text as it is.
* ``kind``: what the text was written to be; a task may restrict it (``read_labels(kinds=...)``).
* ``labelled_by``: ``person`` (the default) or ``model`` (a language model instructed to label as a
  clinician). A set with any ``model`` line is recorded as ``kind: model_labels`` on its card, never
  as people's labels: its figures are shown, but a judge calibrated on it is not calibrated against
  people and leaves the verdicts ungated (``judge_card.reliability_metrics``).

**The reference labeller** (``reference``): with several labellers on one text, the one whose
labels the scorer is measured against is ``reference_labeller`` when given (texts that labeller
did not label are left out, and counted); otherwise the first labeller of that text, in file
order, who is not its ``writer`` (someone who did not write it reads it as a reader would), or the
first when all of them wrote it. The other labellers' labels of the same text give the
inter-rater agreement, the ceiling a scorer can be expected to reach.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundeval.errors import DatasetError

__all__ = ["FORMAT_DOC", "LABELS", "VERDICTS", "LabelSet", "Labelled", "read_labels", "reference"]

LABELS = ("met", "not_met", "contradicted")
"""The label a criterion takes (``met`` is the scorer's True)."""

VERDICTS = ("pass", "fail")
FORMAT_DOC = "the label file format: groundeval.scorers.labels"
"""Where an error message sends the reader for the format (a task passes its own page)."""

_REQUIRED = ("case_id", "summary_id", "labeller", "summary", "labels", "verdict")
_OPTIONAL = ("note", "writer", "kind", "flaw", "labelled_by")
LABELLED_BY = ("person", "model")
"""Who gave a line's labels: a person, or a language model instructed to label as a clinician."""


@dataclass(frozen=True, slots=True)
class Labelled:
    """One labeller's labels of one summary (one JSONL line).

    Attributes:
        case_id: The summary case the summary was written from.
        summary_id: The summary's id (shared by every labeller of it).
        labeller: Who labelled this line.
        summary: The summary text, exactly as scored.
        labels: Criterion id -> ``met``, ``not_met`` or ``contradicted``.
        verdict: ``pass`` or ``fail``.
        line: The line number in the file (1-based).
        writer: Who wrote the summary, or None.
        kind: What it was written to be (a task's kinds), or None.
        flaw: The flaw it was written with, or None.
        note: The labeller's free text, or None.
        labelled_by: ``person`` or ``model`` (``LABELLED_BY``).
    """

    case_id: str
    summary_id: str
    labeller: str
    summary: str
    labels: dict[str, str]
    verdict: str
    line: int
    writer: str | None = None
    kind: str | None = None
    flaw: str | None = None
    note: str | None = None
    labelled_by: str = "person"

    @property
    def passed(self) -> bool:
        """True when the labeller would sign the handoff (``verdict`` ``pass``)."""
        return self.verdict == "pass"


@dataclass(frozen=True, slots=True)
class LabelSet:
    """A label file, read and checked.

    Attributes:
        path: The file.
        sha256: SHA-256 of its bytes (hex).
        lines: Every labelled line, in file order.
        by_summary: summary_id -> its lines, in file order.
    """

    path: Path
    sha256: str
    lines: tuple[Labelled, ...]
    by_summary: dict[str, tuple[Labelled, ...]] = field(default_factory=dict)

    @property
    def labellers(self) -> list[str]:
        """The labellers, in order of first appearance."""
        return list(dict.fromkeys(x.labeller for x in self.lines))

    @property
    def case_ids(self) -> list[str]:
        """The cases (records) labelled, in order of first appearance."""
        return list(dict.fromkeys(x.case_id for x in self.lines))

    def facts(self) -> dict[str, Any]:
        """What a judge card records about the set: who labelled it, file name, SHA-256 and its counts.

        ``kind`` is ``human_labels`` when every line was labelled by a person, else ``model_labels``.
        """
        people = all(x.labelled_by == "person" for x in self.lines)
        return {"kind": "human_labels" if people else "model_labels",
                "labelled_by": "people" if people else (
                    "a model acting as a clinician" if all(x.labelled_by == "model" for x in self.lines)
                    else "people and a model acting as a clinician"),
                "file": self.path.name, "sha256": self.sha256,
                "summaries": len(self.by_summary), "records": len(self.case_ids), "lines": len(self.lines),
                "labellers": self.labellers,
                "doubly_labelled": sum(len({x.labeller for x in v}) > 1 for v in self.by_summary.values())}


def _fail(path: Path, line: int, message: str, doc: str) -> DatasetError:
    return DatasetError(f"{path}:{line}", f"{message} ({doc})")


def _text(path: Path, line: int, row: dict[str, Any], key: str, *, required: bool, doc: str) -> str | None:
    value = row.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, line, f"{key} is {value!r}; give a non-empty string", doc)
    return value


def _one(path: Path, number: int, raw: str, kinds: Sequence[str] | None, doc: str) -> Labelled:
    try:
        row = json.loads(raw)
    except ValueError as exc:
        raise _fail(path, number, f"not JSON ({exc}); write one JSON object per line", doc) from None
    if not isinstance(row, dict):
        raise _fail(path, number, f"a JSON {type(row).__name__}, not an object; write one object per line", doc)
    unknown = sorted(set(row) - {*_REQUIRED, *_OPTIONAL})
    if unknown:
        raise _fail(path, number, f"unknown field(s) {', '.join(unknown)}; the fields are "
                                  f"{', '.join((*_REQUIRED, *_OPTIONAL))}", doc)
    texts = {k: _text(path, number, row, k, required=True, doc=doc) for k in ("case_id", "summary_id", "labeller")}
    summary = row.get("summary")
    if not isinstance(summary, str):
        raise _fail(path, number, f"summary is {summary!r}; give the summary text as a string", doc)
    labels = row.get("labels")
    if not isinstance(labels, dict) or not labels:
        raise _fail(path, number, f"labels is {labels!r}; give an object of criterion id -> {' | '.join(LABELS)}", doc)
    for key, value in labels.items():
        if value not in LABELS:
            raise _fail(path, number, f"label of {key} is {value!r}; use one of {', '.join(LABELS)}", doc)
    verdict = row.get("verdict")
    if verdict not in VERDICTS:
        raise _fail(path, number, f"verdict is {verdict!r}; use pass or fail", doc)
    labelled_by = row.get("labelled_by", "person")
    if labelled_by not in LABELLED_BY:
        raise _fail(path, number, f"labelled_by is {labelled_by!r}; use person or model (or leave it out: person)", doc)
    kind = _text(path, number, row, "kind", required=False, doc=doc)
    if kind is not None and kinds is not None and kind not in kinds:
        raise _fail(path, number, f"kind is {kind!r}; use one of {', '.join(kinds)} or leave it out", doc)
    return Labelled(
        str(texts["case_id"]), str(texts["summary_id"]), str(texts["labeller"]), summary,
        {str(k): str(v) for k, v in labels.items()}, str(verdict), number,
        writer=_text(path, number, row, "writer", required=False, doc=doc), kind=kind,
        flaw=_text(path, number, row, "flaw", required=False, doc=doc),
        note=_text(path, number, row, "note", required=False, doc=doc), labelled_by=str(labelled_by),
    )


def read_labels(path: Path, *, kinds: Sequence[str] | None = None, doc: str = FORMAT_DOC) -> LabelSet:
    """Read and check a label file (blank lines are skipped).

    Args:
        path: The JSONL file.
        kinds: The ``kind`` values allowed, or None for any.
        doc: Where the format is documented, named at the end of every error message.

    Raises:
        DatasetError: Unreadable; a line that is not an object of the documented fields; a label or
            verdict outside its values; the same summary_id with another summary text or case_id;
            the same labeller twice on one summary; or no line at all. The message names the file,
            the line, the value and the fix.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(str(path), f"cannot be read ({exc.strerror or exc}); give the path of a label file "
                                      "(JSONL)") from None
    lines: list[Labelled] = []
    by_summary: dict[str, list[Labelled]] = {}
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if not raw.strip():
            continue
        item = _one(path, number, raw, kinds, doc)
        seen = by_summary.setdefault(item.summary_id, [])
        if seen:
            first = seen[0]
            if item.summary != first.summary or item.case_id != first.case_id:
                what = "summary text" if item.summary != first.summary else f"case_id ({first.case_id})"
                message = (f"summary_id {item.summary_id} has another {what} than on line {first.line}; one "
                           "summary_id is one summary, labelled as it was scored")
                raise _fail(path, number, message, doc)
            if any(x.labeller == item.labeller for x in seen):
                raise _fail(path, number, f"labeller {item.labeller} labels summary_id {item.summary_id} twice; "
                                          "keep one line per summary per labeller", doc)
        seen.append(item)
        lines.append(item)
    if not lines:
        raise DatasetError(str(path), "holds no label line; write one JSON object per summary per labeller")
    return LabelSet(path, hashlib.sha256(data).hexdigest(), tuple(lines),
                    {k: tuple(v) for k, v in by_summary.items()})


def reference(lines: Sequence[Labelled], reference_labeller: str | None) -> Labelled | None:
    """The reference labels of one summary (see the module docstring), or None.

    Args:
        lines: Every labeller's line for the summary, in file order.
        reference_labeller: The labeller named with ``--reference-labeller``, or None.

    Returns:
        None only when ``reference_labeller`` is given and did not label this summary.
    """
    if reference_labeller is not None:
        return next((x for x in lines if x.labeller == reference_labeller), None)
    return next((x for x in lines if x.writer is None or x.labeller != x.writer), lines[0])
