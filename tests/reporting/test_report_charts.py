"""Which headline figures the HTML report draws on its 0-to-1 axis of rates."""

from __future__ import annotations

import re

from groundeval.reporting.html import render_report
from tests._records import case, run


def _rate_rows(html: str) -> list[str]:
    start = html.index('aria-label="rates with their 95% intervals"')
    return re.findall(r">([a-z][a-z0-9_]*)<", html[start:html.index("</svg>", start)])


def test_only_rates_are_drawn_on_the_rate_axis_not_figures_that_merely_fall_in_0_to_1() -> None:
    record = run([case("c1"), case("c2", "partial", f1=0.5), case("c3", f1=0.8)])
    facts = {"judge_kappa": 0.97, "judge_temperature": 0.0, "judge_cost_usd": 0.0, "words": 0.5}
    record = record.model_copy(update={
        "aggregate": record.aggregate.model_copy(update={"metrics": {**record.aggregate.metrics, **facts}}),
        "metric_directions": {"words": "none", "judge_cost_usd": "none"},
    })
    rows = _rate_rows(render_report(record))
    # rates and means of per-case scores (with or without an interval) and micro averages are drawn
    assert {"pass_rate", "answer_rate", "macro_f1", "micro_f1"} <= set(rows)
    # a judge's kappa and temperature, a cost and a mean count are not rates, whatever their value
    assert not set(rows) & set(facts), rows
