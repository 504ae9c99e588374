"""junit XML properties of a case, read from its finished record.

Every testcase carries the same property names in the same order, so dashboard columns line up:
run metadata (repeated on every testcase because suite-level properties are lost under
pytest-xdist, pytest-dev/pytest#7767), the outcome, every metric the task declares (empty when not
applicable), then latency, attempts, usage and the agent's facts. Values are primitives; booleans
are written ``true``/``false``, and any value that is None (a metric, ``latency_s`` of a case whose
agent was never called, a usage count) is an empty property value, never ``0``: every property
goes through one conversion (``_value``) on its way out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from groundeval.records.run_record import Aggregate, CaseRecord, RunRecord, TrialStats
from groundeval.records.scope import pass_rate_ran, statement, ungated_note
from groundeval.scoring import Metric

__all__ = ["FACT_KEYS", "junit_properties", "suite_properties"]

FACT_KEYS = (
    "stop_reason", "request_id", "tool_calls", "model_calls", "last_tool", "recursion_limit",
    "fixture_changed", "prompt_changed",
)
"""Agent facts copied into properties when the agent reported them (``agent_meta`` or error details)."""


def _value(value: object) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return value
    return json.dumps(value, sort_keys=True)


def junit_properties(record: CaseRecord, metric_names: Sequence[str] = ()) -> list[tuple[str, Metric]]:
    """Flatten a case record into junit ``(name, primitive)`` properties.

    Args:
        record: The finished case record.
        metric_names: Every metric the task can emit; each appears on every testcase (empty when
            the case has no value for it). Metrics outside the list follow in the record's order.
    """
    props: list[tuple[str, object]] = [
        ("task", record.task),
        ("agent", record.agent),
        ("model", record.model or ""),
        ("run_id", record.run_id),
        ("outcome", record.outcome),
        ("counted", _value(record.counted)),
        ("answered", _value(record.answered)),
        ("trial", record.trial),
        ("cached", _value(record.cached)),
    ]
    names = list(metric_names) + [k for k in record.metrics if k not in metric_names]
    props += [(name, _value(record.metrics.get(name))) for name in names]
    if "format_ok" not in names:
        props.append(("format_ok", _value(record.format_ok)))
    props.append(("latency_s", None if record.latency_s is None else round(record.latency_s, 3)))
    props.append(("attempts", _value(record.attempts)))
    props += [(key, _value(value)) for key, value in record.usage.items()]
    facts = {**(record.error.details if record.error else {}), **record.agent_meta}
    if "tool_calls" not in facts and record.trace:
        facts["tool_calls"] = len(record.trace)  # agents that keep a trace but no count
    props += [(key, _value(facts.get(key))) for key in FACT_KEYS if key in facts]
    props.append(("error_type", record.error.type if record.error else ""))
    twin = record.meta.get("counterfactual")
    if isinstance(twin, dict):  # a counterfactual twin: what it is a twin of, and what was changed
        props += [("counterfactual_of", twin.get("of")), ("perturbation", twin.get("kind")),
                  ("change", twin.get("change"))]
    return [(name, _value(value)) for name, value in props]  # None -> "", bool -> true/false, whatever the row


def suite_properties(record: RunRecord) -> list[tuple[str, str | int | float]]:
    """Run-level headline figures for the ``<testsuite>`` element, written by the controlling process.

    pytest's ``record_testsuite_property`` is lost under pytest-xdist (pytest-dev/pytest#7767)
    because workers call it; these are added by the process that writes the junit file, from the
    finished run record, so they are the same serially and under ``-n``. ``scope`` comes before
    ``pass_rate``: how many cases were scored of those selected, the excluded ones by outcome, the
    not-run ones and the pass rate over every case that ran (``groundeval.records.scope.scope_text``);
    ``pass_rate_ran`` is that last figure (excluded cases count as not passed). ``pass_rate_gated`` is
    ``true``, or the sentence saying why the verdicts behind the pass rate are not gated (an
    uncalibrated or unreliable judge: ``scope.ungated_note``). From ``Aggregate.trials``:
    each interval as ``<figure>_ci_low``/``<figure>_ci_high``, ``trials`` (K), ``pass_at_1``,
    ``pass_at_k`` and ``pass_hat_k`` (pass^k) at k = K, ``min_pass_rate`` (empty when not given),
    ``cases_judged`` and ``cases_passed`` (the case verdicts), and what they leave out:
    ``pass_at_k_cases`` (cases averaged at k = K), ``pass_at_k_scope`` and ``cases_scope`` (why
    cases are missing; empty when none are), ``cases`` (distinct case ids). ``collection_errors``
    counts the case files that could not be read (they are testcases without properties).
    """
    agg = record.aggregate
    props: list[tuple[str, str | int | float]] = [
        ("groundeval_task", record.task), ("run_id", record.run_id), ("agent", record.agent),
        ("model", record.model or ""), ("complete", _value(record.complete)),
        ("selected", agg.selected), ("counted", agg.counted), ("excluded", agg.excluded), ("not_run", agg.not_run),
        ("collection_errors", len(record.collection_errors)),
        ("scope", statement(agg, "scope")), ("pass_rate", _value(agg.pass_rate)),
        ("pass_rate_gated", ungated_note(record.task_facts) or "true"),
        ("pass_rate_ran", _value(pass_rate_ran(agg))), ("answer_rate", _value(agg.answer_rate)),
    ]
    props += [(key, _value(value)) for key, value in agg.metrics.items()]
    props += [(said, line) for said in ("counterfactual", "grounding", "fhir") if (line := agg.statements.get(said))]
    if "cost_usd" in agg.usage:
        props.append(("cost_usd", _value(agg.usage["cost_usd"])))
    return [(name, _value(value)) for name, value in props + _trial_properties(agg.trials, agg)]


def _trial_properties(stats: TrialStats | None, agg: Aggregate) -> list[tuple[str, str | int | float]]:
    """``<figure>_ci_low``/``_ci_high``/``_ci_method``, ``trials``, ``pass_at_1``/``_k``, ``pass_hat_k``, verdicts."""
    if stats is None:
        return []
    props: list[tuple[str, str | int | float]] = []
    for name, iv in stats.intervals.items():
        props += [(f"{name}_ci_low", iv.low), (f"{name}_ci_high", iv.high), (f"{name}_ci_method", iv.method)]
    head = stats.headline
    props += [
        ("trials", stats.k), ("pass_at_1", _value(stats.pass_k[0].pass_at_k if stats.pass_k else None)),
        ("pass_at_k", _value(head.pass_at_k if head else None)),
        ("pass_hat_k", _value(head.pass_hat_k if head else None)),
        ("pass_at_k_cases", head.cases if head else 0),
        ("pass_at_k_scope", statement(agg, "pass_k_scope") if head else ""),
        ("cases", stats.cases), ("min_pass_rate", _value(stats.min_pass_rate)), ("cases_judged", stats.cases_judged),
        ("cases_passed", stats.cases_passed), ("cases_scope", statement(agg, "cases_scope")),
    ]
    return props
