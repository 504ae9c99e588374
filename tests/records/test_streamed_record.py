"""The end of a run from light copies, and the record streamed from the partial file, equal today's whole-record outputs.

A real run (five packaged cases, two trials, counterfactual twins, a scripted agent with passes,
a partial, failures and a crash) gives whole case records. From them: every end-of-run output
(aggregate and intervals, counterfactual sensitivity, Markdown summary, junit suite properties,
terminal summary, the regression gate) is built once from the whole records and once from their
light copies (``records.light``), and the record text is written once by pydantic and once by
``records.run_writer`` from a partial file; each pair must be equal.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from groundeval.plugin.junit import suite_properties
from groundeval.plugin.summary import write_summary
from groundeval.records.aggregate import summarize
from groundeval.records.light import META_KEYS, light_copy
from groundeval.records.run_record import RunRecord
from groundeval.records.run_writer import PARTIAL_HEADER_KEY, RunWriter, stream_record
from groundeval.records.sensitivity import is_twin
from groundeval.reporting import regressions, summary_markdown
from groundeval.reporting.cases import load_record
from groundeval.tasks import make_task

from ..plugin.conftest import AGENT_MODULE, PICK


@pytest.fixture
def whole_run(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> RunRecord:
    copy_fixtures(pytester.path / "data", PICK)
    pytester.makepyfile(scripted_agent=AGENT_MODULE)
    pytester.syspathinsert()
    pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=scripted_agent:agent",
                       "--groundeval-data-dir=data", "-p", "no:cacheprovider", "--groundeval-trials=2",
                       "--groundeval-counterfactual", "--groundeval-twin-seed=5")
    (path,) = (pytester.path / "runs").glob("*.json")
    return load_record(path)


class _Terminal:
    """Enough of pytest's TerminalReporter for ``write_summary``: every line it writes."""

    def __init__(self) -> None:
        self.out = io.StringIO()

    def write_line(self, line: str, **_: Any) -> None:
        self.out.write(line + "\n")

    def write_sep(self, sep: str, title: str = "", **_: Any) -> None:
        self.out.write(f"{sep} {title}\n")


def _terminal(record: RunRecord) -> str:
    tr = _Terminal()
    write_summary(tr, record, None)
    return tr.out.getvalue()


def test_every_end_of_run_output_is_the_same_from_light_copies(whole_run: RunRecord) -> None:
    record = whole_run
    assert {c.outcome for c in record.cases} >= {"passed", "partial", "failed", "agent_error"}
    assert record.aggregate.counterfactual is not None  # the twins' figures are exercised
    light = record.model_copy(update={"cases": [light_copy(c, keep_parsed=True) for c in record.cases]})
    assert all(c.conversation is None and c.truth is None and c.prompt_sha256 is None for c in light.cases)
    # meta keeps only what sensitivity reads: something was dropped, and the twins' facts were kept
    assert any(set(c.meta) - set(META_KEYS) for c in record.cases)
    assert all(set(c.meta) <= set(META_KEYS) for c in light.cases)
    assert any("counterfactual" in c.meta for c in light.cases)
    # a failed case's message keeps its first line; a partial case's stays whole (the terminal prints it)
    assert any(c.outcome == "failed" and "\n" in c.message for c in record.cases)
    assert all("\n" not in c.message for c in light.cases if c.outcome == "failed")
    assert any(c.outcome == "partial" and "\n" in c.message for c in light.cases)
    task = make_task("extraction")
    selected = record.aggregate.selected
    assert summarize(task, light.cases, selected=selected) == summarize(task, record.cases, selected=selected)
    assert summary_markdown(light) == summary_markdown(record)
    assert suite_properties(light) == suite_properties(record)
    assert _terminal(light) == _terminal(record)
    gate_whole, gate_light = regressions(record, record), regressions(record, light)
    assert gate_light.summary_lines() == gate_whole.summary_lines() and gate_light.failed == gate_whole.failed


def test_without_parsed_answers_a_counterfactual_figure_would_change(whole_run: RunRecord) -> None:
    """The light copy keeps ``parsed`` in a counterfactual run for a reason: the sensitivity reads it."""
    task = make_task("extraction")
    bare = [light_copy(c, keep_parsed=False) for c in whole_run.cases]
    assert summarize(task, bare, selected=whole_run.aggregate.selected) != whole_run.aggregate


def test_outside_a_counterfactual_run_the_bare_light_copies_give_the_same_outputs(whole_run: RunRecord) -> None:
    """Without twins, a light copy without ``parsed`` and ``started_at`` (what a plain run keeps) changes no output."""
    originals = [c for c in whole_run.cases if not is_twin(c)]
    whole = whole_run.model_copy(update={"cases": originals})
    whole = whole.model_copy(update={"aggregate": summarize(make_task("extraction"), originals)})
    bare = whole.model_copy(update={"cases": [light_copy(c, keep_parsed=False) for c in originals]})
    assert all(c.started_at is None and c.parsed is None for c in bare.cases)
    assert any(c.started_at for c in whole.cases)
    assert summarize(make_task("extraction"), bare.cases) == whole.aggregate
    assert summary_markdown(bare) == summary_markdown(whole)
    assert suite_properties(bare) == suite_properties(whole)
    assert _terminal(bare) == _terminal(whole)


def test_the_record_written_from_the_partial_file_is_pydantics_text(whole_run: RunRecord, tmp_path: Path) -> None:
    writer = RunWriter(tmp_path, whole_run.run_id)
    writer.set_header({"run_id": whole_run.run_id})
    for case in whole_run.cases[:-1]:  # the last one stays whole in memory (as after a failed write)
        writer.append(case)
    lines = writer.partial.read_text().splitlines()
    assert len(lines) == len(whole_run.cases) and PARTIAL_HEADER_KEY in lines[0]
    light = whole_run.model_copy(update={
        "cases": [light_copy(c) for c in whole_run.cases[:-1]] + [whole_run.cases[-1]]})
    path = writer.finish(light)
    assert path.read_text() == whole_run.model_dump_json(indent=2) + "\n"
    assert not writer.partial.exists()
    empty = whole_run.model_copy(update={"cases": []})
    assert "".join(stream_record(empty, lambda c: c)) == empty.model_dump_json(indent=2) + "\n"


def test_the_long_lists_are_streamed_entry_by_entry(whole_run: RunRecord) -> None:
    """No piece of the streamed text holds a whole per-case list: cases, fixtures and ``trials.per_case`` come an entry at a time."""
    assert whole_run.aggregate.trials is not None and len(whole_run.aggregate.trials.per_case) > 2
    assert len(whole_run.fixtures) > 2
    pieces = list(stream_record(whole_run, lambda c: c))
    assert "".join(pieces) == whole_run.model_dump_json(indent=2) + "\n"
    longest = max(pieces, key=len)
    assert '"per_case": [\n' not in longest and '"fixtures": [\n' not in longest and '"cases": [\n' not in longest
    assert len(longest) < len(whole_run.model_dump_json(indent=2)) // 4


def _intervals_from_value_lists(records: list[Any], figures: list[str]) -> dict[str, Any]:
    """The intervals as they were computed before the compact columns: every case's values per dimension, in lists."""
    from collections import defaultdict

    from groundeval.records.dimensions import dimension_values, figure_dimension
    from groundeval.records.trial_stats import _groups, cluster_interval, proportion_interval

    per_case: list[dict[str, list[float]]] = []
    for trials in _groups(records).values():
        dims: dict[str, list[float]] = defaultdict(list)
        for rec in trials:
            for name, value in dimension_values(rec).items():
                dims[name].append(value)
        per_case.append(dims)
    out: dict[str, Any] = {}
    for figure in figures:
        dim = figure_dimension(figure)
        values = [d[dim] for d in per_case if dim is not None and d.get(dim)]
        if not values:
            continue
        pooled = sum(map(sum, values)) / sum(map(len, values))
        if all(v in (0.0, 1.0) for vs in values for v in vs):
            interval = proportion_interval(pooled, len(values))
        else:
            interval = cluster_interval([sum(vs) for vs in values], [len(vs) for vs in values])
            if interval is not None and interval.method == "exact":
                bounded = all(0.0 <= v <= 1.0 for vs in values for v in vs)
                interval = proportion_interval(pooled, len(values)) if bounded else None
        if interval is not None:
            out[figure] = interval
    return out


def test_the_intervals_from_compact_columns_equal_those_from_every_value(whole_run: RunRecord) -> None:
    """``trial_stats`` keeps a sum and a count per case and dimension, not the values: the intervals are the same."""
    from groundeval.records.trial_stats import _groups, _intervals

    originals = [light_copy(c) for c in whole_run.cases if not is_twin(c)]
    figures = ["pass_rate", "answer_rate", *(k for k, v in whole_run.aggregate.metrics.items() if isinstance(v, float))]
    compact = _intervals(_groups(originals), figures)
    assert {iv.method for iv in compact.values()} >= {"wilson", "bootstrap-bca"}  # both rules are exercised
    assert compact == _intervals_from_value_lists(originals, figures)
