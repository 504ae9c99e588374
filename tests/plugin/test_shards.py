"""A run split across machines: ``--groundeval-shard=K/N`` runs, merged by ``groundeval merge``.

The packaged extraction run (the baseline agent, every packaged case) is made whole and in three
shards, in-process; the three records merged give the whole run's record case by case and figure
by figure. A second pair adds ``--groundeval-trials 3 --groundeval-counterfactual`` (over the first
nine cases: ``--groundeval-limit`` and the split compose), with one failed trial so the verdicts
at ``--groundeval-min-pass-rate`` have something to clear.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groundeval.cli.merge import merge_main
from groundeval.plugin.junit import suite_properties
from groundeval.records.merge import MergeError, merge_records
from groundeval.records.run_record import RunRecord
from groundeval.reporting import regressions, summary_markdown
from groundeval.reporting.cases import load_record
from groundeval.shards import parse_shard
from groundeval.tasks import make_task

from .conftest import junit_cases
from .shared_runs import made_once, shared_parent

# Differ between any two runs of the same cases: when and where a case ran, under which run id.
RUN_FIELDS = {"run_id", "latency_s", "started_at", "worker"}
SUITE_RUN_FIELDS = {"run_id"}

ONE_FAILED_TRIAL = '''
from groundeval.agents.baselines.extraction import BaselineExtractionAgent

BASE = BaselineExtractionAgent()


def agent(request):
    """The baseline's answer, except a wrong "[]" on the first trial of the first case (a tolerated failure)."""
    if request.case_id.startswith("Beatrice") and request.trial == 0 and "[cf-" not in request.case_id:
        return "[]"
    return BASE.run(request).text
'''


def _runs(args: list[str], pytester: pytest.Pytester) -> Callable[[Path], dict[str, pytest.RunResult]]:
    def make(base: Path) -> dict[str, pytest.RunResult]:
        (base / "trial_agent.py").write_text(ONE_FAILED_TRIAL)
        results = {"whole": pytester.runpytest(*args, "--groundeval-out-dir=whole", "--junitxml=whole.xml")}
        for k in (1, 2, 3):
            results[str(k)] = pytester.runpytest(*args, f"--groundeval-shard={k}/3", f"--groundeval-out-dir=shard{k}",
                                                 f"--junitxml=shard{k}.xml")
        return results

    return make


PACKAGED = ["--groundeval-task=extraction", "--groundeval-agent=baseline", "-p", "no:cacheprovider",
            "-p", "no:randomly"]
TRIALS = ["--groundeval-task=extraction", "--groundeval-agent=trial_agent:agent", "--groundeval-limit=9",
          "--groundeval-trials=3", "--groundeval-counterfactual", "--groundeval-twin-seed=3", "--groundeval-min-pass-rate=0.6",
          "-p", "no:cacheprovider", "-p", "no:randomly", "-o", "pythonpath=."]


@pytest.fixture(params=["packaged", "trials"])
def split(request: pytest.FixtureRequest, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
          tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, dict[str, pytest.RunResult]]:
    """The run whole and in three shards (results ``"whole"``, ``"1"``, ``"2"``, ``"3"``), made once per suite run."""
    args = PACKAGED if request.param == "packaged" else TRIALS
    monkeypatch.syspath_prepend(str(shared_parent(tmp_path_factory, worker_id) / f"shards-{request.param}"))
    return made_once(shared_parent(tmp_path_factory, worker_id), f"shards-{request.param}",
                     _runs(args, pytester), pytester, monkeypatch)


def _record(folder: Path) -> tuple[Path, RunRecord]:
    (path,) = folder.glob("*.json")
    return path, load_record(path)


def _junit(path: Path) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, str]]]:
    """The suite's counts, its properties (but ``run_id``), and each testcase's properties and result."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    counts = {k: str(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    props = suite.find("properties")
    said = {} if props is None else {str(p.get("name")): str(p.get("value")) for p in props.iter("property")}
    said.pop("run_id", None)
    return counts, said, junit_cases(path)


def _case_view(record: RunRecord) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", exclude=RUN_FIELDS) for c in record.cases]


def test_shards_are_balanced_disjoint_and_keep_trials_and_twins_with_their_case(
    split: tuple[Path, dict[str, pytest.RunResult]],
) -> None:
    base, _ = split
    whole = _record(base / "whole")[1]
    shards = [_record(base / f"shard{k}")[1] for k in (1, 2, 3)]
    originals = [{c.case_id for c in s.cases if "[cf-" not in c.case_id} for s in shards]
    sizes = sorted(len(o) for o in originals)
    assert sizes[-1] - sizes[0] <= 1 and sum(sizes) == len({c.case_id for c in whole.cases if "[cf-" not in c.case_id})
    assert not (originals[0] & originals[1]) and not (originals[1] & originals[2]) and not (originals[0] & originals[2])
    for shard, mine in zip(shards, originals, strict=True):
        assert shard.settings["shard"] in ("1/3", "2/3", "3/3")
        owners = {c.case_id.split("[cf-")[0] for c in shard.cases}
        assert owners == mine  # every twin runs in its original's shard
        trials = whole.settings["trials"]
        assert all(sum(c.case_id == each.case_id for c in shard.cases) == trials for each in shard.cases)
    assert sorted((c.case_id, c.trial) for s in shards for c in s.cases) == [(c.case_id, c.trial) for c in whole.cases]


def test_merged_shards_equal_the_whole_run_case_by_case_and_figure_by_figure(
    split: tuple[Path, dict[str, pytest.RunResult]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    base, results = split
    _, whole = _record(base / "whole")
    out = tmp_path / "merged.json"
    status = merge_main([str(_record(base / f"shard{k}")[0]) for k in (3, 1, 2)] + [
        "-o", str(out), "--junitxml", str(tmp_path / "merged.xml"), "--junit", *(str(base / f"shard{k}.xml") for k in (1, 2, 3))])
    merged = load_record(out)
    assert status == int(results["whole"].ret) == merged.exit_status == whole.exit_status
    assert _case_view(merged) == _case_view(whole)
    assert {c.run_id for c in merged.cases} == {merged.run_id} and merged.run_id not in {whole.run_id}
    assert merged.aggregate == whole.aggregate  # pass rates, means, intervals, trials, counterfactual, statements
    assert merged.complete and merged.settings["shard"] is None
    assert [m["shard"] for m in merged.settings["merged_from"]] == ["1/3", "2/3", "3/3"]
    assert {k: v for k, v in merged.settings.items() if k != "merged_from"} == \
        {k: v for k, v in whole.settings.items()}
    assert merged.fixtures == whole.fixtures and merged.collection_errors == whole.collection_errors

    def suite(record: RunRecord) -> list[tuple[str, object]]:
        return [(k, v) for k, v in suite_properties(record) if k not in SUITE_RUN_FIELDS]

    assert suite(merged) == suite(whole)  # junit's suite properties
    merged_junit, whole_junit = _junit(tmp_path / "merged.xml"), _junit(base / "whole.xml")
    assert merged_junit[0] == whole_junit[0]  # tests, failures, errors, skipped
    assert merged_junit[1] == whole_junit[1] == {k: str(v) for k, v in suite(whole)}
    assert {p["run_id"] for p in merged_junit[2].values()} == {merged.run_id}

    def testcases(cases: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        return {n: {k: v for k, v in p.items() if k not in RUN_FIELDS} for n, p in cases.items()}

    assert testcases(merged_junit[2]) == testcases(whole_junit[2])
    assert summary_markdown(merged).replace(merged.run_id, "RUN") == summary_markdown(whole).replace(whole.run_id, "RUN")
    gate_merged, gate_whole = regressions(whole, merged), regressions(whole, whole)
    assert not gate_merged.failed and gate_merged.regressed == gate_whole.regressed
    assert "merged 3 shards" in capsys.readouterr().out
    if whole.settings["trials"] == 3:  # a failed trial, cleared by the verdicts in both
        assert whole.aggregate.counts.get("failed") and whole.exit_status == 0
        assert whole.aggregate.counterfactual is not None


def test_merge_refuses_records_that_are_not_one_split_run_and_says_which(
    split: tuple[Path, dict[str, pytest.RunResult]],
) -> None:
    base, _ = split
    shards = [_record(base / f"shard{k}") for k in (1, 2, 3)]
    whole = _record(base / "whole")
    task = make_task("extraction")

    def refused(records: list[tuple[Path, RunRecord]]) -> str:
        with pytest.raises(MergeError) as info:
            merge_records(records, task)
        return str(info.value)

    assert "shard 2 of 3 missing" in refused([shards[0], shards[2]])
    assert "shard 1/3 given twice" in refused([shards[0], shards[1], shards[2], (Path("copy.json"), shards[0][1])])
    assert f"{whole[0]} is not a shard" in refused([*shards, whole])
    other_task = (Path("labs.json"), shards[1][1].model_copy(update={"task": "labs"}))
    assert "labs.json is a run of the labs task" in refused([shards[0], other_task, shards[2]])
    old = shards[2][1].model_copy(update={"packages": {**shards[2][1].packages, "groundeval": "0.0.1"}})
    assert "groundeval 0.0.1" in refused([shards[0], shards[1], (Path("old.json"), old)])
    changed = shards[1][1].model_copy(update={"settings": {**shards[1][1].settings, "trials": 7}})
    assert "different settings (trials: 7" in refused([shards[0], (Path("t.json"), changed), shards[2]])
    split4 = shards[2][1].model_copy(update={"settings": {**shards[2][1].settings, "shard": "3/4"}})
    assert "one of 3" in refused([shards[0], shards[1], (Path("four.json"), split4)])
    overlap = shards[1][1].model_copy(update={"cases": [*shards[1][1].cases, shards[0][1].cases[0]]})
    assert "the shards overlap" in refused([shards[0], (Path("o.json"), overlap), shards[2]])
    # the workers and calls in flight may differ between machines: how a shard ran, not what it measured
    faster = shards[1][1].model_copy(update={"settings": {**shards[1][1].settings, "concurrency": 16, "workers": 2}})
    assert merge_records([shards[0], (Path("f.json"), faster), shards[2]], task).aggregate == whole[1].aggregate


def test_merge_command_exits_2_naming_the_problem(split: tuple[Path, dict[str, pytest.RunResult]], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    base, _ = split
    one = str(_record(base / "shard1")[0])
    assert merge_main([one, "-o", str(tmp_path / "m.json")]) == 2
    assert "shards 2, 3 of 3 missing" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("bad", ["0/3", "4/3", "3", "a/b", "1/0", "-1/3"])
def test_a_bad_shard_is_a_usage_error(bad: str, pytester: pytest.Pytester) -> None:
    with pytest.raises(ValueError, match="must"):
        parse_shard(bad)
    from groundeval.cli.usage import run_problem

    problem = run_problem("extraction", {"shard": bad}, [])
    assert problem is not None and problem.startswith(f"--shard={bad!r}: must")


def test_a_bad_shard_stops_the_plugin_before_any_case(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=baseline",
                                "--groundeval-shard=4/3", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--groundeval-shard='4/3': must name a shard from 1 to 3*"])


def test_shard_is_parsed_and_printed_as_given() -> None:
    assert str(parse_shard(" 2 / 3 ")) == "2/3" and parse_shard("1/1").owns(7)
    assert [parse_shard("2/3").owns(i) for i in range(6)] == [False, True, False, False, True, False]
    assert json.dumps(str(parse_shard("3/3"))) == '"3/3"'


def test_shards_with_twins_must_share_a_twin_seed(pytester: pytest.Pytester) -> None:
    # each run draws its own twin seed; shards that drew different ones could not be merged
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=baseline",
                                "--groundeval-shard=1/3", "--groundeval-counterfactual", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--groundeval-shard* with --groundeval-counterfactual needs --groundeval-twin-seed=N*"])
