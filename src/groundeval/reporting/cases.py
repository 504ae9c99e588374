"""Case records grouped by case id (trials) with their per-case dimension values.

Several case records with the same ``case_id`` are trials of one case: a case's value of a
dimension is its mean over the counted trials (for ``passed``, the case's pass rate), so the same
code serves single runs and ``--groundeval-trials K`` runs.

Dimensions are ``passed`` (1 when the outcome is ``passed``), ``answered``, then the task's
per-case metrics as the run record declares them (``RunRecord.metric_names``, in report order,
then any undeclared metric the case records carry), each a dimension wherever its value is a
number or a boolean (True = 1). Which way a dimension is better is the record's
``metric_directions`` (default higher). Nothing here knows a task's metric names: a record
written before ``metric_names`` existed falls back to the metric keys its case records carry, in
first-seen order. Only counted cases have values (``groundeval.records.outcomes``: scored answers and
agent-behaviour failures, the latter scored as empty answers); excluded and not-run cases have
none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from groundeval.records.dimensions import dimension_values
from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.scoring import Direction

__all__ = [
    "BASE_DIMENSIONS", "EPS", "CaseValues", "better", "case_values", "dimension_values", "dimensions", "directions",
    "load_record", "metric_names", "record_values",
]

BASE_DIMENSIONS = ("passed", "answered")
"""The dimensions every task has, first in display order."""
EPS = 1e-9


def metric_names(record: RunRecord) -> list[str]:
    """The record's per-case metric names in report order.

    ``record.metric_names`` (the task's declaration), then any other key the case records'
    ``metrics`` carry, in first-seen order (as junit does); for an older record without
    ``metric_names`` that is all of them. ``passed`` and ``answered`` are left out (always computed
    from the outcome).
    """
    names = dict.fromkeys([*record.metric_names, *(k for c in record.cases for k in c.metrics)])
    return [k for k in names if k not in BASE_DIMENSIONS]


def dimensions(*records: RunRecord) -> tuple[str, ...]:
    """``passed``, ``answered``, then the metric names of each record in turn (first seen first)."""
    return tuple(dict.fromkeys([*BASE_DIMENSIONS, *(k for r in records for k in metric_names(r))]))


def directions(*records: RunRecord) -> dict[str, Direction]:
    """Dimension -> direction for the non-default ones; a later record's declaration wins."""
    out: dict[str, Direction] = {}
    for record in records:
        out.update(record.metric_directions)
    return out


def load_record(path: str | Path) -> RunRecord:
    """Read and validate a run record file.

    Raises:
        ValueError: The file is not valid JSON or not a schema-2 run record (the message names the file).
        OSError: The file cannot be read.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return RunRecord.model_validate_json(text)
    except ValueError as exc:
        why = _why_not_a_record(path, text, exc)
        raise ValueError(f"{path}: not a groundeval run record ({why}). {WHAT_A_RECORD_IS}") from exc


WHAT_A_RECORD_IS = (
    "A run record is the JSON file a groundeval run writes when it ends, <out-dir>/<run id>.json "
    "(--groundeval-out-dir, default runs/); the last line of the run's summary names it"
)
"""Said after every "not a run record" message."""


def _why_not_a_record(path: Path, text: str, exc: ValueError) -> str:
    """What the file is instead, in words (never the validator's own text)."""
    import json

    if path.name.endswith(".partial.jsonl"):
        return "a partial file of a run that did not finish; its cases are in the record only when the run ends"
    try:
        data = json.loads(text)
    except ValueError as err:
        line = getattr(err, "lineno", None)
        return f"not JSON{f', line {line}' if line else ''}"
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    version = data.get("schema_version")
    if version is None and "run_id" not in data:
        return "a JSON object without run_id or schema_version"
    if version != 2:
        return f"schema_version {version!r}; this groundeval reads schema_version 2"
    errors = getattr(exc, "errors", None)
    fields = sorted({".".join(str(p) for p in e["loc"][:2]) for e in errors()}) if callable(errors) else []
    shown = ", ".join(fields[:4]) + (f" and {len(fields) - 4} more" if len(fields) > 4 else "")
    return f"schema_version 2 but these fields are missing or malformed: {shown}" if fields else "malformed"


@dataclass(frozen=True, slots=True)
class CaseValues:
    """One case of one run, trials pooled.

    Attributes:
        case_id: The case id.
        trials: Case records with this id (trials), counted or not.
        counted: Counted trials.
        passes: Counted trials whose outcome is ``passed``.
        outcomes: Each trial's outcome, in record order.
        values: Dimension -> mean over the counted trials that have it (0..1 for booleans).
        fixture_sha256: The case file's hash (first trial's), or None.
    """

    case_id: str
    trials: int
    counted: int
    passes: int
    outcomes: tuple[str, ...]
    values: dict[str, float]
    fixture_sha256: str | None

    @property
    def pass_rate(self) -> float | None:
        """Passes / counted trials, or None when no trial was counted."""
        return self.passes / self.counted if self.counted else None


def case_values(cases: Iterable[CaseRecord], names: Sequence[str] | None = None) -> dict[str, CaseValues]:
    """Group case records by ``case_id`` (trials) and pool each dimension; keeps first-seen order.

    Args:
        cases: Case records (trials of a case share its id).
        names: The per-case metrics to take (``metric_names(record)``); None takes every numeric
            or boolean metric a case record carries.
    """
    groups: dict[str, list[CaseRecord]] = defaultdict(list)
    for case in cases:
        groups[case.case_id].append(case)
    out: dict[str, CaseValues] = {}
    for case_id, trials in groups.items():
        sums: dict[str, list[float]] = defaultdict(list)
        for trial in trials:
            for name, value in dimension_values(trial, names).items():
                sums[name].append(value)
        counted = [t for t in trials if t.counted]
        out[case_id] = CaseValues(
            case_id=case_id, trials=len(trials), counted=len(counted),
            passes=sum(t.outcome == "passed" for t in counted), outcomes=tuple(t.outcome for t in trials),
            values={k: sum(v) / len(v) for k, v in sums.items()}, fixture_sha256=trials[0].fixture_sha256,
        )
    return out


def better(direction: Direction | None, before: float, after: float) -> bool | None:
    """True when ``after`` is better than ``before``, False when worse, None when neither (or equal)."""
    if direction == "none" or abs(after - before) <= EPS:
        return None
    return after < before if direction == "lower" else after > before


def record_values(record: RunRecord) -> dict[str, CaseValues]:
    """``case_values`` of a record's cases over its own ``metric_names``."""
    return case_values(record.cases, metric_names(record))
