"""The terminal summary, read from the finished run record: never recomputed here.

It leads with what cannot be gamed (how many cases were scored, the pass rate, the answer rate),
their 95% intervals, pass@k/pass^k and the case verdicts over repeated trials
(``Aggregate.trials``, from ``groundeval.records.trial_stats``), the counterfactual twins' line
(``groundeval.records.sensitivity``), then the task's means, then usage;
partial cases are listed above the table so that the table is the last thing a run prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groundeval.records.outcomes import POLICY
from groundeval.records.run_record import Aggregate, FigureInterval, RunRecord, TrialStats
from groundeval.records.scope import UNGATED_SHORT, judge_note, ran as ran_count, scope_needed, statement, ungated_note
from groundeval.records.sensitivity import figure_unit
from groundeval.records.trial_stats import interval_methods, interval_note
from groundeval.redaction import clean_text
from groundeval.scoring import Metric

__all__ = ["format_table", "trial_lines", "write_failed", "write_summary"]

ORDER = tuple(rule.outcome for rule in POLICY)
MAX_FAILED_LISTED = 10
"""Cases below the min pass rate named in the terminal, at most."""


def _fmt(value: Metric) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _fmt_usage(key: str, value: Metric) -> str:
    """Token counts as integers; cost in USD to 1e-6, or ``unknown`` when a model is unpriced."""
    if key == "cost_usd":
        if value is None:
            return "unknown (no price for the model: price it with --groundeval-prices FILE)"
        return f"{float(value):.6f}"
    return _fmt(value)


def format_table(agg: Aggregate, header: str) -> list[str]:
    """Render a run's aggregate as text lines.

    Metrics named ``micro_<m>``/``macro_<m>`` become a table with one column per ``<m>`` (plus a
    ``95% CI`` row of the macro means' intervals); other metrics (a ``macro_<m>`` without its
    ``micro_<m>`` among them) are listed as ``name: value``,
    then one ``95% CI:`` line of those that have an interval. With repeated trials the counts are
    of trials.
    """
    lines = [header]
    ran = ran_count(agg)  # invalid_case and not_run never count as ran
    stats = agg.trials
    ivs = stats.intervals if stats is not None else {}
    unit = "trials" if stats is not None and stats.k > 1 else "cases"
    if scope_needed(agg):  # before the pass rate: an agent must not raise it by crashing
        lines.append(statement(agg, "scope"))
    passed = agg.counts.get("passed", 0)
    lines.append(
        f"pass rate: {_fmt(agg.pass_rate)} ({passed}/{agg.counted})  answer rate: {_fmt(agg.answer_rate)}"
        f"  (over the {agg.counted} counted {unit}; {ran} ran)"
    )
    if stats is not None:
        lines += trial_lines(stats, agg)
    for said in ("counterfactual", "grounding", "fhir"):  # the twins and the tool grounding, beside the pass rate
        if line := agg.statements.get(said):
            lines.append(line)
    lines.append("outcomes: " + "  ".join(f"{k}: {agg.counts[k]}" for k in ORDER if k in agg.counts))
    metrics = agg.metrics
    columns = [k[len("micro_"):] for k in metrics if k.startswith("micro_")]
    if columns:
        with_ci = any(f"macro_{c}" in ivs for c in columns)
        width = max(16 if with_ci else 12, *(len(c) + 2 for c in columns))
        lines.append(" " * 8 + "".join(c.rjust(width) for c in columns))
        for avg in ("micro", "macro"):
            lines.append(avg.ljust(8) + "".join(_fmt(metrics.get(f"{avg}_{c}")).rjust(width) for c in columns))
        if with_ci:
            row = (ivs[f"macro_{c}"].text() if f"macro_{c}" in ivs else "-" for c in columns)
            lines.append("95% CI".ljust(8) + "".join(cell.rjust(width) for cell in row))
            macro = [ivs[f"macro_{c}"] for c in columns if f"macro_{c}" in ivs]
            if len({iv.cases for iv in macro}) > 1:  # each mean over the cases that have it: its own n
                row = (str(ivs[f"macro_{c}"].cases) if f"macro_{c}" in ivs else "-" for c in columns)
                lines.append("n".ljust(8) + "".join(cell.rjust(width) for cell in row))
            lines.append(f"        (95% CI of the macro means: {interval_note(macro)})")
    others = [k for k in metrics if not k.startswith("micro_") and not (k.startswith("macro_") and k[6:] in columns)]
    lines += [f"{key}: {_fmt(metrics[key])}" for key in others]
    if any(k in ivs for k in others):
        note, shown_ivs = interval_items([(k, ivs[k]) for k in others if k in ivs])
        lines.append(f"95% CI ({note}): {shown_ivs}")
    shown = {k: v for k, v in agg.usage.items() if k not in SPLIT_KEYS}
    if shown and shown.get("model_calls") == 0 and set(shown) <= {"model_calls", "cost_usd"}:
        lines.append("usage: no model calls (cost 0 USD)")  # a rule-based agent (agents.baselines.no_model_calls)
    elif shown:
        lines.append("usage: " + "  ".join(f"{k}: {_fmt_usage(k, v)}" for k, v in shown.items()))
    if "spent_usd" in agg.usage:
        spent, cached = agg.usage.get("spent_usd"), agg.usage.get("cached_cost_usd")
        lines.append(
            f"cost: {_fmt_usage('cost_usd', spent)} USD spent by this run; {_fmt_usage('cost_usd', cached)} USD is the "
            f"recorded cost of the {agg.cached} cached or replayed answers (not spent now)"
        )
    return lines


def interval_items(named: list[tuple[str, FigureInterval]]) -> tuple[str, str]:
    """The note and the ``name [low, high]`` items of intervals printed on one line, each n said once.

    When every interval is over the same n of the same unit the note says it (``Wilson score over 33
    cases``); otherwise each item carries its own (``record_sensitivity [0.000, 0.028] (133 twins)``).
    """
    units = {figure_unit(k) for k, _ in named}
    if len(units) == 1 and len({iv.cases for _, iv in named}) == 1:
        return interval_note((iv for _, iv in named), units.pop()), "  ".join(f"{k} {iv.text()}" for k, iv in named)
    shown = "  ".join(f"{k} {iv.text()} ({iv.cases} {figure_unit(k)})" for k, iv in named)
    return interval_methods(iv for _, iv in named), shown


SPLIT_KEYS = ("spent_usd", "cached_cost_usd")
"""Usage keys shown on the ``cost:`` line (this run's spend apart from the cached answers' recorded cost)."""


def trial_lines(stats: TrialStats, agg: Aggregate) -> list[str]:
    """Pass and answer rate intervals, pass@k/pass^k (K > 1) and the case verdicts (K > 1 or a min pass rate)."""
    lines = []
    rates = {k: iv for k, iv in stats.intervals.items() if k in ("pass_rate", "answer_rate")}
    if rates:
        note, shown = interval_items(list(rates.items()))
        lines.append(f"95% intervals ({note}): {shown}")
    head = stats.headline
    if stats.k > 1 and head is not None:
        first = stats.pass_k[0]
        at_iv, hat_iv = head.pass_at_k_interval, head.pass_hat_k_interval
        lines.append(
            f"trials: {stats.k} per case, {_judged(stats)}  pass@1: {_fmt(first.pass_at_k)}  "
            f"pass@{head.k}: {_fmt(head.pass_at_k)}{' ' + at_iv.text() if at_iv else ''}  "
            f"pass^{head.k}: {_fmt(head.pass_hat_k)}{' ' + hat_iv.text() if hat_iv else ''}"
            + (f"  (pass@{head.k}/pass^{head.k} {note})" if (note := statement(agg, "pass_k_scope")) else "")
            + (f"  tool_plan_consistency: {_fmt(plan)}"
               if (plan := agg.metrics.get("tool_plan_consistency")) is not None else "")
        )
    if stats.k > 1 or stats.min_pass_rate is not None:
        rule = f"at least {stats.min_pass_rate:g} of" if stats.min_pass_rate is not None else "all"
        line = f"cases passing ({rule} their counted trials): {stats.cases_passed}/{stats.cases_judged}"
        by_id = {c.case_id: c for c in stats.per_case}
        failed = [f"{i} ({by_id[i].passes}/{by_id[i].counted})" for i in stats.cases_failed[:MAX_FAILED_LISTED]]
        if failed:
            more = len(stats.cases_failed) - len(failed)
            line += "  below: " + ", ".join(failed) + (f" and {more} more" if more else "")
        if note := statement(agg, "cases_scope"):
            line += f"  ({note})"
        lines.append(line)
    return lines


def _judged(stats: TrialStats) -> str:
    """``44 cases``, or ``44 of 48 cases judged`` when some case has no counted trial."""
    if stats.cases_judged < stats.cases:
        return f"{stats.cases_judged} of {stats.cases} cases judged"
    return f"{stats.cases_judged} cases"


def _run_shape(record: RunRecord) -> list[str]:
    """Trials and concurrency, when they are not the plain one-call-per-item run."""
    settings = record.settings
    lines = []
    trials = settings.get("trials")
    stats = record.aggregate.trials
    if isinstance(trials, int) and trials > 1 and (stats is None or stats.k <= 1):  # else trial_lines says it
        lines.append(f"trials: {trials} per case")
    n = settings.get("concurrency")
    workers = settings.get("workers")
    if isinstance(n, int) and n > 1:
        xdist = isinstance(workers, int) and workers > 1
        where = " per worker" if xdist else ""
        total = f" x {workers} workers" if xdist else ""
        peak = record.peak_in_flight
        reached = f"reached {peak} in flight at once{where}" if peak is not None else "reached: not recorded"
        lines.append(f"concurrency: {n} agent calls{where}{total} allowed, {reached}")
    if record.aggregate.cached:
        asked = ran_count(record.aggregate)  # answers asked for: not invalid_case or not_run
        lines.append(
            f"cached: {record.aggregate.cached} of {asked} answers came from the cache or a replayed "
            "run (no model call; their usage and cost are the original calls')"
        )
    changed = [c.case_id for c in record.cases if c.agent_meta.get("fixture_changed")
               or (c.error is not None and c.error.details.get("fixture_changed"))]
    if changed:
        lines.append(
            f"fixture_changed: {len(changed)} case(s) re-scored although their case file changed since the "
            f"replayed run ({', '.join(sorted(set(changed))[:3])}{', ...' if len(set(changed)) > 3 else ''})"
        )
    if record.dropped_calls:
        lines.append(
            f"{record.dropped_calls} agent calls were dropped when the run stopped (made ahead or in flight: "
            "paid for, never scored; --groundeval-cache keeps answers for the next run)"
        )
    return lines


def write_failed(tr: Any, reports: list[Any]) -> None:
    """One line per failed case, reason first: ``FAILED <node id> - <first line of its message>``.

    Args:
        tr: pytest's ``TerminalReporter``.
        reports: The failed cases' call reports, in the order they ran.
    """
    if not reports:
        return
    blocks = "--groundeval-failure-blocks prints pytest's blocks"
    tr.write_sep("-", f"failed cases ({len(reports)}, one line each; {blocks})")
    for report in reports:
        first = (str(report.longrepr).splitlines() or [""])[0]
        tr.write_line(f"FAILED {report.nodeid} - {clean_text(first)}")


def write_summary(tr: Any, record: RunRecord, path: Path | None) -> None:
    """Write the groundeval section to pytest's terminal reporter.

    Args:
        tr: pytest's ``TerminalReporter``.
        record: The finished run record (the summary reads it, never recomputes it).
        path: Where the record was written, or None.
    """
    partial = [c for c in record.cases if c.outcome == "partial"]
    if partial:  # pytest's short summary does not list a custom category: one line each, reason first
        tr.write_sep("-", "partial cases")
        for case in partial:
            first, *rest = case.message.splitlines() or [""]
            tr.write_line(f"PARTIAL {case.nodeid} - {clean_text(first)}")
            for line in rest:
                tr.write_line(f"    {clean_text(line)}")
    tr.write_sep("=", f"groundeval {record.task}")
    spec = str(record.settings.get("agent_spec") or "")
    replayed = f" (replayed from {spec.partition(':')[2]})" if spec.startswith("replay:") else ""
    header = f"agent: {record.agent}{replayed}  model: {record.model or '-'}  run: {record.run_id}"
    lines = format_table(record.aggregate, header)
    if record.collection_errors:  # files that never became cases: said at the top, not the bottom
        lines.insert(1, f"malformed case files (collection errors, not scored): {len(record.collection_errors)}")
    lines[1:1] = _run_shape(record)
    if ungated := ungated_note(record.task_facts):  # on its own line, right under the pass rate
        at = next((i for i, line in enumerate(lines) if line.startswith("pass rate: ")), len(lines) - 1)
        lines.insert(at + 1, ungated)
        stats = record.aggregate.trials
        if stats is not None and stats.min_pass_rate is not None:  # the same rule as the regression gate
            for i, line in enumerate(lines):
                if line.startswith("cases passing ("):
                    lines[i] += f"  (--groundeval-min-pass-rate not applied: {UNGATED_SHORT})"
    note = judge_note(record.task_facts, record.model)
    if note:
        lines.insert(1, f"WARNING: {note}")
    for line in lines:
        tr.write_line(clean_text(line))
    if not record.complete and not record.cases and record.collection_errors:
        tr.write_line(f"NOTHING SCORED: {record.stop_reason} (see the errors above); fix the case files and rerun",
                      red=True, bold=True)
    elif not record.complete:
        tr.write_line(
            f"INCOMPLETE: {record.stop_reason}; {record.aggregate.not_run} selected case(s) did not run and "
            "these numbers cover only the cases that ran", red=True, bold=True,
        )
    if path is not None:
        tr.write_line(f"run record: {path}")
