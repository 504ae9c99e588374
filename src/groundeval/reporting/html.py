"""A self-contained HTML report of one run, or of two runs with their comparison.

One file, no network access when opened: CSS inline, no scripts, no fonts or images, and a
Content-Security-Policy that forbids loading anything. Rendered with jinja2 (imported lazily)
with autoescaping on, because case text (messages, displays, reasons, agent output) is untrusted.

Nothing here knows a task's names. The per-case table has one score column per metric of the
record's ``metric_names`` whose values are fractions or booleans (``score_columns``: counts and
``"none"``-direction values such as doses are left to the run record), and renders these
``CaseRecord.details`` keys of any task (docs/tasks/writing-a-task.md):

* ``missing``, ``extra``: lists of items, each a string or a mapping shown as its code (``codes``
  joined by ``/``, else ``rxnorm_code`` or ``code``), ``display`` and ``note`` or ``status``;
* ``mismatches`` (``display_mismatches`` too): mappings ``{code or rxnorm_code, expected, got}``;
* ``dimensions``: a mapping name -> ``{"ok": bool, "reasons": [str, ...]}``, one pass/fail column
  per name (first-seen order); a metric of the same name gets no score column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from groundeval.records.outcomes import POLICY
from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.records.scope import judge_note, scope_needed, statement, ungated_note
from groundeval.records.trial_stats import METHOD_NAMES, record_trial_stats
from groundeval.records.write_errors import named
from groundeval.reporting import charts
from groundeval.reporting.case_view import GROUPS, case_detail, group_of
from groundeval.reporting.cases import metric_names
from groundeval.reporting.compare import Comparison, compare_runs
from groundeval.reporting.gate import collection_error_lines
from groundeval.reporting.render import change_value, comparison_dict, fmt, fmt_p
from groundeval.reporting.stats import METHOD

__all__ = ["render_matrix_report", "render_report", "score_columns", "write_matrix_report", "write_report"]

ORDER = tuple(rule.outcome for rule in POLICY)
LIST_KEYS = ("missing", "extra")
"""``details`` keys rendered as item lists."""
MISMATCH_KEYS = ("mismatches", "display_mismatches")
"""``details`` keys rendered as ``code: expected X, got Y`` lines."""


def _code(item: Mapping[str, Any]) -> object:
    codes = item.get("codes")
    if isinstance(codes, list) and codes:
        return "/".join(str(c) for c in codes)
    return item.get("rxnorm_code") or item.get("code")


def _items(items: object) -> list[str]:
    """``["316049 Hydrochlorothiazide 25 MG [omission]", ...]`` from a ``missing``/``extra`` list."""
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, str | int | float):
            out.append(str(item))
            continue
        if not isinstance(item, Mapping):
            continue
        label = item.get("note") or item.get("status")
        note = f" [{label}]" if label else ""
        out.append(f"{_code(item) or '(uncoded)'} {item.get('display') or ''}{note}".strip())
    return out


def _left_out(case: CaseRecord, key: str) -> list[str]:
    """One line saying how many items of ``details[key]`` the record left out (``record_caps``), if any."""
    full = case.capped.get(f"details.{key}")
    kept = case.details.get(key)
    if full is None or not isinstance(kept, list):
        return []
    return [f"... {full - len(kept)} more (the run record keeps the first {len(kept)} of {full})"]


def _mismatches(details: Mapping[str, Any]) -> list[str]:
    found = [d for key in MISMATCH_KEYS for d in details.get(key) or [] if isinstance(d, Mapping)]
    return [f"{_code(d) or '(uncoded)'}: expected {d.get('expected')!r}, got {d.get('got')!r}" for d in found]


def _dims(case: CaseRecord) -> Mapping[str, Any]:
    found = case.details.get("dimensions")
    return found if isinstance(found, Mapping) else {}


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return fmt(value)
    return "-" if value is None else str(value)


def score_columns(record: RunRecord) -> list[str]:
    """The per-case score columns of a run, in the record's metric order.

    A metric of ``metric_names`` (and any other the case records carry) that some case has, whose
    values are all floats, booleans or n/a (None: a column of a run where it never applied still
    shows, as ``-``), whose direction is not ``"none"`` and that is not a ``details["dimensions"]``
    name. Integer counts (``tp``, ``fp``) and text stay in the run record.
    """
    dims = {k for c in record.cases for k in _dims(c)}

    def score_like(name: str) -> bool:
        values = [c.metrics[name] for c in record.cases if name in c.metrics]
        return bool(values) and all(v is None or isinstance(v, float | bool) for v in values)

    return [
        k for k in metric_names(record)
        if k not in dims and record.metric_directions.get(k) != "none" and score_like(k)
    ]


def _case_row(case: CaseRecord, columns: Sequence[str], dimension_names: Sequence[str],
              trials: Sequence[CaseRecord], rerun: str) -> dict[str, Any]:
    dims = _dims(case)
    cost = case.usage.get("cost_usd")
    return {
        "case_id": case.case_id,
        "trial": case.trial,
        "outcome": case.outcome,
        "group": group_of(case.outcome),
        "scores": {k: _shown(case.metrics[k]) for k in columns if k in case.metrics},
        "missing": _items(case.details.get("missing")) + _left_out(case, "missing"),
        "extra": _items(case.details.get("extra")) + _left_out(case, "extra"),
        "mismatches": _mismatches(case.details),
        "dimensions": [
            {"name": k, "ok": bool(d.get("ok")), "reasons": [str(r) for r in d.get("reasons") or []]}
            if isinstance(d := dims.get(k), Mapping) else None
            for k in dimension_names
        ],
        "error": f"{case.error.type}: {case.error.message}" if case.error else "",
        "latency_s": fmt(case.latency_s, 2) if case.latency_s is not None else "",
        "cost_usd": f"{float(cost):.4f}" if isinstance(cost, int | float) else "",
        "detail": case_detail(case, trials, rerun),
    }


def _rerun(record: RunRecord) -> str:
    """The command that reruns one case of this run as it ran (its node id is appended).

    It carries the task, the agent, the case folder, the model and every agent option the run had
    a value for (``settings.agent_options``: base URL, max tokens, timeout, ...), each quoted for a
    POSIX shell.
    """
    import shlex

    spec = str(record.settings.get("agent_spec") or record.agent)
    words = [f"--groundeval-task={record.task}", f"--groundeval-agent={spec}",
             f"--groundeval-data-dir={record.data_dir}"]
    if record.model:
        words.append(f"--groundeval-model={record.model}")
    options = record.settings.get("agent_options")
    if isinstance(options, Mapping):
        words += [f"--groundeval-{str(key).replace('_', '-')}={value}"
                  for key, value in options.items() if value is not None]
    return " ".join(["pytest", *(shlex.quote(w) for w in words)])


def _charts(record: RunRecord, columns: Sequence[str], figures: Sequence[Mapping[str, Any]],
            ivs: Mapping[str, Any]) -> list[str]:
    """The run's pictures: score histograms, rates with intervals, latency and cost per case."""
    counted = [c for c in record.cases if c.counted]
    out = []
    for name in columns:
        values = [v for c in counted if isinstance(v := c.metrics.get(name), float)]
        if values and len(set(values)) > 1:
            out.append(charts.histogram(name, values))
    rows = []
    for f in figures:
        value, iv = f["value"], ivs.get(f["name"])
        # a rate: a figure with an interval, the mean of a per-case score column, or a micro
        # average (``micro_*``, a rate of pooled counts); a figure that merely falls in [0, 1] (a
        # judge's kappa or temperature, a cost in USD) is not a rate and is not drawn on that axis
        rate = iv is not None or f["name"] in columns or str(f["name"]).startswith("micro_")
        if rate and isinstance(value, float) and 0.0 <= value <= 1.0:
            rows.append((f["name"], value, iv.low if iv is not None else None, iv.high if iv is not None else None))
    if rows:
        out.append(charts.intervals(rows))
    latency = [(c.case_id, float(c.latency_s)) for c in record.cases if c.latency_s is not None]
    if len(latency) > 1:
        out.append(charts.per_case_bars("latency", "s", latency))
    cost = [(c.case_id, float(v)) for c in record.cases if isinstance(v := c.usage.get("cost_usd"), int | float)]
    if len(cost) > 1 and any(v for _, v in cost):  # a rule-based run costs 0 on every case: no chart
        out.append(charts.per_case_bars("cost", "USD", cost))
    return out


def _run_view(record: RunRecord, index: int, label: str = "") -> dict[str, Any]:
    agg = record.aggregate
    stats = record_trial_stats(record)
    ivs = stats.intervals
    values: list[tuple[str, Any]] = [("pass_rate", agg.pass_rate), ("answer_rate", agg.answer_rate)]
    values += list(agg.metrics.items())
    figures: list[dict[str, Any]] = []
    for name, value in values:
        iv = ivs.get(name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        shown = str(value) if isinstance(value, int) and not isinstance(value, bool) else (
            fmt(value) if number else _shown(value))  # counts (duplicates) stay whole numbers; None is "-"
        shown_iv = f"{iv.text()} ({METHOD_NAMES.get(iv.method, iv.method)})" if iv is not None else ""
        figures.append({"name": name, "value": value, "shown": shown, "interval": shown_iv})
    usage = {k: ("unknown" if v is None and k in ("cost_usd", "spent_usd", "cached_cost_usd") else v)
             for k, v in agg.usage.items()}
    dimension_names = list(dict.fromkeys(k for c in record.cases for k in _dims(c)))
    columns = [k for k in score_columns(record) if any(k in c.metrics for c in record.cases)]
    by_id: dict[str, list[CaseRecord]] = {}
    for c in record.cases:
        by_id.setdefault(c.case_id, []).append(c)
    rerun = _rerun(record)
    rows = [_case_row(c, columns, dimension_names, by_id[c.case_id], rerun) for c in record.cases]
    groups = []
    for key, title in GROUPS:
        members = [r for r in rows if r["group"] == key]
        if members:
            groups.append({"key": key, "title": title, "id": f"run{index}-{key}", "cases": members})
    pass_iv = ivs.get("pass_rate")
    return {
        "record": record, "index": index, "label": label, "figures": figures, "usage": usage, "trials": stats,
        "show_trials": stats.k > 1 or stats.min_pass_rate is not None,
        "scope": statement(agg, "scope") if scope_needed(agg) else "",
        "judge_note": judge_note(record.task_facts, record.model),
        "ungated": ungated_note(record.task_facts),
        "unreadable": collection_error_lines(record),
        "pass_k_scope": statement(agg, "pass_k_scope"),
        "cases_scope": statement(agg, "cases_scope"),
        "counterfactual": agg.statements.get("counterfactual", ""),
        "grounding": agg.statements.get("grounding", ""),
        "fhir": agg.statements.get("fhir", ""),
        "untracked": [p for p in agg.counterfactual.pairs if p.tracks_record is False] if agg.counterfactual else [],
        "counts": [(k, agg.counts[k]) for k in ORDER if k in agg.counts],
        "groups": groups,
        "case_count": len(by_id),
        "score_columns": columns,
        "dimension_names": dimension_names,
        "show_latency": any(r["latency_s"] for r in rows),
        "show_cost": any(r["cost_usd"] and float(r["cost_usd"]) for r in rows),  # no column of zeros
        "pass_interval": pass_iv.text() if pass_iv is not None else "",
        "charts": _charts(record, columns, figures, ivs),
    }


def _change_charts(comp: Comparison | None) -> list[str]:
    """For two runs: the per-case change of the pass rate and of each score both runs have."""
    if comp is None or comp.problems:
        return []
    out = []
    for name in comp.dimensions:
        if comp.directions.get(name, "higher") != "higher" or name == "answered":
            continue
        changes = [(c.case_id, c.changes[name][1] - c.changes[name][0]) for c in comp.cases if name in c.changes]
        unchanged = [(c.case_id, 0.0) for c in comp.cases if name not in c.changes]
        if changes:
            out.append(charts.change_bars(name, changes + unchanged))
    return out[:3]


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("groundeval.reporting", "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )


def render_matrix_report(records: Sequence[RunRecord], baseline: int = 0) -> str:
    """The HTML report of three or more runs: the model matrix against ``records[baseline]``, then each run.

    Args:
        records: The runs, in the order given (labelled A, B, C, ...).
        baseline: Index of the baseline (``groundeval.reporting.matrix``).

    Returns:
        One HTML document (UTF-8 text) that loads nothing from the network.
    """
    from groundeval.reporting.matrix import compare_matrix
    from groundeval.reporting.matrix_render import cell_text, matrix_dict

    m = compare_matrix(records, baseline)
    data = matrix_dict(m)
    for row, case in zip(data["cases"], m.cases, strict=True):
        for cell, values in zip(row["runs"], case.cells, strict=True):
            cell["text"] = cell_text(values)
    runs = [_run_view(r, i + 1, label) for i, (r, label) in enumerate(zip(records, m.labels, strict=True))]
    return str(_environment().get_template("report.html").render(
        runs=runs, comparison=None, matrix=data, method=METHOD, fmt=fmt, fmt_p=fmt_p, cval=fmt,
    ))


def write_matrix_report(path: str | Path, records: Sequence[RunRecord], baseline: int = 0) -> Path:
    """``render_matrix_report`` written to ``path`` (UTF-8); returns the path.

    Raises:
        OSError: The file cannot be written; its ``filename`` names it.
    """
    out = Path(path)
    text = render_matrix_report(records, baseline)
    with named(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return out


def render_report(record: RunRecord, other: RunRecord | None = None) -> str:
    """The HTML report of ``record``; with ``other`` (the current run), both runs and their comparison.

    Args:
        record: The run (the baseline when ``other`` is given).
        other: A second run compared against ``record``, or None.

    Returns:
        One HTML document (UTF-8 text) that loads nothing from the network.
    """
    env = _environment()
    runs = [_run_view(record, 1)] + ([_run_view(other, 2)] if other is not None else [])
    comp = compare_runs(record, other) if other is not None else None
    comparison = comparison_dict(comp) if comp is not None else None
    if comparison is not None:
        comparison["charts"] = _change_charts(comp)

    def cval(name: str, value: float) -> str:
        return change_value(comp, name, value) if comp is not None else fmt(value)

    return str(env.get_template("report.html").render(
        runs=runs, comparison=comparison, matrix=None, method=METHOD, fmt=fmt, fmt_p=fmt_p, cval=cval,
    ))


def write_report(path: str | Path, record: RunRecord, other: RunRecord | None = None) -> Path:
    """Render the report and write it to ``path`` (UTF-8); returns the path.

    Raises:
        OSError: The file cannot be written; its ``filename`` names it.
    """
    out = Path(path)
    text = render_report(record, other)
    with named(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return out
