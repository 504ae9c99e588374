"""What a new user read wrong: "ran" figures, the cached denominator, junit None, the no-key hint, trial ids, options."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from groundeval.agents.base import for_task
from groundeval.agents.claude import NO_KEY_HINT
from groundeval.agents.langgraph_agent import NO_KEY_HINT as LANGGRAPH_NO_KEY_HINT
from groundeval.plugin.items import select_by_node_id
from groundeval.plugin.junit import junit_properties, suite_properties
from groundeval.plugin.option_table import OPTIONS
from groundeval.plugin.summary import _run_shape, format_table
from groundeval.records.aggregate import summarize
from groundeval.records.outcomes import OUTCOMES, POLICY, RAN
from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.records.scope import pass_rate_ran, ran, scope_text
from groundeval.registry import builtin_tasks
from groundeval.reporting import compare_runs
from groundeval.tasks import make_task
from tests._paths import REPO
from tests._records import case, run

ROOT = REPO


def _invalid(case_id: str, **extra: Any) -> CaseRecord:
    return case(case_id, "invalid_case", counted=False, answered=False, metrics={}, latency_s=None, **extra)


def _record(cases: list[CaseRecord], **extra: Any) -> RunRecord:
    rec = run(cases, **extra)
    return rec.model_copy(update={"aggregate": summarize(make_task("extraction"), cases)})


def _forty_seven_and_one_invalid(**extra: Any) -> RunRecord:
    return _record([case(f"c{i:02d}", **extra) for i in range(47)] + [_invalid("bad")])


def test_ran_is_declared_on_the_outcome_rules() -> None:
    assert {rule.outcome for rule in POLICY if not rule.agent_ran} == {"invalid_case", "not_run"}
    assert {rule.outcome for rule in POLICY if rule.agent_ran} == RAN
    assert {"agent_error", "harness_error", "infra_error"} <= RAN  # crashing cannot raise the figure


def test_an_invalid_case_never_counts_as_ran_anywhere() -> None:
    rec = _forty_seven_and_one_invalid()
    agg = rec.aggregate
    assert (agg.counted, agg.excluded, ran(agg)) == (47, 1, 47)
    assert agg.pass_rate_ran == 1.0 == pass_rate_ran(agg)
    want = "scored 47 of 48 cases: 1 excluded (invalid_case 1), 0 not run; pass rate over every case that ran: 1.000"
    assert scope_text(agg) == want
    lines = format_table(agg, "h")
    assert want in lines and any(line.endswith("(over the 47 counted cases; 47 ran)") for line in lines)
    assert dict(suite_properties(rec))["pass_rate_ran"] == 1.0
    comp = compare_runs(rec, rec.model_copy(update={"run_id": "B", "complete": False, "stop_reason": "interrupted"}))
    assert next(f for f in comp.figures if f.name == "pass_rate_ran").b == 1.0
    assert any("47 of 48 selected cases ran" in w for w in comp.warnings)


def test_errors_still_count_as_ran_and_not_passed() -> None:
    cases = [case("c1"), case("c2", "agent_error"), case("c3", "harness_error"), case("c4", "infra_error"),
             _invalid("c5"), case("c6", "not_run")]
    agg = _record(cases).aggregate
    assert ran(agg) == 4 and agg.pass_rate_ran == pytest.approx(0.25)


def test_outputs_read_the_stored_pass_rate_ran_and_derive_it_only_for_a_record_without_one() -> None:
    """Data flows one way: summarize() computes pass_rate_ran once; every output reads that value."""
    rec = _forty_seven_and_one_invalid()
    stored = rec.model_copy(update={"aggregate": rec.aggregate.model_copy(update={"pass_rate_ran": 0.5})})
    assert pass_rate_ran(stored.aggregate) == 0.5  # what the record says, not recomputed downstream
    older = rec.model_copy(update={"aggregate": rec.aggregate.model_copy(update={"pass_rate_ran": None})})
    assert pass_rate_ran(older.aggregate) == 1.0  # written before the field existed: passed / ran (47 / 47)


def test_cached_answers_are_counted_out_of_the_answers_asked_for() -> None:
    rec = _forty_seven_and_one_invalid(cached=True)
    assert rec.aggregate.cached == 47
    assert any(line.startswith("cached: 47 of 47 answers came from the cache") for line in _run_shape(rec))


def test_every_none_is_an_empty_junit_property() -> None:
    record = _invalid("bad", usage={"input_tokens": None}, attempts=None)
    props = dict(junit_properties(record, ["f1", "precision"]))
    assert props["latency_s"] == "" and props["input_tokens"] == "" and props["f1"] == ""
    assert props["attempts"] == "" and all(v is not None for v in props.values())
    assert dict(junit_properties(case("ok", latency_s=1.23456)))["latency_s"] == 1.235
    suite = _record([case("c1", "not_run")])  # nothing counted: every rate None
    assert all(v is not None for _, v in suite_properties(suite)) and dict(suite_properties(suite))["pass_rate"] == ""


def test_the_no_key_hint_names_every_built_in_tasks_offline_agent_and_its_extra() -> None:
    offline = {task: entry.offline_agent for task, entry in builtin_tasks().items()}
    assert offline == {"extraction": "baseline", "write": "baseline-write", "reconcile": "baseline-reconcile",
                       "labs": "baseline-labs", "summary": "baseline-summary"}
    for hint in (NO_KEY_HINT, LANGGRAPH_NO_KEY_HINT):
        assert "\n" not in hint
        for task, agent in offline.items():
            assert f"--groundeval-agent={agent} ({task})" in hint
        assert "baseline and baseline-write need the healthchain extra: pip install 'groundeval[healthchain]'" in hint

    # once the run's task is known, the message names that task's agent only (or a replay, for a task
    # that is not built in)
    for task, agent in offline.items():
        narrowed = for_task(NO_KEY_HINT, task)
        assert f"--groundeval-agent={agent} (CLI: --agent {agent})" in narrowed
        assert [a for a in offline.values() if f"--groundeval-agent={a} " in narrowed] == [agent], narrowed
    assert "--groundeval-agent=replay:RUN.json" in for_task(LANGGRAPH_NO_KEY_HINT, "my_tasks:Conditions")
    assert for_task("another message", "labs") == "another message"


def _items(*names: str, trial: int = 0) -> list[Any]:
    return [SimpleNamespace(nodeid=f"groundeval/extraction::{n}", trial=trial) for n in names]


@pytest.mark.parametrize(("wanted", "items", "need"), [
    ("Liz_Conn_27c911c6[trial-1]", _items("Liz_Conn_27c911c6"), 2),
    ("Liz_Conn_27c911c6[trial-0]", _items("Liz_Conn_27c911c6"), 2),
    ("Liz_Conn_27c911c6[trial-3]", _items("Liz_Conn_27c911c6[trial-0]") + _items("Liz_Conn_27c911c6[trial-1]", trial=1),
     4),
])
def test_a_trial_id_this_run_does_not_have_says_to_pass_trials(wanted: str, items: list[Any], need: int) -> None:
    with pytest.raises(pytest.UsageError) as info:
        select_by_node_id(None, items, [f"groundeval/extraction::{wanted}"], Path("data"))  # type: ignore[arg-type]
    assert f"pass --groundeval-trials {need} (or more)" in str(info.value)
    assert "without the suffix ('groundeval/extraction::Liz_Conn_27c911c6')" in str(info.value)
    with pytest.raises(pytest.UsageError, match=r"^no case 'groundeval/extraction::Nobody'.*case ids look like"):
        select_by_node_id(None, items, ["groundeval/extraction::Nobody"], Path("data"))  # type: ignore[arg-type]


def test_the_options_page_has_every_option() -> None:
    section = (ROOT / "docs" / "reference" / "options.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `--groundeval-([a-z0-9-]+)", section, flags=re.MULTILINE))
    assert {o.name for o in OPTIONS} <= rows, sorted({o.name for o in OPTIONS} - rows)
    assert OUTCOMES["invalid_case"].agent_ran is False


def test_the_shared_sentences_are_stored_once_and_every_output_reads_them() -> None:
    """summarize() writes the scope sentences; the terminal, junit, Markdown, HTML and compare print what is stored."""
    from groundeval.reporting import summary_markdown
    from groundeval.reporting.html import render_report

    rec = _forty_seven_and_one_invalid()
    assert rec.aggregate.statements["scope"] == scope_text(rec.aggregate)
    marked = "scored 47 of 48 cases: STORED SENTENCE"
    stored = rec.model_copy(update={"aggregate": rec.aggregate.model_copy(
        update={"statements": {**rec.aggregate.statements, "scope": marked}})})
    assert marked in format_table(stored.aggregate, "h")
    assert dict(suite_properties(stored))["scope"] == marked
    assert marked in summary_markdown(stored)
    assert marked in render_report(stored)
    other = stored.model_copy(update={"run_id": "B"})
    assert any(marked in w for w in compare_runs(stored, other).warnings)
    older = rec.model_copy(update={"aggregate": rec.aggregate.model_copy(update={"statements": {}})})
    assert dict(suite_properties(older))["scope"] == scope_text(rec.aggregate)  # a record from before: derived
