"""Case records grouped by case id (trials) with their per-case dimension values.

Several case records with the same ``case_id`` are trials of one case: a case's value of a
dimension is its mean over the counted trials (for ``passed``, the case's pass rate), so the same
code serves single runs and ``--groundeval-trials K`` runs.

Dimensions (higher is better for all) are ``passed`` (1 when the outcome is ``passed``), ``answered``
and the task's per-case scores listed in ``DIMENSIONS`` that the case records carry. Only counted
cases have values (``groundeval.outcomes``: scored answers and agent-behaviour failures, the latter
scored as empty answers); excluded and not-run cases have none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from groundeval.run_record import CaseRecord, RunRecord

__all__ = ["DIMENSIONS", "EPS", "CaseValues", "case_values", "dimension_values", "load_record"]

DIMENSIONS = (
    "passed", "answered", "f1", "precision", "recall", "display_accuracy", "schema", "coding", "constraints", "safety",
)
"""Per-case dimensions compared, in display order (those a task does not emit are skipped)."""
EPS = 1e-9


def load_record(path: str | Path) -> RunRecord:
    """Read and validate a run record file.

    Raises:
        ValueError: The file is not valid JSON or not a schema-2 run record (the message names the file).
        OSError: The file cannot be read.
    """
    path = Path(path)
    try:
        return RunRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise ValueError(f"{path}: not a groundeval run record (schema_version 2): {first}") from exc


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


def dimension_values(record: CaseRecord) -> dict[str, float]:
    """One trial's dimension -> value (``passed``/``answered`` as 0 or 1); empty when it is not counted."""
    if not record.counted:
        return {}
    out = {"passed": 1.0 if record.outcome == "passed" else 0.0, "answered": 1.0 if record.answered else 0.0}
    for name in DIMENSIONS[2:]:
        value = record.metrics.get(name)
        if isinstance(value, bool | int | float) and value is not None:
            out[name] = float(value)
    return out


def case_values(cases: Iterable[CaseRecord]) -> dict[str, CaseValues]:
    """Group case records by ``case_id`` (trials) and pool each dimension; keeps first-seen order."""
    groups: dict[str, list[CaseRecord]] = defaultdict(list)
    for case in cases:
        groups[case.case_id].append(case)
    out: dict[str, CaseValues] = {}
    for case_id, trials in groups.items():
        sums: dict[str, list[float]] = defaultdict(list)
        for trial in trials:
            for name, value in dimension_values(trial).items():
                sums[name].append(value)
        counted = [t for t in trials if t.counted]
        out[case_id] = CaseValues(
            case_id=case_id, trials=len(trials), counted=len(counted),
            passes=sum(t.outcome == "passed" for t in counted), outcomes=tuple(t.outcome for t in trials),
            values={k: sum(v) / len(v) for k, v in sums.items()}, fixture_sha256=trials[0].fixture_sha256,
        )
    return out
