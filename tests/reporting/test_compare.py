"""Comparing runs and the regression gate, on run records built in the test and from a real CLI run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundeval.cli import main as cli_main
from groundeval.records.run_record import RunRecord
from groundeval.reporting import BaselineGate, compare_runs, load_record, regressions
from groundeval.reporting.render import comparison_dict, comparison_text
from groundeval.reporting.stats import fisher_one_sided, paired_interval
from groundeval.reporting.summary_md import comparison_markdown
from tests._paths import REPO
from tests._records import case, run


def _pair() -> tuple[RunRecord, RunRecord]:
    a = run([case("c1"), case("c2"), case("c3", "partial"), case("c4"), case("gone")], run_id="A")
    b = run([case("c1", run_id="B"), case("c2", "partial", run_id="B", f1=0.8), case("c3", run_id="B"),
             case("c4", "infra_error", run_id="B"), case("new", run_id="B")], run_id="B")
    return a, b


def test_case_level_verdicts_and_one_sided_cases() -> None:
    a, b = _pair()
    comp = compare_runs(a, b)
    verdicts = {c.case_id: c.verdict for c in comp.cases}
    assert verdicts == {"c1": "unchanged", "c2": "regressed", "c3": "improved"}
    c2 = next(c for c in comp.cases if c.case_id == "c2")
    assert c2.changes["passed"] == (1.0, 0.0)
    assert c2.changes["f1"] == (1.0, 0.8)
    assert c2.regressed_dims() == ["passed", "precision", "f1"]  # the record's metric order (here: first seen)
    assert comp.only_a == ["gone"] and comp.only_b == ["new"]
    assert "c4" not in comp.gate.not_compared  # passed in A, infra_error in B: lost, not "not compared"
    assert [(c.case_id, c.outcome) for c in comp.gate.lost] == [("c4", "infra_error")]
    gate = comp.gate
    assert gate.failed and gate.regression_ids == {"c2"}
    assert [c.case_id for c in gate.improved] == ["c3"]
    assert gate.summary_lines()[1] == "REGRESSED c2: passed 1/1 -> 0/1"


def test_no_regression_when_nothing_got_worse() -> None:
    a = run([case("c1"), case("c2", "partial")], run_id="A")
    b = run([case("c1", run_id="B"), case("c2", run_id="B")], run_id="B")
    gate = regressions(a, b)
    assert not gate.failed and [c.case_id for c in gate.improved] == ["c2"]


def test_trials_use_pass_rates_and_fisher_not_one_sample() -> None:
    # c1: 3/3 -> 2/3 is noise (Fisher p = 0.5); c2: 3/3 -> 0/3 is a regression (p = 0.05).
    a = run([case(cid, trial=t) for cid in ("c1", "c2") for t in range(3)], run_id="A")
    b_cases = [case("c1", run_id="B"), case("c1", run_id="B"), case("c1", "partial", run_id="B")]
    b_cases += [case("c2", "failed", run_id="B") for _ in range(3)]
    b = run(b_cases, run_id="B")
    comp = compare_runs(a, b)
    by_id = {g.case_id: g for g in comp.gate.cases}
    assert (by_id["c1"].current_passes, by_id["c1"].current_trials) == (2, 3)
    assert by_id["c1"].verdict == "unchanged" and by_id["c1"].p_value == pytest.approx(0.5)
    assert by_id["c2"].verdict == "regressed" and by_id["c2"].p_value == pytest.approx(0.05)
    assert comp.gate.regression_ids == {"c2"}
    c1 = next(c for c in comp.cases if c.case_id == "c1")
    assert c1.changes["passed"] == pytest.approx((1.0, 2 / 3))
    assert "(Fisher p=0.050)" in comp.gate.regressed[0].text()


def test_baseline_gate_per_case_while_running() -> None:
    a = run([case("c1"), case("c2"), case("c3", "infra_error"), case("c4", sha="old")], run_id="A")
    gate = BaselineGate(a)
    assert gate.regressed([case("c1", "partial", run_id="B")])
    assert not gate.regressed([case("c2", run_id="B")])
    assert gate.verdict([case("c3", run_id="B")]) is None  # excluded in the baseline
    assert gate.verdict([case("c4", "failed", run_id="B")]) is None  # case file changed
    assert gate.verdict([case("new", run_id="B")]) is None and gate.verdict([]) is None
    trials = [case("c1", run_id="B", trial=t) for t in range(2)] + [case("c1", "failed", run_id="B")]
    found = gate.verdict(trials)
    assert found is not None and (found.current_passes, found.current_trials, found.verdict) == (2, 3, "unchanged")


def test_different_tasks_are_reported_not_compared() -> None:
    a = run([case("c1")], run_id="A")
    b = run([case("w1", task="write", run_id="B")], run_id="B", task="write")
    comp = compare_runs(a, b)
    assert comp.problems == ["different tasks: extraction vs write"]
    # nothing was compared, so nothing shows the run did not regress: the gate fails and says why
    assert comp.cases == [] and comp.gate.failed and comp.gate.nothing_compared
    assert all(f.diff is None for f in comp.figures)
    assert "PROBLEM: different tasks" in comparison_text(comp)
    assert regressions(a, b).summary_lines() == [
        "regression gate: not applied (different tasks: extraction vs write)",
        "regression gate FAILED: 0 cases compared with the baseline (different tasks: extraction vs write): nothing "
        "shows that this run did not regress; compare runs of the same task over the same cases"]


def test_a_run_sharing_no_case_with_its_baseline_fails_the_gate_saying_why() -> None:
    a = run([case("c1"), case("c2")], run_id="A")
    b = run([case("d1", run_id="B"), case("d2", run_id="B")], run_id="B")
    gate = compare_runs(a, b).gate
    assert gate.cases == () and gate.failed
    (reason,) = gate.reasons()
    assert reason.startswith("0 cases compared with the baseline (2 only in the baseline)")
    assert "regression gate FAILED: 0 cases compared" in "\n".join(gate.summary_lines())
    changed = run([case("c1", run_id="B", sha="other"), case("c2", run_id="B", sha="other")], run_id="B")
    (why,) = compare_runs(a, changed).gate.reasons()  # every case file changed: nothing comparable either
    assert "2 not comparable (the case file changed (fixture SHA-256 differs))" in why
    assert not compare_runs(a, run([case("c1", run_id="B")], run_id="B")).gate.failed  # one compared: gated


def test_version_facts_options_and_fixture_changes_are_warned() -> None:
    a = run([case("c1"), case("c2")], run_id="A", task_facts={"catalog": "v1"})
    b = run([case("c1", run_id="B", sha="other"), case("c2", "failed", run_id="B")], run_id="B", version="0.2.0",
            task_facts={"catalog": "v2"}, settings={"task_options": {"min_f1": 0.9}})
    comp = compare_runs(a, b)
    text = "\n".join(comp.warnings)
    assert "groundeval version differs (0.1.0 vs 0.2.0)" in text
    assert 'task_facts differ: catalog: "v1" vs "v2"' in text
    assert "task options differ" in text and "1 case file(s) changed" in text
    assert comp.gate.not_compared == {"c1": "the case file changed (fixture SHA-256 differs)"}
    assert comp.gate.regression_ids == {"c2"}
    assert "task_facts" in " ".join(comp.checked)


def test_paired_interval_excludes_zero_only_for_a_real_change() -> None:
    big = paired_interval([-1.0] * 10 + [0.0] * 10)
    assert big is not None and big.distinguishable and big.high < 0 and big.low >= -1.0
    assert big.mean == pytest.approx(-0.5) and big.p_value is not None and big.p_value < 0.01
    noise = paired_interval([-1.0, 1.0] * 10)
    assert noise is not None and not noise.distinguishable and noise.low < 0 < noise.high
    same = paired_interval([0.0] * 5)
    assert same is not None and same.method == "exact" and (same.low, same.high) == (0.0, 0.0)
    assert same.p_value is None and paired_interval([0.3]) is None
    # Reproducible: the bootstrap is seeded.
    assert paired_interval([-1.0, 0.0, 0.5, -0.2, 0.1]) == paired_interval([-1.0, 0.0, 0.5, -0.2, 0.1])


def test_fisher_one_sided() -> None:
    assert fisher_one_sided(3, 3, 0, 3) == pytest.approx(0.05)
    assert fisher_one_sided(1, 3, 3, 3) == pytest.approx(1.0)


def test_pass_rate_figure_carries_the_interval() -> None:
    a = run([case(f"c{i}") for i in range(10)], run_id="A")
    b = run([case(f"c{i}", "failed" if i < 6 else "passed", run_id="B") for i in range(10)], run_id="B")
    comp = compare_runs(a, b)
    fig = next(f for f in comp.figures if f.name == "pass_rate")
    assert fig.diff == pytest.approx(-0.6)
    assert fig.interval is not None and fig.interval.distinguishable and fig.interval.n == 10
    assert comp.gate.pass_rate_interval == fig.interval
    assert next(f for f in comp.figures if f.name == "micro_f1").interval is None
    data = comparison_dict(comp)
    json.dumps(data)  # JSON-safe
    assert data["regressed"] == [f"c{i}" for i in range(6)] and data["gate_failed"] is True
    md = comparison_markdown(comp)
    assert "| pass_rate | 1.000 | 0.400 | -0.600 |" in md and "**6 regressed**" in md


def test_markdown_escapes_case_text() -> None:
    a = run([case("x|<b>")], run_id="A")
    b = run([case("x|<b>", "failed", run_id="B")], run_id="B")
    md = comparison_markdown(compare_runs(a, b))
    # a case id is a code span: shown as written (a code span renders no HTML), its | escaped for the table
    assert "`x\\|<b>`" in md and "&lt;" not in md
    assert md.count("<b>") == md.count("`x\\|<b>`")  # never outside a code span


def test_markdown_prose_keeps_arrows_and_escapes_tags() -> None:
    from groundeval.reporting.summary_md import md_code, md_escape

    assert md_escape("passed -> failed <script>a|b</script> & co") == (
        "passed -> failed &lt;script>a\\|b&lt;/script> &amp; co"
    )
    assert md_code("run `x` -> y|z") == "`run 'x' -> y\\|z`"


def test_load_record_rejects_other_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json: not a groundeval run record"):
        load_record(bad)


def _write(tmp_path: Path, name: str, record: RunRecord) -> Path:
    path = tmp_path / name
    path.write_text(record.model_dump_json(), encoding="utf-8")
    return path


def test_cli_compare_formats_and_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _pair()
    pa, pb = _write(tmp_path, "a.json", a), _write(tmp_path, "b.json", b)
    assert cli_main(["compare", str(pa), str(pb)]) == 0
    out = capsys.readouterr().out
    assert "REGRESSED c2: passed 1.000->0.000, precision 1.000->0.800, f1 1.000->0.800" in out
    assert "only in A gone" in out and "only in B new" in out and "scipy.stats.bootstrap" in out
    assert cli_main(["compare", str(pa), str(pb), "--format", "json", "--fail-on-regression"]) == 1
    assert json.loads(capsys.readouterr().out)["regressed"] == ["c2"]
    md = tmp_path / "cmp.md"
    assert cli_main(["compare", str(pa), str(pa), "--format", "markdown", "-o", str(md), "--fail-on-regression"]) == 0
    assert md.read_text(encoding="utf-8").startswith("### groundeval compare")
    with pytest.raises(SystemExit) as exc:
        cli_main(["compare", str(pa), str(tmp_path / "missing.json")])
    assert exc.value.code == 2


def test_real_runs_baseline_vs_naive(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Two real (offline) eval runs through the plugin, in process, then compared."""
    for agent in ("baseline", "naive"):
        pytester.runpytest(
            "--groundeval-task=extraction", f"--groundeval-agent={agent}", "--groundeval-limit=4",
            f"--groundeval-out-dir={tmp_path / agent}", "-q", "-p", "no:randomly",
        )
    (pa,), (pb,) = (tmp_path / "baseline").glob("*.json"), (tmp_path / "naive").glob("*.json")
    naive = load_record(pb)
    gate = regressions(load_record(pa), naive)
    assert len(gate.cases) == 4 and not gate.not_compared
    assert {c.case_id for c in gate.regressed} == {c.case_id for c in naive.cases if c.outcome != "passed"}
    assert gate.regressed  # the negative control lists stopped prescriptions


def test_ci_example_workflow_uses_the_real_commands() -> None:
    yaml = pytest.importorskip("yaml")
    path = REPO / "examples" / "ci" / "groundeval.yml"
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["eval"]["steps"]
    script = "\n".join(step.get("run", "") for step in steps)
    assert "groundeval compare" in script and "--fail-on-regression" in script and "--format markdown" in script
    assert '>> "$GITHUB_STEP_SUMMARY"' in script and "groundeval report" in script
    assert "--agent replay:$BASELINE" in script  # no key: main's recorded answers re-scored (tests/test_examples.py)
    assert set(workflow[True]) == {"pull_request", "push"}  # YAML 1.1 reads the key `on` as True
    # the flags the workflow passes exist
    from groundeval.cli.tools import _compare_parser

    args = _compare_parser().parse_args(["a.json", "b.json", "--format", "markdown", "--fail-on-regression"])
    assert args.fail_on_regression and args.format == "markdown"


def test_compare_of_two_tasks_says_the_exit_status_it_returns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pa = _write(tmp_path, "a.json", run([case("c1")], run_id="A"))
    pb = _write(tmp_path, "b.json", run([case("w1", task="write", run_id="B")], run_id="B", task="write"))
    for flag in ([], ["--fail-on-regression"]):
        assert cli_main(["compare", str(pa), str(pb), *flag]) == 2
        gate_lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("regression gate")]
        assert gate_lines and gate_lines[0].startswith("regression gate FAILED (exit status 2"), gate_lines


def test_a_passing_gate_says_it_passed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = run([case("c1"), case("c2", "failed")], run_id="A")
    b = run([case("c1", run_id="B"), case("c2", run_id="B")], run_id="B")
    pa, pb = _write(tmp_path, "a.json", a), _write(tmp_path, "b.json", b)
    assert cli_main(["compare", str(pa), str(pb), "--fail-on-regression"]) == 0
    assert "regression gate passed (exit status 0): no case regressed or was lost" in capsys.readouterr().out
    assert cli_main(["compare", str(pa), str(pb), "--fail-on-regression", "--format", "markdown"]) == 0
    assert "regression gate passed (exit status 0)" in capsys.readouterr().out


def test_regressions_are_listed_before_other_changes(capsys: pytest.CaptureFixture[str]) -> None:
    a = run([case("a1", "failed"), case("a2", "partial"), case("z9"), case("zz", "failed")], run_id="A")
    b = run([case("a1", run_id="B"), case("a2", run_id="B"), case("z9", "failed", run_id="B"),
             case("zz", run_id="B")], run_id="B")
    comp = compare_runs(a, b)
    listed = [line.split()[0] for line in comparison_text(comp).splitlines() if line.startswith("  ")]
    assert listed[0] == "REGRESSED" and listed.count("REGRESSED") == 1 and "IMPROVED" in listed[1:]
    rows = [line for line in comparison_markdown(comp).splitlines() if line.startswith("| `")]
    assert "regressed" in rows[0]


def test_differing_task_facts_are_named_by_key_path() -> None:
    from groundeval.reporting.compare import _differences

    a = {"judge_card": {"kappa": 0.87, "source": "x", "set": {"file": "a.jsonl"}}, "catalog": "v1"}
    b = {"judge_card": {"kappa": 0.91, "source": "x", "set": {"file": "a.jsonl"}}, "ungated": "y" * 200}
    assert _differences(a, b) == ['catalog: "v1" vs (absent)', "judge_card.kappa: 0.87 vs 0.91",
                                  f'ungated: (absent) vs "{"y" * 76}...']
