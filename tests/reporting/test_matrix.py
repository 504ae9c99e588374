"""N-way comparison: the model matrix of three runs, its renderings, the CLI and the HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundeval.cli import main as cli_main
from groundeval.records.run_record import RunRecord
from groundeval.reporting.cases import record_values
from groundeval.reporting.compare import compare_runs
from groundeval.reporting.matrix import compare_matrix, mcnemar, pick_baseline
from groundeval.reporting.matrix_render import matrix_dict, matrix_markdown, matrix_text
from tests._records import case, run


def _three() -> tuple[RunRecord, RunRecord, RunRecord]:
    ids = [f"c{i}" for i in range(6)]
    a = run([case(k, run_id="A") for k in ids[:4]] + [case(k, "partial", run_id="A") for k in ids[4:]], run_id="A")
    b = run([case(k, run_id="B") for k in ids], run_id="B", model="model-b")
    c = run(
        [case(k, "failed", run_id="C", f1=0.0) for k in ids[:3]] + [case(k, run_id="C") for k in ids[3:]],
        run_id="C",
        model="model-c",
    )
    return a, b, c


def _write(tmp_path: Path, *records: RunRecord) -> list[str]:
    paths = []
    for r in records:
        p = tmp_path / f"{r.run_id}.json"
        p.write_text(r.model_dump_json(), encoding="utf-8")
        paths.append(str(p))
    return paths


def test_matrix_pairs_each_run_with_the_baseline_as_the_two_run_compare_does() -> None:
    a, b, c = _three()
    m = compare_matrix([a, b, c])
    pass_rate = next(f for f in m.figures if f.name == "pass_rate")
    assert pass_rate.values == pytest.approx((4 / 6, 1.0, 3 / 6))
    assert pass_rate.best == frozenset({1}) and pass_rate.direction == "higher"
    assert all(
        iv is not None and iv.low <= v <= iv.high for iv, v in zip(pass_rate.intervals, pass_rate.values, strict=True)
    )
    # each pair is exactly the two-run comparison
    for i, other in ((1, b), (2, c)):
        two = compare_runs(a, other)
        found = m.comparisons[i]
        assert found is not None and found.gate.regression_ids == two.gate.regression_ids
        paired = pass_rate.paired[i]
        assert paired is not None and paired.interval == next(f for f in two.figures if f.name == "pass_rate").interval
    assert m.comparisons[0] is None and m.gate_failed  # C regressed c0..c2
    assert {c.case_id for c in m.cases if c.verdicts[2] == "regressed"} == {"c0", "c1", "c2"}
    assert {c.case_id for c in m.cases if c.verdicts[1] == "improved"} == {"c4", "c5"}


def test_exact_mcnemar_counts_discordant_cases() -> None:
    a, b, c = _three()
    t = mcnemar(record_values(a), record_values(c))
    # passed in A only: c0, c1, c2; in C only: c4, c5 -> binomtest(3, 5, 0.5) two-sided = 1.0
    assert (t.cases, t.baseline_only, t.current_only) == (6, 3, 2)
    assert t.p_value == pytest.approx(1.0)
    t_ab = mcnemar(record_values(a), record_values(b))
    assert (t_ab.baseline_only, t_ab.current_only) == (0, 2) and t_ab.p_value == pytest.approx(0.5)
    assert mcnemar(record_values(a), record_values(a)).p_value is None


def test_named_baseline_changes_every_pair() -> None:
    a, b, c = _three()
    assert pick_baseline([a, b, c], ["x/A.json", "x/B.json", "x/C.json"], "x/B.json") == 1
    assert pick_baseline([a, b, c], ["1", "2", "3"], "C") == 2
    assert pick_baseline([a, b, c], ["1", "2", "3"], "B") == 1  # letter
    with pytest.raises(ValueError, match=r"names none of the runs.*A \(1, run A\)"):
        pick_baseline([a, b, c], ["1", "2", "3"], "nope")
    m = compare_matrix([a, b, c], baseline=1)
    regressed = {(m.labels[i], k.case_id) for k in m.cases for i, v in enumerate(k.verdicts) if v == "regressed"}
    assert ("A", "c4") in regressed and ("C", "c0") in regressed and m.labels[m.baseline] == "B"


def test_renderings_show_best_intervals_and_gate() -> None:
    a, b, c = _three()
    m = compare_matrix([a, b, c])
    text = matrix_text(m, fail_on_regression=True)
    assert "A (baseline)" in text and "regression gate FAILED (exit status 1) against A: C:" in text
    row = next(line for line in text.splitlines() if line.startswith("pass_rate "))
    assert "1.000*" in row and "0.667 [" in row  # B best; A's own interval shown
    assert "McNemar C vs A: 6 cases, passed in A only 3, in C only 2, exact p 1" in text
    lines = text.splitlines()
    first_case = lines.index(next(line for line in lines if line.strip().startswith("case "))) + 1
    assert lines[first_case].split()[0] in ("c0", "c1", "c2")  # regressed cases first
    md = matrix_markdown(m)
    assert "| pass_rate | 0.667" in md and "**1.000**" in md
    data = matrix_dict(m)
    assert data["baseline"] == "A" and set(data["comparisons"]) == {"B", "C"}
    assert data["mcnemar"]["C"]["baseline_only"] == 3
    assert json.dumps(data)  # JSON-safe


def test_cli_compare_and_report_take_three_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = _write(tmp_path, *_three())
    assert cli_main(["compare", *paths]) == 0
    out = capsys.readouterr().out
    assert "C: " in out and "would fail with --fail-on-regression" in out
    assert cli_main(["compare", *paths, "--fail-on-regression"]) == 1
    capsys.readouterr()
    # B as the baseline: A and C both regressed against it
    assert cli_main(["compare", *paths, "--baseline", "B", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == "B" and set(data["comparisons"]) == {"A", "C"}
    assert cli_main(["compare", paths[1], paths[2], paths[0], "--baseline", "C", "--fail-on-regression"]) == 1
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli_main(["compare", *paths, "--baseline", "Z9"])
    assert exc.value.code == 2 and "names none of the runs" in capsys.readouterr().err
    html = tmp_path / "m.html"
    assert cli_main(["report", *paths, "-o", str(html)]) == 0
    page = html.read_text(encoding="utf-8")
    assert 'id="matrix"' in page and "Model matrix: 3 runs against A" in page
    assert 'class="num best" data-run="B" data-figure="pass_rate"' in page
    assert "McNemar C vs A" in page and "regression gate failed" in page
    assert page.count('<section class="run"') == 3


def test_two_runs_keep_their_output_and_baseline_swaps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, _ = _three()
    paths = _write(tmp_path, a, b)
    cli_main(["compare", *paths])
    plain = capsys.readouterr().out
    assert plain.startswith("A (baseline): A ")
    cli_main(["compare", *paths, "--baseline", paths[1]])
    swapped = capsys.readouterr().out
    assert swapped.startswith("A (baseline): B ")


def test_compare_needs_two_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    paths = _write(tmp_path, _three()[0])
    with pytest.raises(SystemExit) as exc:
        cli_main(["compare", *paths])
    assert exc.value.code == 2 and "three or more" in capsys.readouterr().err


def test_a_run_that_cannot_be_compared_is_shown_but_never_ranked_nor_counted() -> None:
    a, b, _ = _three()
    labs = run([case(f"c{i}", run_id="L") for i in range(6)], run_id="L", task="labs")  # every case passed
    m = compare_matrix([a, b, labs])
    comparison = m.comparisons[2]
    assert comparison is not None and comparison.problems  # another task: said so
    pass_rate = next(f for f in m.figures if f.name == "pass_rate")
    assert pass_rate.values[2] == pytest.approx(1.0) and 2 not in pass_rate.best  # its own figure, unranked
    assert pass_rate.best == frozenset({1})
    assert all(c.cells[2] is None for c in m.cases)  # its cases are not set against the baseline's
    assert m.tests[2] is None
