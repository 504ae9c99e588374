"""The cache and replay through the plugin: reruns make no model call, -n 2 replays, replay checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests._paths import REPO
from tests._xdist import run_xdist

from .conftest import args, calls, junit_cases, records

FIXTURES = REPO / "fixtures" / "extraction"


def outcomes(record: dict[str, object]) -> dict[str, tuple[object, object]]:
    cases = record["cases"]
    assert isinstance(cases, list)
    return {c["case_id"]: (c["outcome"], c["metrics"]) for c in cases}


def test_second_run_with_the_cache_makes_no_model_call(pytester: pytest.Pytester, counting_dir: Path) -> None:
    first = pytester.runpytest(*args("--groundeval-cache=cache", "--junitxml=a.xml"))
    first.assert_outcomes(passed=4, failed=1, errors=1)  # Max_Kris truncated (failed), Stephen infra_error
    assert len(calls(counting_dir)) == 6
    second = pytester.runpytest(*args("--groundeval-cache=cache", "--junitxml=b.xml"))
    second.assert_outcomes(passed=4, failed=1, errors=1)
    new_calls = calls(counting_dir)[6:]
    # the infra error and the reply cut at max_tokens are asked again: neither is an answer to keep
    assert sorted(c.split()[0].split("_")[0] for c in new_calls) == ["Max", "Stephen"]
    a, b = records(counting_dir)
    assert outcomes(a) == outcomes(b)
    cached = {c["case_id"]: c["cached"] for c in b["cases"]}
    assert not any(c["cached"] for c in a["cases"])
    assert sum(cached.values()) == 4 and not next(v for k, v in cached.items() if k.startswith("Stephen"))
    assert b["aggregate"]["cached"] == 4 and a["aggregate"]["cached"] == 0
    second.stdout.fnmatch_lines(["cached: 4 of 6 answers came from the cache or a replayed run*"])
    truncated = next(c for c in b["cases"] if c["case_id"].startswith("Max_Kris"))
    assert truncated["outcome"] == "truncated" and not truncated["cached"] and truncated["raw_output"] == '[{"rxnorm'
    junit = junit_cases(counting_dir / "b.xml")
    assert {name: props["cached"] for name, props in junit.items()} == {
        k: "true" if v else "false" for k, v in cached.items()}
    # another trial is another sample: trial 0 comes from the cache, trial 1 calls the agent
    pytester.runpytest(*args("--groundeval-cache=cache", "--groundeval-trials=2"))
    trials = sorted(c.split()[1] for c in calls(counting_dir)[8:])
    assert trials == ["0"] * 2 + ["1"] * 6  # Stephen's infra error and Max_Kris's cut reply on trial 0, all on trial 1
    # another temperature is another request: every case calls the agent again
    pytester.runpytest(*args("--groundeval-cache=cache", "--groundeval-temperature=0.5"))
    assert len(calls(counting_dir)) == 16 + 6


def test_a_parallel_run_replays(pytester: pytest.Pytester, counting_dir: Path) -> None:
    """A replay under ``-n 2``: both workers answer from the record, the controller builds no agent.

    That two workers write into one cache, which a later run reads, is shown by the suite's
    ``-n 2`` run with a cache: tests/reporting/test_langsmith_stream.py (the plugin streaming test).
    """
    pytester.runpytest(*args()).assert_outcomes(passed=4, failed=1, errors=1)
    (recorded,) = records(counting_dir)
    assert len(calls(counting_dir)) == 6
    path = next((counting_dir / "runs").glob("*.json"))
    replay = run_xdist(pytester, *args("--junitxml=xb.xml", agent=f"replay:{path}"))
    replay.assert_outcomes(passed=4, failed=1, errors=1)
    assert len(calls(counting_dir)) == 6  # no model call
    replay.stdout.fnmatch_lines([f"agent: counting (replayed from {path})  model: *"])
    second = next(r for r in records(counting_dir) if r["run_id"] != recorded["run_id"])
    assert {c["worker"] for c in second["cases"]} == {"gw0", "gw1"}  # both workers answered from the record
    assert second["agent"] == "counting" and second["settings"]["agent_spec"] == f"replay:{path}"
    stephen = next(c for c in second["cases"] if c["case_id"].startswith("Stephen"))
    assert stephen["outcome"] == "agent_error" and "no answer recorded" in stephen["message"]
    others = {k: v for k, v in outcomes(second).items() if not k.startswith("Stephen")}
    assert others == {k: v for k, v in outcomes(recorded).items() if not k.startswith("Stephen")}
    junit = junit_cases(counting_dir / "xb.xml")
    assert {props["cached"] for name, props in junit.items() if not name.startswith("Stephen")} == {"true"}


def test_replay_refuses_another_task_and_changed_fixtures_unless_allowed(
    pytester: pytest.Pytester, counting_dir: Path
) -> None:
    pytester.runpytest(*args(agent="baseline")).assert_outcomes(passed=6)
    path = next((counting_dir / "runs").glob("*.json")).rename(counting_dir / "recorded.json")
    shutil.rmtree(counting_dir / "runs")
    other = json.loads(path.read_text(encoding="utf-8"))
    other["task"] = "write"
    (counting_dir / "write.json").write_text(json.dumps(other), encoding="utf-8")
    refused = pytester.runpytest(*args(agent=f"replay:{counting_dir / 'write.json'}"))
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*the record is of the 'write' task, this run is 'extraction'*"])
    # a changed case file, and a case the record never ran
    (liz,) = (counting_dir / "data").glob("Liz_Conn_*.json")
    liz.write_text(json.dumps(json.loads(liz.read_text(encoding="utf-8")), indent=1), encoding="utf-8")
    (new,) = FIXTURES.glob("Delores12_*.json")
    shutil.copy(new, counting_dir / "data" / new.name)
    changed = pytester.runpytest(*args(agent=f"replay:{path}"))
    assert changed.ret == pytest.ExitCode.USAGE_ERROR
    changed.stderr.fnmatch_lines([f"*1 case file(s) changed since that run ({liz.name})*--groundeval-replay-allow-changed*"])
    assert not (counting_dir / "runs").exists()  # nothing ran
    allowed = pytester.runpytest(*args("--groundeval-replay-allow-changed", "--junitxml=r.xml", agent=f"replay:{path}"))
    allowed.stdout.fnmatch_lines(["fixture_changed: 1 case(s) re-scored although their case file changed*"])
    allowed.assert_outcomes(passed=6, errors=1)
    (record,) = records(counting_dir)
    by_id = {c["case_id"]: c for c in record["cases"]}
    flagged = sorted(k for k, c in by_id.items() if c["agent_meta"].get("fixture_changed"))
    assert len(flagged) == 1 and flagged[0].startswith("Liz_Conn")
    missing = next(c for k, c in by_id.items() if k.startswith("Delores12"))
    assert missing["outcome"] == "agent_error" and "not in the replayed run record" in missing["message"]
    assert missing["case_id"] in missing["message"]
    # groundeval's own explained error: its message, not replay.py's frames and the request's repr
    allowed.stdout.fnmatch_lines(["agent_error: ReplayCaseError: Delores12*not in the replayed run record*"])
    assert "AgentRequest(" not in allowed.stdout.str() and "replay.py:" not in allowed.stdout.str()
    junit = junit_cases(counting_dir / "r.xml")
    assert {k for k, p in junit.items() if p.get("fixture_changed") == "true"} == set(flagged)
    # the flag is only for replays
    wrong = pytester.runpytest(*args("--groundeval-replay-allow-changed", agent="baseline"))
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("where", ["a_file", "a_file/sub"], ids=["file", "unwritable"])
def test_a_cache_at_a_file_or_an_unwritable_directory_is_refused_before_any_call(
    pytester: pytest.Pytester, counting_dir: Path, where: str
) -> None:
    (counting_dir / "a_file").write_text("not a directory")
    result = pytester.runpytest(*args(f"--groundeval-cache={where}"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    reason = "is a file, not a directory" if where == "a_file" else "cannot be written (Not a directory)"
    result.stderr.fnmatch_lines([f"*--groundeval-cache=*{where}* {reason}; give a writable directory for the "
                                 "response cache*"])
    assert calls(counting_dir) == [] and not any((counting_dir / "runs").iterdir())
