"""A headline figure an agent can raise by crashing or by not running is a bug: every output says what it covers.

Records are built in the test (``tests/_records.py``) and aggregated by the runner's ``summarize``;
no eval run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundeval.cli.tools import compare_main
from groundeval.plugin.junit import suite_properties
from groundeval.plugin.summary import format_table
from groundeval.records.aggregate import summarize
from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.reporting import BaselineGate, compare_runs, regressions, summary_markdown
from groundeval.reporting.html import render_report
from groundeval.reporting.render import comparison_dict, comparison_text, fmt, fmt_p
from groundeval.reporting.stats import Interval
from groundeval.reporting.summary_md import comparison_markdown
from groundeval.tasks import make_task
from tests._records import case, run

CRASH_SCOPE = "scored 21 of 48 cases: 27 excluded (agent_error 27), 0 not run; pass rate over every case that ran: 0.438"


def _record(cases: list[CaseRecord], run_id: str = "run-a", min_pass_rate: float | None = None,
            **extra: Any) -> RunRecord:
    rec = run(cases, run_id=run_id, **extra)
    agg = summarize(make_task("extraction"), cases, min_pass_rate=min_pass_rate)
    return rec.model_copy(update={"aggregate": agg})


def _baseline() -> RunRecord:
    """48 cases, every one passed."""
    return _record([case(f"c{i:02d}", run_id="A") for i in range(48)], run_id="A")


def _crasher() -> RunRecord:
    """An agent that raises on the 27 cases it would fail: 21 passed, 27 agent_error."""
    cases = [case(f"c{i:02d}", "passed" if i < 21 else "agent_error", run_id="B") for i in range(48)]
    return _record(cases, run_id="B")


def _stopped() -> RunRecord:
    """A run B that stopped before any case ran: 48 not_run, ``complete: false``."""
    cases = [case(f"c{i:02d}", "not_run", run_id="B") for i in range(48)]
    return _record(cases, run_id="B", complete=False, stop_reason="auth_error: 401 from the API")


def test_the_crasher_has_a_perfect_pass_rate_and_every_output_says_so_first() -> None:
    rec = _crasher()
    agg = rec.aggregate
    assert (agg.pass_rate, agg.excluded) == (1.0, 27) and agg.pass_rate_ran == pytest.approx(21 / 48)
    text = format_table(agg, "header")
    assert text.index(CRASH_SCOPE) < next(i for i, line in enumerate(text) if line.startswith("pass rate:"))
    md = summary_markdown(rec)
    assert f"**{CRASH_SCOPE}**" in md and md.index(CRASH_SCOPE) < md.index("**pass rate 1.000**")
    html = render_report(rec)
    assert 'id="scope-1"' in html and CRASH_SCOPE in html
    assert html.index(CRASH_SCOPE) < html.index('data-figure="pass_rate"')
    props = suite_properties(rec)
    names = [k for k, _ in props]
    assert dict(props)["scope"] == CRASH_SCOPE and names.index("scope") < names.index("pass_rate")
    assert dict(props)["pass_rate"] == 1.0 and dict(props)["pass_rate_ran"] == pytest.approx(21 / 48)


def test_a_clean_run_prints_no_scope_line_but_junit_always_has_pass_rate_ran() -> None:
    rec = _baseline()
    assert not any(line.startswith("scored ") for line in format_table(rec.aggregate, "header"))
    assert "scored 48 of 48" not in summary_markdown(rec).split("**pass rate")[0]
    assert 'id="scope-1"' not in render_report(rec)
    props = dict(suite_properties(rec))
    assert props["pass_rate_ran"] == 1.0 and str(props["scope"]).startswith("scored 48 of 48 cases: 0 excluded")


def test_not_run_cases_are_stated_too() -> None:
    cases = [case("c1"), case("c2", "failed"), case("c3", "not_run"), case("c4", "infra_error")]
    rec = _record(cases, complete=False, stop_reason="interrupted")
    want = "scored 2 of 4 cases: 1 excluded (infra_error 1), 1 not run; pass rate over every case that ran: 0.333"
    assert want in format_table(rec.aggregate, "h") and want in summary_markdown(rec)
    assert dict(suite_properties(rec))["pass_rate_ran"] == pytest.approx(1 / 3)


def _trial_run() -> RunRecord:
    """3 trials: 40 cases pass all 3, 4 cases have one trial crashed (2 counted), 4 cases crashed on every trial."""
    cases = []
    for i in range(48):
        outcomes = ["passed"] * 3 if i < 40 else (["passed", "passed", "agent_error"] if i < 44 else ["agent_error"] * 3)
        cases += [case(f"c{i:02d}", o, trial=t, nodeid=f"groundeval/extraction::c{i:02d}[trial-{t}]")
                  for t, o in enumerate(outcomes)]
    return _record(cases)


def test_trials_say_which_cases_pass_k_and_the_verdicts_leave_out() -> None:
    rec = _trial_run()
    stats = rec.aggregate.trials
    assert stats is not None and stats.headline is not None
    assert (stats.headline.cases, stats.cases_judged, stats.cases_passed) == (40, 44, 44)
    pass_k = "over 40 of 48 cases: 4 with fewer than 3 counted trials, 4 with no counted trial"
    cases_note = "4 of 48 cases not judged: no counted trial (agent_error 12)"
    text = "\n".join(format_table(rec.aggregate, "h"))
    assert f"(pass@3/pass^3 {pass_k} (excluded or not run trials: agent_error 16))" in text
    assert f"cases passing (all their counted trials): 44/44  ({cases_note})" in text
    assert "trials: 3 per case, 44 of 48 cases judged" in text
    assert "scored 128 of 144 trials: 16 excluded (agent_error 16)" in text  # the pooled pass rate too
    md = summary_markdown(rec)
    assert "**3 trials per case** over 44 of 48 cases (judged)" in md
    assert f"pass@3/pass^3 {pass_k}" in md and f"**44/44**; {cases_note}" in md
    html = render_report(rec)
    assert pass_k in html and cases_note in html
    props = dict(suite_properties(rec))
    assert (props["pass_at_k_cases"], props["cases"], props["cases_judged"]) == (40, 48, 44)
    assert props["cases_scope"] == cases_note and str(props["pass_at_k_scope"]).startswith(pass_k)


def test_every_case_counted_in_every_trial_has_no_trial_notes() -> None:
    cases = [case(f"c{i}", "passed", trial=t) for i in range(3) for t in range(2)]
    props = dict(suite_properties(_record(cases)))
    assert props["pass_at_k_scope"] == "" and props["cases_scope"] == ""


def test_crashing_on_the_failures_is_lost_and_fails_the_gate() -> None:
    comp = compare_runs(_baseline(), _crasher())
    gate = comp.gate
    assert not gate.regressed and len(gate.lost) == 27 and gate.failed
    assert gate.lost[0].text() == "c21: passed 1/1 -> no verdict (agent_error)"
    assert not gate.not_compared  # lost is not "not compared"
    assert gate.reasons() == ["27 lost (a verdict before -> none now: agent_error 27)"]
    assert f"run B {CRASH_SCOPE}" in comp.warnings
    ran = next(f for f in comp.figures if f.name == "pass_rate_ran")
    assert ran.a == 1.0 and ran.b == pytest.approx(21 / 48) and ran.interval is None
    text = comparison_text(comp)
    assert "regressed (passed->not passed): 0, lost (a verdict->none: excluded, not run or unreadable): 27" in text
    assert "  LOST      c47: passed 1/1 -> no verdict (agent_error)" in text
    assert "regression gate: would fail with --fail-on-regression (exit status 0 without it): 27 lost" in text
    assert "regression gate FAILED" not in text  # plain compare exits 0: it must not say FAILED
    assert "regression gate FAILED (exit status 1): 27 lost" in comparison_text(comp, fail_on_regression=True)
    md = comparison_markdown(comp)
    assert "**0 regressed** (passed -> not passed), **27 lost**" in md and "| `c21` | 1/1 | agent_error |" in md
    data = comparison_dict(comp)
    assert data["gate_failed"] is True and data["regressed"] == [] and len(data["lost"]) == 27
    assert data["lost"][0]["outcome"] == "agent_error"
    html = render_report(_baseline(), _crasher())
    assert 'id="lost-count">27<' in html and 'id="gate-failed"' in html
    lines = regressions(_baseline(), _crasher()).summary_lines()  # the plugin's --groundeval-baseline gate
    assert lines[0].startswith("regressions vs A: 0  lost: 27") and "LOST c21: passed 1/1 -> no verdict (agent_error)" in lines
    assert summary_markdown(_crasher(), gate).count("| `c2") >= 1 and "**lost: 27**" in summary_markdown(_crasher(), gate)


def test_the_per_case_baseline_gate_knows_a_lost_case() -> None:
    gate = BaselineGate(_baseline())
    found = gate.lost([case("c03", "agent_error", run_id="B")])
    assert found is not None and found.text() == "c03: passed 1/1 -> no verdict (agent_error)"
    assert gate.lost([case("c03", "failed", run_id="B")]) is None and gate.lost([]) is None
    assert gate.lost([case("new", "agent_error", run_id="B")]) is None


def test_a_case_that_failed_and_now_errors_is_lost_too() -> None:
    # An agent that crashes on exactly the cases it used to fail raises its pass rate; the gate
    # must not let that through (a verdict before, none now).
    a = run([case("c1", "failed", run_id="A"), case("c2", run_id="A")], run_id="A")
    b = run([case("c1", "agent_error", run_id="B"), case("c2", run_id="B")], run_id="B")
    gate = regressions(a, b)
    assert gate.failed and [c.case_id for c in gate.lost] == ["c1"] and "c1" not in gate.not_compared
    assert gate.lost[0].text() == "c1: passed 0/1 -> no verdict (agent_error)"


def test_a_case_not_counted_in_the_baseline_is_only_not_compared() -> None:
    a = run([case("c1", "infra_error", run_id="A"), case("c2", run_id="A")], run_id="A")
    b = run([case("c1", "agent_error", run_id="B"), case("c2", run_id="B")], run_id="B")
    gate = regressions(a, b)
    assert not gate.failed and not gate.lost and "c1" in gate.not_compared


def test_a_run_wide_pass_rate_drop_beyond_noise_fails_the_gate_without_a_single_regression() -> None:
    # With 3 trials, a 3/3 -> 2/3 drop on one case is within noise (Fisher), on 20 cases it is not.
    a = run([case(f"c{i}", trial=t, run_id="A") for i in range(20) for t in range(3)], run_id="A")
    b = run([case(f"c{i}", "failed" if t == 0 else "passed", trial=t, run_id="B") for i in range(20) for t in range(3)],
            run_id="B")
    gate = regressions(a, b)
    assert not gate.regressed and not gate.lost and gate.pass_rate_dropped and gate.failed
    assert any(r.startswith("the pass rate dropped -0.333") for r in gate.reasons())


def test_trials_lost_only_when_every_trial_has_no_verdict() -> None:
    a = run([case("c1", trial=t, run_id="A") for t in range(2)] + [case("c2", trial=t, run_id="A") for t in range(2)])
    b = run([case("c1", "infra_error", trial=0, run_id="B"), case("c1", trial=1, run_id="B"),
             case("c2", "infra_error", trial=0, run_id="B"), case("c2", "not_run", trial=1, run_id="B")])
    gate = regressions(a, b)
    assert [(c.case_id, c.outcome) for c in gate.lost] == [("c2", "infra_error, not_run")]


def test_an_incomplete_run_b_warns_and_fails_the_gate() -> None:
    comp = compare_runs(_baseline(), _stopped())
    assert any(w.startswith("run B is incomplete (auth_error: 401 from the API): 0 of 48 selected cases ran, "
                            "48 not run") for w in comp.warnings)
    assert comp.gate.failed and comp.gate.incomplete == "auth_error: 401 from the API"
    assert len(comp.gate.lost) == 48 and comp.gate.lost[0].outcome == "not_run"
    assert "WARNING: run B is incomplete" in comparison_text(comp)
    # incomplete alone fails it, even with nothing lost: the cases that never ran cannot be vouched for
    partial = run([case("c1", run_id="B")], run_id="B", complete=False, stop_reason="interrupted")
    gate = regressions(run([case("c1", run_id="A")], run_id="A"), partial)
    assert gate.failed and gate.reasons() == ["the current run is incomplete (interrupted)"]


@pytest.mark.parametrize("current", [_crasher, _stopped])
def test_compare_cli_exits_1_on_lost_cases_and_incomplete_runs(
    tmp_path: Path, current: Any, capsys: pytest.CaptureFixture[str],
) -> None:
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(_baseline().model_dump_json(), encoding="utf-8")
    pb.write_text(current().model_dump_json(), encoding="utf-8")
    assert compare_main([str(pa), str(pb)]) == 0  # without the flag the comparison only reports
    assert compare_main([str(pa), str(pb), "--fail-on-regression", "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{"):])["gate_failed"] is True


def test_p_values_and_counts_are_not_rounded_to_zero() -> None:
    assert (fmt_p(0.0000123), fmt_p(0.0234), fmt_p(0.5), fmt_p(None)) == ("<0.001", "0.0234", "0.5", "")
    assert (fmt(2), fmt(-1, sign=True), fmt(0.5), fmt(None)) == ("2", "-1", "0.500", "-")
    a = run([case(f"c{i}", run_id="A", metrics={"tp": 3, "f1": 1.0}) for i in range(12)], run_id="A")
    b = run([case(f"c{i}", "failed", run_id="B", metrics={"tp": 1, "f1": i / 20}) for i in range(12)], run_id="B")
    a = a.model_copy(update={"aggregate": a.aggregate.model_copy(update={"metrics": {"macro_f1": 1.0,
                                                                                     "format_not_ok": 0}})})
    b = b.model_copy(update={"aggregate": b.aggregate.model_copy(update={"metrics": {"macro_f1": 0.275,
                                                                                     "format_not_ok": 2}})})
    comp = compare_runs(a, b)
    iv = next(f.interval for f in comp.figures if f.name == "macro_f1")
    assert isinstance(iv, Interval) and iv.p_value is not None and iv.p_value < 0.001  # 12 negative differences
    text = comparison_text(comp)
    f1_row = next(line for line in text.splitlines() if line.startswith("macro_f1"))
    assert f1_row.endswith("<0.001") and not f1_row.endswith("0.000")
    row = next(line for line in text.splitlines() if line.startswith("format_not_ok"))
    assert row.split()[1:4] == ["0", "2", "+2"]
    assert "tp 3->1" in text
    md = comparison_markdown(comp)
    assert "| format_not_ok | 0 | 2 | +2 |" in md and "tp 3→1" in md and "<0.001" in md
    html = render_report(a, b)
    assert ">+2</td>" in html and "tp 3 → 1" in html and "&lt;0.001" in html
