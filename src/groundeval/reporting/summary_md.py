"""Markdown: a run's summary (``--groundeval-summary-md``, ``$GITHUB_STEP_SUMMARY``) and a comparison.

GitHub-flavoured Markdown (tables, ``<details>``); case text is escaped so a case id or a failure
message cannot break the table or inject HTML into a PR comment.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from groundeval.records.outcomes import POLICY
from groundeval.records.run_record import Aggregate, FigureInterval, RunRecord, TrialStats
from groundeval.records.scope import UNGATED_SHORT, judge_note, scope_needed, statement, ungated_note
from groundeval.records.sensitivity import figure_unit
from groundeval.records.trial_stats import INTERVAL_METHOD, METHOD_NAMES, record_trial_stats
from groundeval.records.write_errors import append_whole, named, replace_whole
from groundeval.reporting.compare import PASSED_LINE, Comparison, GateResult, unmatched
from groundeval.reporting.render import change_value, fmt, fmt_p, run_line
from groundeval.reporting.stats import METHOD

__all__ = ["comparison_markdown", "figure_intervals", "md_escape", "summary_markdown", "write_summary_markdown"]

ORDER = tuple(rule.outcome for rule in POLICY)
MAX_LISTED = 50
"""Cases listed by name at most, per list."""


_MD_SYNTAX = re.compile(r"[\\`*\[\]~|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|:(?=//)|@|(?<=www)\.", re.IGNORECASE)
"""What starts Markdown inside a line: code, emphasis, links and images (``[``, ``]``), strikethrough,
a table cell's end, and GitHub's autolinks (``http://``, ``www.``, ``user@host``)."""


def md_escape(text: str) -> str:
    """Escape text (an agent's, a case file's, or ours) for Markdown prose or a table cell: it shows as written.

    ``&`` and ``<`` are HTML-escaped (no tag or entity can start); every character that starts
    inline Markdown is backslash-escaped (CommonMark escapes any ASCII punctuation this way): a
    backslash, `` ` ``, ``*``, ``~``, ``[`` and ``]`` (so ``[text](url)`` and ``![alt](url)`` are
    neither a link nor an image), ``|`` (cannot end a cell), ``_`` at a word's edge (inside a word,
    ``not_run``, it starts nothing), and the ``:`` of ``://``, the ``.`` of ``www.`` and ``@``, so
    GitHub's extended autolinks find no URL or e-mail address. Newlines become ``<br>``; ``>`` is
    kept (``passed -> not passed`` reads as written: mid-text it starts nothing).
    """
    escaped = text.replace("&", "&amp;").replace("<", "&lt;")
    escaped = _MD_SYNTAX.sub(lambda m: "\\" + m.group(0), escaped)
    return escaped.replace("\r", " ").replace("\n", "<br>")


def md_code(text: str) -> str:
    """``text`` as an inline code span, safe in a table cell.

    Nothing is HTML-escaped (a code span shows entities literally); a backtick becomes ``'``,
    ``|`` is escaped for the table and newlines become spaces.
    """
    return "`" + text.replace("`", "'").replace("|", "\\|").replace("\r", " ").replace("\n", " ") + "`"


def figure_intervals(record: RunRecord) -> dict[str, FigureInterval]:
    """Figure name -> its 95% interval, read from the record's ``Aggregate.trials`` (never recomputed).

    Only figures that are means of a per-case value have one (pass rate, answer rate, macro
    means, dimension pass rates); see ``groundeval.records.trial_stats``. A record written before
    ``Aggregate.trials`` existed gets them computed from its cases.
    """
    return dict(record_trial_stats(record).intervals)


def _iv(iv: FigureInterval | None, name: str = "pass_rate") -> str:
    """``[0.496, 0.802] (Wilson score, 68 cases)``: the bounds, the method that made them and its n."""
    if iv is None:
        return ""
    return f"{iv.text()} ({METHOD_NAMES.get(iv.method, iv.method)}, {iv.cases} {figure_unit(name)})"


def _trials_md(stats: TrialStats, agg: Aggregate, ungated: bool = False) -> list[str]:
    """pass@k/pass^k (K > 1) and the case verdicts (K > 1 or a min pass rate)."""
    lines: list[str] = []
    head = stats.headline
    if stats.k > 1 and head is not None:
        lines += ["", f"**{stats.k} trials per case** over {stats.cases_judged}"
                  + (f" of {stats.cases} cases (judged)" if stats.cases_judged < stats.cases else " cases"), "",
                  "| k | pass@k | pass^k | cases (n >= k) |", "| ---: | ---: | ---: | ---: |"]
        for p in stats.pass_k:
            at = fmt(p.pass_at_k) + (f" {_iv(p.pass_at_k_interval)}" if p.pass_at_k_interval else "")
            hat = fmt(p.pass_hat_k) + (f" {_iv(p.pass_hat_k_interval)}" if p.pass_hat_k_interval else "")
            lines.append(f"| {p.k} | {at} | {hat} | {p.cases} |")
        if note := statement(agg, "pass_k_scope"):
            lines += ["", f"pass@{head.k}/pass^{head.k} {md_escape(note)}"]
    if stats.k > 1 or stats.min_pass_rate is not None:
        rule = f"at least {stats.min_pass_rate:g} of" if stats.min_pass_rate is not None else "all"
        lines += ["", f"cases passing ({rule} their counted trials): **{stats.cases_passed}/{stats.cases_judged}**"]
        if stats.cases_failed:
            lines[-1] += f"; below: {_listed(stats.cases_failed)}"
        if note := statement(agg, "cases_scope"):
            lines[-1] += f"; {md_escape(note)}"
        if ungated:
            lines[-1] += f" (--groundeval-min-pass-rate not applied: {UNGATED_SHORT})"
        lines += ["", "<details><summary>passes out of counted trials, per case</summary>", "",
                  "| case | passes | trials | outcomes |", "| --- | ---: | ---: | --- |"]
        lines += [f"| {md_code(c.case_id)} | {c.passes}/{c.counted} | {c.trials} | {', '.join(c.outcomes)} |"
                  for c in stats.per_case[:MAX_LISTED]]
        if len(stats.per_case) > MAX_LISTED:
            lines += ["", f"and {len(stats.per_case) - MAX_LISTED} more cases (all of them in the run record)"]
        lines += ["", "</details>"]
    return lines


def _more(total: int, what: str) -> list[str]:
    """``and 2,950 more <what> (all of them in the run record)`` after a list cut at ``MAX_LISTED`` rows."""
    if total <= MAX_LISTED:
        return []
    return ["", f"and {total - MAX_LISTED:,} more {what} (all of them in the run record)"]


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(f"{md_code(i)}" for i in ids[:MAX_LISTED])
    return shown + (f" and {len(ids) - MAX_LISTED} more" if len(ids) > MAX_LISTED else "")


def summary_markdown(record: RunRecord, gate: GateResult | None = None) -> str:
    """The run's summary as Markdown.

    Args:
        record: The finished run record.
        gate: The regression gate against a baseline, or None.

    Returns:
        Headline figures with 95% intervals, pass@k/pass^k and case verdicts over trials, per-dimension
        rates, outcomes, regressions (when a
        gate is given), tokens and cost (USD), and the non-passing cases.
    """
    agg = record.aggregate
    stats = record_trial_stats(record)
    ivs = stats.intervals
    unit = "trials" if stats.k > 1 else "cases"
    title = f"### groundeval {md_escape(record.task)}: {md_escape(record.agent)}"
    lines = [title, "", f"run `{record.run_id}`, model {md_code(record.model or '-')}"
             + ("" if record.complete else f" — **INCOMPLETE**: {md_escape(record.stop_reason or '')}"), ""]
    passed = agg.counts.get("passed", 0)
    note = judge_note(record.task_facts, record.model)
    if note:
        lines += [f"**Warning: {md_escape(note)}**", ""]
    if scope_needed(agg):  # before the pass rate: nobody reads a pass rate raised by crashing without it
        lines += [f"**{md_escape(statement(agg, 'scope'))}**", ""]
    lines.append(
        f"**pass rate {fmt(agg.pass_rate)}** ({passed}/{agg.counted}) 95% interval {_iv(ivs.get('pass_rate'))}"
        f" · answer rate {fmt(agg.answer_rate)} · scored {agg.counted} of {agg.selected} {unit}"
        f" ({agg.excluded} excluded, {agg.not_run} not run)"
    )
    if ungated := ungated_note(record.task_facts):  # on its own line, under the pass rate it qualifies
        lines += ["", f"**{md_escape(ungated)}**"]
    for said in ("counterfactual", "grounding", "fhir"):
        if line := agg.statements.get(said):
            lines += ["", md_escape(line)]
    lines += ["", "| figure | value | 95% interval |", "| --- | ---: | --- |"]
    for name in ["answer_rate", *agg.metrics]:
        value = agg.answer_rate if name == "answer_rate" else agg.metrics.get(name)
        if value is None:
            shown = "-"  # n/a, as the terminal prints it
        elif isinstance(value, bool) or not isinstance(value, int | float):
            shown = str(value)
        else:  # counts (format_not_ok, duplicates) as integers, means to three decimals
            shown = str(value) if isinstance(value, int) else fmt(value)
        lines.append(f"| {md_escape(name)} | {shown} | {_iv(ivs.get(name), name)} |")
    lines += _trials_md(stats, agg, bool(ungated_note(record.task_facts)))
    lines += ["", "outcomes: " + ", ".join(f"{k} {agg.counts[k]}" for k in ORDER if k in agg.counts)]
    if gate is not None:
        lines += ["", *_gate_md(gate)]
    if agg.usage:
        lines += ["", "| usage | total |", "| --- | ---: |"]
        for key, value in agg.usage.items():
            if key == "cost_usd":
                shown = "unknown (no list price)" if value is None else f"${float(value):.4f}"
            else:
                shown = str(value)
            lines.append(f"| {md_escape(key)} | {shown} |")
    bad = [c for c in record.cases if c.outcome != "passed"]
    if bad:
        lines += ["", f"<details><summary>{len(bad)} {unit[:-1]}(s) not passed</summary>", "",
                  "| case | outcome | why |", "| --- | --- | --- |"]
        for c in bad[:MAX_LISTED]:
            why = (c.message or (c.error.message if c.error else "")).splitlines()[:1]
            name = f"{c.case_id}[trial-{c.trial}]" if stats.k > 1 else c.case_id
            lines.append(f"| {md_code(name)} | {c.outcome} | {md_escape(why[0] if why else '')} |")
        lines += _more(len(bad), f"{unit} not passed")
        lines += ["", "</details>"]
    lines += _untracked_md(record)
    lines += _ungrounded_md(record)
    lines += ["", f"<sub>intervals: {md_escape(stats.interval_method or INTERVAL_METHOD)}</sub>", ""]
    return "\n".join(lines)


def _ungrounded_md(record: RunRecord) -> list[str]:
    """The cases whose answer holds items no tool returned, or that missed a required lookup (``scorers.grounding``)."""
    rows = [(c, c.details.get("reasoned_not_looked_up") or [], c.details.get("missed_lookups") or [])
            for c in record.cases]
    rows = [r for r in rows if r[1] or r[2]]
    if not rows:
        return []
    lines = ["", f"<details><summary>{len(rows)} {unit_of(record)}(s) not grounded in their tool calls</summary>", "",
             "| case | reasoned, not looked up | missed lookups |", "| --- | --- | --- |"]
    lines += [f"| {md_code(c.case_id)} | {md_escape('; '.join(map(str, r)))} | {md_escape('; '.join(map(str, m)))} |"
              for c, r, m in rows[:MAX_LISTED]]
    return [*lines, *_more(len(rows), f"{unit_of(record)}s not grounded"), "", "</details>"]


def unit_of(record: RunRecord) -> str:
    """``trial`` when the run has more than one trial per case, else ``case``."""
    stats = record.aggregate.trials
    return "trial" if stats is not None and stats.k > 1 else "case"


def _untracked_md(record: RunRecord) -> list[str]:
    """The counterfactual twins whose answer did not follow the record's change (at most ``MAX_LISTED``)."""
    cf = record.aggregate.counterfactual
    missed = [p for p in cf.pairs if p.tracks_record is False] if cf is not None else []
    if not missed:
        return []
    lines = ["", f"<details><summary>{len(missed)} twin(s) not tracked</summary>", "",
             "| twin | change | why |", "| --- | --- | --- |"]
    lines += [f"| {md_code(p.twin)} | {md_escape(p.change)} | {md_escape(p.why)} |" for p in missed[:MAX_LISTED]]
    return [*lines, *_more(len(missed), "twins not tracked"), "", "</details>"]


def write_summary_markdown(
    record: RunRecord, gate: GateResult | None = None, path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write ``summary_markdown`` to ``path`` (replaced) and append it to ``$GITHUB_STEP_SUMMARY`` when set.

    Each file gets the whole summary or nothing: ``path`` is written through a temporary file and
    renamed (on a failure the temporary file and any earlier file at ``path`` are removed, so no
    summary of another run stands for this one), and an append that fails is cut back, so the
    step summary keeps exactly what it held before.

    Args:
        record: The finished run record.
        gate: The regression gate, or None.
        path: The ``--groundeval-summary-md`` file, or None.
        environ: The environment (default ``os.environ``), read for ``GITHUB_STEP_SUMMARY``.

    Returns:
        The files written, in that order.

    Raises:
        OSError: A file cannot be written; its ``filename`` names it (the caller decides what the run does).
    """
    env = os.environ if environ is None else environ
    text = summary_markdown(record, gate)
    written: list[Path] = []
    if path is not None:
        target = Path(path)
        with named(target):
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                replace_whole(target, text)
            except OSError:
                if target.is_file() or target.is_symlink():
                    with contextlib.suppress(OSError):
                        target.unlink()
                raise
        written.append(target)
    step = env.get("GITHUB_STEP_SUMMARY")
    if step:
        with named(step):
            append_whole(step, text.encode("utf-8", "surrogatepass"))
        written.append(Path(step))
    return written


def _gate_md(gate: GateResult) -> list[str]:
    if gate.problems:
        return [f"regression gate: not applied ({md_escape('; '.join(gate.problems))})"]
    head = (f"**regressions vs `{gate.baseline_run_id}`: {len(gate.regressed)}**, **lost: {len(gate.lost)}**, "
            f"improved: {len(gate.improved)}")
    lines = [head + f" (of {len(gate.cases)} compared cases)"]
    if gate.pass_rate_interval is not None:
        iv = gate.pass_rate_interval
        lines[0] += f"; pass rate change {iv.mean:+.3f}, 95% interval {iv.text()}"
    if gate.regressed:
        lines += ["", "| regressed case | baseline | now |", "| --- | ---: | ---: |"]
        lines += [f"| {md_code(c.case_id)} | {c.baseline_passes}/{c.baseline_trials} | "
                  f"{c.current_passes}/{c.current_trials} |" for c in gate.regressed[:MAX_LISTED]]
        lines += _more(len(gate.regressed), "regressed cases")
    lines += _lost_md(gate)
    return lines


def _lost_md(gate: GateResult, fail_on_regression: bool = True) -> list[str]:
    """Why the gate fails, then the lost cases (passed in the baseline, no verdict now) with their outcomes.

    ``fail_on_regression``: the gate's verdict sets the exit status (a run with the flag, ``compare
    --fail-on-regression``); without it the gate is said to be one that would fail.
    """
    verdict = ("**regression gate failed**" if fail_on_regression
               else "regression gate: would fail with --fail-on-regression")
    lines = ["", f"**{md_escape(gate.ungated_line())}**"] if gate.ungated is not None else []
    lines += ["", f"{verdict}: {md_escape('; '.join(gate.reasons()))}"] if gate.failed else []
    if gate.lost:
        lines += ["", "| lost case (a verdict before, none now) | baseline | now |", "| --- | ---: | --- |"]
        lines += [f"| {md_code(c.case_id)} | {c.baseline_passes}/{c.baseline_trials} | {md_escape(c.outcome)} |"
                  for c in gate.lost[:MAX_LISTED]]
        if len(gate.lost) > MAX_LISTED:
            lines += ["", f"and {len(gate.lost) - MAX_LISTED} more lost cases"]
    if gate.collection_errors:
        lines += ["", "case files that could not be read (collection errors):", ""]
        lines += [f"- {md_escape(e)}" for e in gate.collection_errors[:MAX_LISTED]]
        if len(gate.collection_errors) > MAX_LISTED:
            lines += ["", f"and {len(gate.collection_errors) - MAX_LISTED} more"]
    if gate.invalid_cases:
        lines += ["", "case files that failed their checks (invalid_case):", ""]
        lines += [f"- {md_escape(e)}" for e in gate.invalid_cases[:MAX_LISTED]]
        if len(gate.invalid_cases) > MAX_LISTED:
            lines += ["", f"and {len(gate.invalid_cases) - MAX_LISTED} more"]
    return lines


def comparison_markdown(comp: Comparison, fail_on_regression: bool = False) -> str:
    """The comparison (``groundeval compare --format markdown``) as Markdown.

    Args:
        comp: The comparison.
        fail_on_regression: The command exits 1 when the gate fails (the gate's line says so).
    """
    lines = ["### groundeval compare", "", f"- A (baseline): {md_code(run_line(comp.a))}",
             f"- B (current): {md_code(run_line(comp.b))}",
             f"- checked: {md_escape('; '.join(comp.checked))}"]
    lines += [f"- **problem**: {md_escape(p)}: not compared case by case" for p in comp.problems]
    lines += [f"- **warning**: {md_escape(w)}" for w in comp.warnings]
    lines += ["", f"#### {md_escape(comp.b.task)}", "", "| figure | A | B | B-A | 95% interval | Wilcoxon p |",
              "| --- | ---: | ---: | ---: | --- | ---: |"]
    for f in comp.figures:
        iv = f.interval
        ivs = (iv.text() + (" **\\***" if iv.distinguishable else "")) if iv else ""
        lines.append(f"| {md_escape(f.name)} | {fmt(f.a)} | {fmt(f.b)} | {fmt(f.diff, sign=True)} | {ivs} | "
                     f"{fmt_p(iv.p_value) if iv else ''} |")
    lines += ["", f"<sub>{md_escape(METHOD)}; \\* = the interval excludes 0</sub>", ""]
    gate = comp.gate
    lines.append(f"{len(comp.cases)} cases compared, {len(comp.changed)} changed: **{len(gate.regressed)} regressed** "
                 f"(passed -> not passed), **{len(gate.lost)} lost** (a verdict before, none now: excluded, not run or "
                 f"unreadable), {len(gate.improved)} improved")
    lines += _lost_md(gate, fail_on_regression)
    if fail_on_regression and not gate.failed and gate.ungated is None:
        lines += ["", f"**{md_escape(PASSED_LINE)}**"]
    if comp.changed:
        lines += ["", "| case | verdict | changed dimensions |", "| --- | --- | --- |"]
        for c in comp.changed[:MAX_LISTED]:
            changes = ", ".join(f"{k} {change_value(comp, k, x)}→{change_value(comp, k, y)}"
                                for k, (x, y) in c.changes.items())
            lines.append(f"| {md_code(c.case_id)} | {c.verdict} | {md_escape(changes)} |")
        lines += _more(len(comp.changed), "changed cases")
    for side, ids in (("A", comp.only_a), ("B", comp.only_b)):
        if ids and not comp.problems:
            cases, kinds = unmatched(ids)
            shown = [_listed(cases)] if cases else []
            if kinds:  # twins as a count per perturbation, not a wall of ids
                shown.append(f"{sum(kinds.values())} counterfactual twins "
                             f"({', '.join(f'{k} {n}' for k, n in kinds.items())})")
            lines += ["", f"only in {side}: " + "; ".join(shown)]
    if gate.not_compared:
        lines += ["", "not compared: " + "; ".join(f"{md_code(k)} ({md_escape(v)})"
                                                   for k, v in list(gate.not_compared.items())[:MAX_LISTED])]
    return "\n".join(lines) + "\n"
