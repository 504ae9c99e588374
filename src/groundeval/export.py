"""Run records as a table: ``groundeval.load_runs`` and ``groundeval export`` (the ``export`` extra).

One row per case record (a case and trial), columns in this order: ``run_id``, ``task``,
``agent``, ``model`` (the run's), ``started_at``, ``case_id``, ``trial``, ``outcome``,
``counted``, ``answered``, ``cached``, ``latency_s``, ``error_type``, then each per-case metric
(``RunRecord.metric_names`` first, a metric a case lacks is missing, not 0), then the usage
(``input_tokens``, ..., ``cost_usd``: USD, missing when unpriced). Nothing is recomputed: every
value is the record's own. pandas (and pyarrow for Parquet) is imported only here, and only
when a table is made.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundeval.extras import has_module

if TYPE_CHECKING:
    import pandas

__all__ = ["FIXED_COLUMNS", "USAGE_COLUMNS", "load_runs", "rows"]

FIXED_COLUMNS = (
    "run_id",
    "task",
    "agent",
    "model",
    "started_at",
    "case_id",
    "trial",
    "outcome",
    "counted",
    "answered",
    "cached",
    "latency_s",
    "error_type",
)
"""The columns every table has, first."""

USAGE_COLUMNS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cost_usd")
"""The usage columns every table has, after the metrics (missing where a case made no model call or
its cost is unpriced), so a table's columns do not depend on which runs made model calls."""


def rows(paths: Iterable[str | Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """The table's rows (one per case record of each run record) and its column order.

    Raises:
        ValueError: A file is not a run record (the message names it).
        OSError: A file cannot be read.
    """
    from groundeval.reporting.cases import load_record, metric_names

    out: list[dict[str, Any]] = []
    metrics: dict[str, None] = {}
    usage: dict[str, None] = dict.fromkeys(USAGE_COLUMNS)
    for path in paths:
        record = load_record(path)
        metrics.update(dict.fromkeys(metric_names(record)))
        for case in record.cases:
            row: dict[str, Any] = {
                "run_id": record.run_id,
                "task": record.task,
                "agent": record.agent,
                "model": record.model or case.model,
                "started_at": record.started_at,
                "case_id": case.case_id,
                "trial": case.trial,
                "outcome": case.outcome,
                "counted": case.counted,
                "answered": case.answered,
                "cached": case.cached,
                "latency_s": case.latency_s,
                "error_type": case.error.type if case.error else None,
            }
            row.update({k: v for k, v in case.metrics.items() if k not in FIXED_COLUMNS})
            usage.update(dict.fromkeys(case.usage))
            row.update({k: v for k, v in case.usage.items() if k not in row})
            out.append(row)
    columns = list(dict.fromkeys([*FIXED_COLUMNS, *metrics, *usage]))
    return out, columns


def load_runs(paths: Iterable[str | Path]) -> pandas.DataFrame:
    """Read run records into one ``pandas.DataFrame``: one row per case and trial, metrics as columns.

    Args:
        paths: Run record files (``runs/<run id>.json``).

    Returns:
        The table (columns: see the module docstring).

    Raises:
        ImportError: pandas is not installed (the message names the ``export`` extra).
        ValueError: A file is not a run record (the message names it).
        OSError: A file cannot be read.
    """
    if not has_module("pandas"):
        from groundeval.extras import extra_missing_message

        raise ImportError(extra_missing_message("export", "pandas", "groundeval.load_runs"))
    import pandas as pd

    data, columns = rows(paths)
    return pd.DataFrame(data, columns=columns)
