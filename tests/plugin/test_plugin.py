"""The pytest plugin, exercised through pytester (in-process, and in processes of their own with and without -n 2)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from groundeval.records.outcomes import OUTCOMES
from tests._xdist import run_xdist

from .conftest import eval_args, junit_cases, run_records
from .forked import ForkedPytest
from .matrix import MALFORMED, MALFORMED_LINES, MATRIX, SharedRun, prefix_of

VOLATILE = {"latency_s", "run_id"}


def test_outcomes_summary_and_exit_code(pytester: pytest.Pytester, eval_dir: Path) -> None:
    result = pytester.runpytest(*eval_args("-rA"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 2, "partial": 1, "failed": 1, "errors": 1}
    result.stdout.fnmatch_lines([
        "PARTIAL groundeval/extraction::Garrett_Thompson* - F1 0.500 (needs >= 1)*",
        "*extra (in the answer*",
        "*in the record, but not an active order: stopped*",
        "*groundeval extraction*",
        "agent: scripted_agent:agent  model: -  run: *",
        # The agent's own crash is excluded from the means, and the summary says so first.
        "scored 4 of 5 cases: 1 excluded (agent_error 1), 0 not run; pass rate over every case that ran: 0.400",
        "pass rate: 0.500 (2/4)  answer rate: 1.000*",
        "outcomes: passed: 2  partial: 1  failed: 1  agent_error: 1",
        "*precision*recall*f1*display_accuracy",
        "micro *", "macro *",
        "run record: *runs*.json",
    ])
    # The table is the last thing the run prints before pytest's closing line.
    assert result.stdout.lines[-2].startswith("run record: ")
    # The failure text lists the missing medications; the agent crash is an error, not a failure.
    result.stdout.fnmatch_lines(
        ["F1 0.000*", "missing (active in the record, not in the answer):"]
    )
    # An agent crash shows the agent's own frame, not pytest's plumbing.
    result.stdout.fnmatch_lines(["*raise RuntimeError(*", "E *RuntimeError: scripted agent crashed on Stephen*"])
    result.stdout.no_fnmatch_line("*_pytest/runner.py*")
    result.stdout.fnmatch_lines(["AGENT_ERROR groundeval/extraction::Stephen_McLaughlin* - RuntimeError*"])
    result.stdout.no_fnmatch_line("FAILED groundeval/extraction::Stephen*")


def test_junit_properties_are_primitive_and_complete(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.runpytest(*eval_args("--junitxml=out.xml", "-W", "error"))
    cases = junit_cases(pytester.path / "out.xml")
    garrett = next(v for k, v in cases.items() if k.startswith("Garrett"))
    assert float(garrett["precision"]) < 1.0 and garrett["outcome"] == "partial"
    assert garrett["_result"] == "failure"
    for key in ("precision", "recall", "f1", "display_accuracy", "tp", "fp", "fn", "format_ok",
                "agent", "model", "latency_s", "task", "run_id"):
        assert key in garrett, key
    clemente = next(v for k, v in cases.items() if k.startswith("Clemente"))
    assert clemente["format_ok"] == "false" and clemente["_result"] == "passed"
    stephen = next(v for k, v in cases.items() if k.startswith("Stephen"))
    assert stephen["_result"] == "error" and stephen["outcome"] == "agent_error"
    # every testcase carries the same property names, in the same order (dashboard columns line up)
    assert len({tuple(props) for props in cases.values()}) == 1
    assert stephen["error_type"] == "RuntimeError"


def test_properties_identical_with_and_without_xdist(xdist_matrix: SharedRun) -> None:
    """The shared -n 2 matrix run (``matrix.py``) against its serial twin (the same run serially, in-process)."""
    serial_run = xdist_matrix.serial
    result = xdist_matrix.result
    assert result.parseoutcomes() == serial_run.parseoutcomes()
    assert result.parseoutcomes()["errors"] >= len(MALFORMED)
    assert "INTERNALERROR" not in result.stdout.str()

    def stable(cases: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        return {name: {k: v for k, v in props.items() if k not in VOLATILE} for name, props in cases.items()}

    serial, xdist = stable(xdist_matrix.serial_junit), stable(xdist_matrix.junit)
    assert serial == xdist
    assert len(serial) == len(MATRIX) + len(MALFORMED)

    # the run records too, case by case in the same order, with every outcome's fields (an agent's
    # or the harness's error and its traceback included) and the aggregate
    def cases(record: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in case.items() if k not in {*VOLATILE, "started_at", "worker"}} for case in record["cases"]]

    assert cases(xdist_matrix.serial_record) == cases(xdist_matrix.record)
    assert {c["outcome"] for c in xdist_matrix.record["cases"]} == set(MATRIX.values())
    assert xdist_matrix.serial_record["aggregate"] == xdist_matrix.record["aggregate"]

    def suite(path: Path) -> tuple[str | None, dict[str, str | None]]:
        import xml.etree.ElementTree as ET

        element = ET.parse(path).getroot().find("testsuite")
        assert element is not None
        props = {str(p.get("name")): p.get("value") for p in element.findall("properties/property")}
        return element.get("name"), {k: v for k, v in props.items() if k not in VOLATILE}

    # run-level headline figures on the <testsuite>, the same serially and under xdist (cases/17)
    assert suite(xdist_matrix.path / "serial.xml") == suite(xdist_matrix.path / "xdist.xml")
    name, props = suite(xdist_matrix.path / "xdist.xml")
    assert name == "groundeval-extraction"
    aggregate = xdist_matrix.record["aggregate"]
    assert props["counted"] == str(aggregate["counted"]) and props["excluded"] == str(aggregate["excluded"])
    assert props["pass_rate"] is not None and float(props["pass_rate"]) == pytest.approx(2 / aggregate["counted"])


def test_xdist_run_record_is_merged_once_by_the_controller(xdist_matrix: SharedRun) -> None:
    xdist_matrix.result.stdout.fnmatch_lines(["run record: *.json"])
    (record,) = run_records(xdist_matrix.path)
    assert not list((xdist_matrix.path / "runs").glob("*.partial.jsonl"))
    assert record["schema_version"] == 2 and record["complete"] is True
    assert record["settings"]["workers"] == 2
    ids = [c["case_id"] for c in record["cases"]]
    assert len(ids) == len(set(ids)) == len(MATRIX)
    assert record["aggregate"]["counts"] == dict(Counter(MATRIX.values()))
    counted = sum(OUTCOMES[o].counted for o in MATRIX.values())
    assert record["aggregate"]["excluded"] == len(MATRIX) - counted and record["aggregate"]["counted"] == counted
    by_prefix = {prefix_of(c["case_id"]): c for c in record["cases"]}
    passed = by_prefix["Liz_Conn"]
    for key in ("prompt_sha256", "raw_output", "parsed", "truth", "metrics", "latency_s", "fixture_sha256"):
        assert key in passed, key
    assert by_prefix["Gordon377"]["error"]["type"] == "RuntimeError"
    valid = {p.name for p in (xdist_matrix.path / "data").glob("*.json") if p.name not in MALFORMED}
    assert {f["source"] for f in record["fixtures"]} == valid
    assert "pytest" in record["packages"] and "groundeval" in record["packages"]


def test_worker_crash_loses_only_that_case(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(crashing_agent='''
import os
from scripted_agent import BASE

def agent(request):
    if request.case_id.startswith("Max_Kris"):
        os._exit(3)
    return BASE.run(request)
''')
    # One call at a time: with calls made ahead in threads, a crash that kills the process is
    # charged to the item running at that moment (see the README, "Concurrency").
    result = run_xdist(
        pytester, "--groundeval-task=extraction", "--groundeval-agent=crashing_agent:agent",
        "--groundeval-data-dir=data", "-p", "no:cacheprovider", "--groundeval-concurrency=1",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 4 and outcomes.get("failed", 0) + outcomes.get("errors", 0) == 1
    (record,) = run_records(pytester.path)
    assert len([c for c in record["cases"] if c["outcome"] == "passed"]) == 4
    (crashed,) = [c for c in record["cases"] if c["outcome"] == "worker_crashed"]
    assert crashed["case_id"].startswith("Max_Kris") and crashed["worker"] in ("gw0", "gw1")
    assert crashed["counted"] is False and len(record["cases"]) == 5


def test_malformed_case_files_are_collection_errors_and_the_rest_run(pytester: pytest.Pytester, eval_dir: Path) -> None:
    for name, text in MALFORMED.items():
        (eval_dir / name).write_text(text)
    result = pytester.runpytest(*eval_args())
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 2 and outcomes["errors"] == 4  # 3 files + the agent crash
    result.stdout.fnmatch_lines(MALFORMED_LINES)
    result.stdout.fnmatch_lines(["ERROR groundeval/extraction::broken.json*"])
    (record,) = run_records(pytester.path)
    assert len(record["collection_errors"]) == 3 and len(record["cases"]) == 5


def test_malformed_case_files_are_collection_errors_under_xdist(xdist_matrix: SharedRun) -> None:
    """The shared -n 2 matrix run (``matrix.py``) holds the same three malformed files."""
    xdist_matrix.result.stdout.fnmatch_lines(MALFORMED_LINES)
    xdist_matrix.result.stdout.fnmatch_lines(["ERROR groundeval/extraction::broken.json*"])
    assert len(xdist_matrix.record["collection_errors"]) == 3 and len(xdist_matrix.record["cases"]) == len(MATRIX)


def test_k_and_limit_select_cases(pytester: pytest.Pytester, eval_dir: Path) -> None:
    result = pytester.runpytest(*eval_args("-k", "Liz or Clemente"))
    result.assert_outcomes(passed=2, deselected=3)
    result = pytester.runpytest(*eval_args("--groundeval-limit=2", "--co", "-q"))
    result.stdout.fnmatch_lines([
        "groundeval/extraction::Clemente_Kreiger_1484a42d",
        "groundeval/extraction::Garrett_Thompson_5a72e290",
        "2 tests collected*",
    ])


def test_ini_twins_configure_the_run(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makeini("""
        [pytest]
        groundeval_task = extraction
        groundeval_agent = scripted_agent:agent
        groundeval_data_dir = data
        groundeval_min_f1 = 0.4
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    # Garrett's F1 of 0.5 now clears the threshold.
    assert result.parseoutcomes() == {"passed": 3, "failed": 1, "errors": 1}


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--groundeval-limit=abc", "--groundeval-limit='abc': not a whole number"),
        ("--groundeval-min-f1=high", "--groundeval-min-f1='high': not a number"),
        ("--groundeval-limit=0", "*--groundeval-limit='0': must be 1 or more*"),
        ("--groundeval-min-f1=1.5", "*--groundeval-min-f1='1.5': must be between 0 and 1*"),
        ("--groundeval-data-dir=missing", "*--groundeval-data-dir=*missing*: not a directory*"),
        ("--groundeval-agent=nosuchmodule:agent", "*agent 'nosuchmodule:agent': cannot import*"),
        ("--groundeval-agent=gpt", "*unknown agent 'gpt'*"),
    ],
)
def test_bad_options_are_usage_errors(pytester: pytest.Pytester, eval_dir: Path, option: str, message: str) -> None:
    result = pytester.runpytest(*eval_args(option))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_unknown_task_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--groundeval-task=deidentify")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --groundeval-task='deidentify': unknown task; choose one of: *extraction*"])


def test_positional_paths_with_a_task_are_refused(pytester: pytest.Pytester, eval_dir: Path) -> None:
    result = pytester.runpytest(*eval_args("tests/"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'tests/': with --groundeval-task, positional arguments are case node ids*-k*"])


def test_a_case_reruns_by_the_node_id_printed_on_its_failed_line(pytester: pytest.Pytester, eval_dir: Path) -> None:
    first = pytester.runpytest(*eval_args("-rf"))
    (line,) = [ln for ln in first.stdout.lines if ln.startswith("FAILED groundeval/")]
    nodeid = line.split()[1]
    again = pytester.runpytest(*eval_args(nodeid))
    again.assert_outcomes(failed=1, deselected=4)
    missing = pytester.runpytest(*eval_args("groundeval/extraction::Nobody-123"))
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*no case 'groundeval/extraction::Nobody-123'*case ids look like*"])


def test_claude_without_key_stops_before_running_with_one_line_hint(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-data-dir=data")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1 and "--groundeval-agent=baseline" in errors[0]
    assert not (pytester.path / "runs").exists()


def test_without_a_task_the_plugin_does_nothing_and_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="""
        import sys

        def test_nothing_heavy_loaded():
            loaded = {m for m in sys.modules if m.startswith(("groundeval.", "healthchain", "anthropic", "fhir"))}
            assert loaded == {"groundeval.plugin", "groundeval.plugin.option_register",
                              "groundeval.plugin.option_flags"}, sorted(loaded)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*groundeval extraction*")
    result.stdout.no_fnmatch_line("run record:*")
    assert not (pytester.path / "runs").exists()


def test_non_primitive_usage_values_survive_xdist(xdist_matrix: SharedRun) -> None:
    """fault case 16: a Decimal or datetime must not kill an xdist worker's reporting (shared run, ``matrix.py``)."""
    cases = {name: p for name, p in xdist_matrix.junit.items() if not name.endswith(".json")}
    assert {prefix_of(name) for name in cases} == set(MATRIX)  # no case's result went missing
    (liz,) = [p for name, p in cases.items() if name.startswith("Liz_Conn")]
    assert liz["_result"] == "passed"
    assert liz["cost_usd"] == "0.25" and liz["when"] == "2026-01-01T00:00:00"


def test_an_unreachable_api_stops_the_run_after_three_cases(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(down_agent='''
from groundeval.errors import InfraError

def agent(request):
    raise InfraError(request.case_id + ": cannot reach the API (connection error) after 3 attempts", attempts=3,
                     connection=True)

def busy(request):
    raise InfraError(request.case_id + ": rate limited (429) after 3 attempts", attempts=3)
''')
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=down_agent:agent", "--groundeval-data-dir=data",
        "-p", "no:cacheprovider",
    )
    assert result.parseoutcomes() == {"errors": 3}
    result.stdout.fnmatch_lines(["*the first 3 cases all failed to connect*unreachable*"])
    (record,) = run_records(pytester.path)
    assert record["complete"] is False and len(record["cases"]) == 5
    assert [c["outcome"] for c in record["cases"]].count("not_run") == 2
    # a burst of 429s is rate limiting, not an unreachable API: every case runs
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=down_agent:busy", "--groundeval-data-dir=data",
        "-p", "no:cacheprovider",
    )
    assert result.parseoutcomes() == {"errors": 5}


def test_classified_agent_errors_show_only_their_message(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(infra_agent='''
from groundeval.errors import InfraError

def agent(request):
    raise InfraError(request.case_id + ": overloaded (529) after 3 attempts", attempts=3)
''')
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=infra_agent:agent", "--groundeval-data-dir=data",
        "--groundeval-limit=1", "-p", "no:cacheprovider", "--junitxml=out.xml",
    )
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["infra_error: Clemente_Kreiger*: overloaded (529) after 3 attempts"])
    result.stdout.no_fnmatch_line("*def agent(request)*")
    result.stdout.fnmatch_lines(["INFRA_ERROR groundeval/extraction::Clemente_Kreiger*"])
    props = next(iter(junit_cases(pytester.path / "out.xml").values()))
    assert props["outcome"] == "infra_error" and props["attempts"] == "3" and props["_result"] == "error"
    (record,) = run_records(pytester.path)
    assert record["aggregate"]["excluded"] == 1 and record["aggregate"]["counted"] == 0
    result.stdout.fnmatch_lines(["scored 0 of 1 cases: 1 excluded (infra_error 1), 0 not run; pass rate over every case that ran: 0.000"])


def test_bad_ini_values_do_not_touch_runs_without_a_task(pytester: pytest.Pytester) -> None:
    pytester.makeini("""
        [pytest]
        groundeval_min_f1 = abc
    """)
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "no:cacheprovider", "--groundeval-task=extraction", "--groundeval-agent=baseline")
    result.stderr.fnmatch_lines(["ERROR: ini groundeval_min_f1='abc': not a number"])


def test_an_empty_task_flag_switches_off_an_ini_task(pytester: pytest.Pytester) -> None:
    pytester.makeini("""
        [pytest]
        groundeval_task = extraction
    """)
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider", "--groundeval-task=").assert_outcomes(passed=1)


def test_interrupted_or_stopped_runs_are_marked_incomplete(pytester: pytest.Pytester, eval_dir: Path) -> None:
    result = pytester.runpytest(*eval_args("-x"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (record,) = run_records(pytester.path)
    assert record["complete"] is False and record["exit_status"] == 1
    assert len(record["cases"]) == 5 and record["aggregate"]["not_run"] >= 1
    assert record["stop_reason"]
    result.stdout.fnmatch_lines(["INCOMPLETE: *selected case(s) did not run*"])


def test_agents_that_do_not_fit_the_run_are_usage_errors(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(odd_agents='''
class InitRaises:
    def __init__(self):
        raise ValueError("model file missing")

    def run(self, request):
        return "[]"

def returns_int(request):
    return 42
''')
    result = pytester.runpytest(*eval_args("--groundeval-agent=baseline-write"))
    result.stderr.fnmatch_lines(["ERROR: agent 'baseline-write' answers the write task, not 'extraction'*"])
    result = pytester.runpytest(*eval_args("--groundeval-agent=odd_agents:InitRaises"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: agent 'odd_agents:InitRaises' could not be built: ValueError: model file missing"])
    result = pytester.runpytest(*eval_args("--groundeval-agent=odd_agents:returns_int", "-k", "Liz"))
    assert result.parseoutcomes() == {"errors": 1, "deselected": 4}
    result.stdout.fnmatch_lines(["*returned int; return a str or a groundeval.AgentResult*"])
    # one line for the case, not a traceback through groundeval's own check of the value
    assert "execution/call.py" not in result.stdout.str() and "raise AgentReturnedWrongType" not in result.stdout.str()


def test_collect_only_needs_no_agent_and_no_key(pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-data-dir=data", "--co", "-q")
    result.stdout.fnmatch_lines(["groundeval/extraction::Clemente_Kreiger_1484a42d", "5 tests collected*"])


def test_wrong_task_directory_and_empty_directory_get_hints(pytester: pytest.Pytester, eval_dir: Path) -> None:
    (pytester.path / "writecases").mkdir()
    (pytester.path / "writecases" / "c.json").write_text('{"id": "c", "note": "n", "expected": {}}')
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=baseline", "--groundeval-data-dir=writecases"
    )
    # a directory of the other task's files is one usage error, not one collection error per file
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: the data directory *writecases*: none of its 1 case files is a case of the extraction task; this is a case of "
        "the write task, not of the extraction task; run it with --groundeval-task=write"
    ])
    result = pytester.runpytest("--groundeval-task=write", "--groundeval-agent=baseline-write", "--groundeval-data-dir=data")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*none of its 5 case files is a case of the write task; this is a case of the extraction task*"])
    (pytester.path / "empty").mkdir()
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=baseline", "--groundeval-data-dir=empty")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--groundeval-data-dir=*empty*: no extraction case files (*.json) in it"])


def test_secrets_from_custom_agents_are_redacted_in_junit_and_terminal(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-fake-123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    pytester.makepyfile(leaky='''
import os
from groundeval.agent_io import AgentResult

class Leaky:
    name = "leaky"
    def __init__(self, config):
        self.model = "m-" + os.environ["ANTHROPIC_API_KEY"]
    def run(self, request):
        print("debug: using key", os.environ["ANTHROPIC_API_KEY"])
        if request.case_id.startswith("Liz"):
            raise RuntimeError("bad key " + os.environ["ANTHROPIC_API_KEY"])
        return AgentResult(text="[] " + os.environ["ANTHROPIC_API_KEY"], model=self.model,
                           usage={"key": os.environ["ANTHROPIC_API_KEY"]})
''')
    result = pytester.runpytest(
        *eval_args("--groundeval-agent=leaky:Leaky", "--junitxml=out.xml", "-rA", "-o", "junit_logging=all")
    )
    assert "debug: using key [REDACTED]" in result.stdout.str()
    assert secret not in result.stdout.str() + result.stderr.str()
    assert secret not in (pytester.path / "out.xml").read_text()
    assert all(secret not in p.read_text() for p in (pytester.path / "runs").iterdir())
    assert "[REDACTED]" in (pytester.path / "out.xml").read_text()


def test_a_harness_bug_is_an_error_with_a_record_not_a_failure(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundeval.tasks.extraction.task import ExtractionTask

    def broken_score(self: object, case: object, truth: object, parsed: object) -> None:
        raise KeyError("scorer bug")

    monkeypatch.setattr(ExtractionTask, "score", broken_score)
    result = pytester.runpytest(*eval_args("-k", "Liz"))
    assert result.parseoutcomes() == {"errors": 1, "deselected": 4}
    (record,) = run_records(pytester.path)
    (case,) = record["cases"]
    assert case["outcome"] == "harness_error" and case["error"]["type"] == "KeyError"
    assert case["raw_output"].startswith("[{")  # the paid-for answer is kept


def test_truncation_is_a_failure_that_counts_as_an_empty_answer_in_the_means(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(cut_agent='''
from groundeval.errors import TruncatedError
from scripted_agent import BASE

def agent(request):
    if request.case_id.startswith("Max_Kris"):
        raise TruncatedError(request.case_id + ": stopped at max_tokens", attempts=1,
                             details={"stop_reason": "max_tokens", "partial_text": "[{"})
    return BASE.run(request)
''')
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=cut_agent:agent", "--groundeval-data-dir=data",
        "-p", "no:cacheprovider",
    )
    assert result.parseoutcomes() == {"passed": 4, "failed": 1}
    (record,) = run_records(pytester.path)
    cut = next(c for c in record["cases"] if c["outcome"] == "truncated")
    assert cut["metrics"]["recall"] == 0.0 and cut["answered"] is False and cut["raw_output"] == "[{"
    assert record["aggregate"]["counted"] == 5 and record["aggregate"]["excluded"] == 0
    assert record["aggregate"]["metrics"]["micro_recall"] < 1.0


def test_case_ids_can_leave_patient_names_out(pytester: pytest.Pytester, eval_dir: Path) -> None:
    result = pytester.runpytest(*eval_args("--groundeval-case-ids=file", "--co", "-q"))
    result.stdout.fnmatch_lines(["groundeval/extraction::Liz_Conn_27c911c6_f045_4ffa_af5d_6eba57ac94b2"])
    result = pytester.runpytest(*eval_args("--groundeval-case-ids=names"))
    result.stderr.fnmatch_lines(["ERROR: --groundeval-case-ids='names': must be 'name' * or 'file' *"])


def test_a_task_option_for_the_other_task_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--groundeval-task=write", "--groundeval-agent=baseline-write", "--groundeval-min-f1=0.3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --groundeval-min-f1 does not apply to the write task; drop it"])


def test_sigterm_still_writes_the_run_record(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(slow_agent='''
import time
from scripted_agent import BASE

def agent(request):
    if not request.case_id.startswith("Clemente"):
        time.sleep(30)
    return BASE.run(request)
''')
    import signal
    import time

    proc = ForkedPytest(pytester.path, ["--groundeval-task=extraction", "--groundeval-agent=slow_agent:agent",
                                        "--groundeval-data-dir=data", "-p", "no:cacheprovider"])
    deadline = time.monotonic() + 60
    while not list((pytester.path / "runs").glob("*.partial.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "INCOMPLETE: interrupted by signal SIGTERM" in out
    (record,) = run_records(pytester.path)
    ran = [c["case_id"] for c in record["cases"] if c["outcome"] != "not_run"]
    assert record["complete"] is False and len(ran) == 1 and ran[0].startswith("Clemente_Kreiger")
    assert len(record["cases"]) == 5


def test_an_interrupt_before_the_first_case_finishes_still_writes_a_record(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(stuck_agent='''
import pathlib
import time

def agent(request):
    import signal, threading
    state = (signal.pthread_sigmask(signal.SIG_BLOCK, []), signal.getsignal(signal.SIGINT),
             [t.name for t in threading.enumerate()], threading.current_thread().name)
    pathlib.Path("probe").write_text(repr(state))  # shown if the interrupt is not seen
    pathlib.Path("started").touch()
    time.sleep(30)
    return "[]"
''')
    import signal
    import time

    # A background job of a non-interactive shell (`cmd &` in a script, nohup) starts with SIGINT
    # ignored, and a child inherits that; Python, and groundeval's handler, then leave it ignored,
    # as they should. The forked run restores the default first, as an interactive shell's
    # foreground job has it, so the test does not depend on how the suite itself was started.
    proc = ForkedPytest(pytester.path, ["--groundeval-task=extraction", "--groundeval-agent=stuck_agent:agent",
                                        "--groundeval-data-dir=data", "-p", "no:cacheprovider"])
    deadline = time.monotonic() + 60
    while not (pytester.path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # Ctrl-C twice (or `uv run` forwarding it): the second is absorbed
    try:
        out = proc.communicate(timeout=60)
    except TimeoutError:
        proc.kill()
        out = proc.communicate(timeout=60)
        probe = (pytester.path / "probe").read_text()
        pytest.fail(f"SIGINT did not stop the run; the agent saw (blocked, SIGINT handler, threads, its thread) "
                    f"= {probe}\n{out}")
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "INCOMPLETE: interrupted by signal SIGINT; 5 selected case(s) did not run" in out
    assert "Traceback" not in out
    (record,) = run_records(pytester.path)
    assert record["complete"] is False and record["aggregate"]["not_run"] == 5
    assert record["exit_status"] == pytest.ExitCode.INTERRUPTED


def test_a_signal_to_the_xdist_controller_stops_workers_starting_cases(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> None:
    """The first SIGTERM stops new cases; a second one in that window still leaves the final record."""
    signals = 2
    names = ["Liz_Conn", "Clemente_Kreiger", "Garrett_Thompson", "Max_Kris", "Stephen_McLaughlin", "Trey_Berge",
             "Johnie961", "Tarra676", "Theodore876", "Gordon377"]
    copy_fixtures(pytester.path / "data", names)
    pytester.makepyfile(paced_agent='''
import pathlib
import time

def agent(request):
    pathlib.Path("started-" + request.case_id).touch()
    time.sleep(2)  # far longer than the controller needs to handle the signal on a busy machine
    return "[]"
''')
    import signal
    import time

    proc = ForkedPytest(pytester.path, ["--groundeval-task=extraction", "--groundeval-agent=paced_agent:agent",
                                        "--groundeval-data-dir=data", "-p", "no:cacheprovider", "-n", "2"])
    deadline = time.monotonic() + 90
    while len(list(pytester.path.glob("started-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    for _ in range(signals):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    out = proc.communicate(timeout=90)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    started = len(list(pytester.path.glob("started-*")))
    assert started <= 4, f"workers went on starting cases: {started} of {len(names)}"
    (record,) = run_records(pytester.path)
    assert record["complete"] is False and len(record["cases"]) == len(names)
    ran = [c for c in record["cases"] if c["outcome"] != "not_run"]
    assert 1 <= len(ran) <= started
    assert "INCOMPLETE: interrupted by signal SIGTERM" in out


def test_each_case_file_is_checked_once_across_runs_and_never_at_collection(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    from groundeval import check_cache

    # the module the plugin will load (sys.modules), not a package attribute left by an earlier in-process run
    extraction = importlib.import_module("groundeval.tasks.extraction.task")
    checked: list[str] = []
    real = extraction._check_structure

    def counting(bundle: dict[str, object], path: Path) -> None:
        checked.append(path.name)
        real(bundle, path)

    monkeypatch.setattr(extraction, "_check_structure", counting)
    # verdicts are kept for the process: start from none (not those of earlier runs in this process)
    monkeypatch.setattr(check_cache, "_PASSED", set())
    args = ("--groundeval-task=extraction", "--groundeval-agent=baseline", "--groundeval-data-dir=data", "-q")
    pytester.runpytest(*args, "--co").assert_outcomes()
    assert checked == []  # collection reads the files; the R4B check waits for the run
    pytester.runpytest(*args, "-k", "Liz").assert_outcomes(passed=1, deselected=4)
    assert checked == ["Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json"]  # only the case that ran
    pytester.runpytest(*args, "--groundeval-trials=2").assert_outcomes(passed=10)
    assert len(checked) == 5  # Liz passed before; the other four once each, not once per trial
    check_cache._PASSED.clear()  # as a new process would: only pytest's cache remembers
    pytester.runpytest(*args).assert_outcomes(passed=5)
    assert len(checked) == 5  # the same bytes passed before: not checked again
    (eval_dir / "Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json").write_text(
        (eval_dir / "Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json").read_text() + "\n"
    )
    pytester.runpytest(*args)
    assert checked[5:] == ["Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json"]  # changed bytes: checked again
    check_cache._PASSED.clear()
    pytester.runpytest(*args, "-p", "no:cacheprovider")
    assert len(checked) == 11  # without pytest's cache every file is checked, once in the run
    pytester.runpytest(*args, "-p", "no:cacheprovider", "--groundeval-trials=2")
    assert len(checked) == 11  # and once in the process: a later run in it reuses the verdicts


def test_a_file_that_fails_its_check_is_invalid_case_the_agent_is_not_called_and_the_rest_run(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    bundle = json.loads((eval_dir / "Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2.json").read_text())
    request = next(e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "MedicationRequest")
    request["status"] = "ACTIVE"
    (eval_dir / "upper.json").write_text(json.dumps(bundle))
    pytester.makepyfile(counting_agent=(
        "from pathlib import Path\n"
        "from groundeval.agents.baselines.extraction import BaselineExtractionAgent\n"
        "_inner = BaselineExtractionAgent()\n"
        "def agent(request):\n"
        "    with Path('calls.txt').open('a') as f:\n"
        "        f.write(request.case_id + '\\n')\n"
        "    return _inner.run(request)\n"
    ))
    result = pytester.runpytest("--groundeval-task=extraction", "--groundeval-agent=counting_agent:agent",
                                "--groundeval-data-dir=data", "-p", "no:cacheprovider", "--junitxml=out.xml")
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines([
        "invalid_case: MedicationRequest/* status 'ACTIVE' is not a MedicationRequest status code*lower-case) (file: *upper.json)",
        "INVALID_CASE groundeval/extraction::upper - invalid_case: MedicationRequest/*",
    ])
    calls = (pytester.path / "calls.txt").read_text().split()
    assert len(calls) == 5 and "upper" not in calls  # a bad file never costs an agent call
    (record,) = run_records(pytester.path)
    (bad,) = [c for c in record["cases"] if c["case_id"] == "upper"]
    assert bad["outcome"] == "invalid_case" and bad["counted"] is False and bad["source"] == "upper.json"
    assert record["collection_errors"] == []
    cases = junit_cases(pytester.path / "out.xml")
    assert cases["upper"]["outcome"] == "invalid_case"


def test_a_user_module_named_like_a_builtin_agent_is_the_users(pytester: pytest.Pytester, eval_dir: Path) -> None:
    """``priors.py`` given as ``priors:fn`` is the user's module, not the built-in ``priors`` agent."""
    pytester.makepyfile(priors='def fn(request):\n    return "[]"\n',
                        replay='def fn(request):\n    return "[]"\n')
    result = pytester.runpytest(*eval_args("--groundeval-agent=priors:fn", "-k", "Liz"))
    assert result.parseoutcomes() == {"failed": 1, "deselected": 4}  # "[]": the user's answer, scored
    (record,) = run_records(pytester.path)
    assert record["agent"] == "priors:fn"
    # a built-in that takes an argument (replay:RUN.json) and a module of the user's: the clash is named
    result = pytester.runpytest(*eval_args("--groundeval-agent=replay:fn", "-k", "Liz"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'replay' names both groundeval's built-in agent and your module*replay.py*"])


def test_a_users_priors_py_in_the_working_directory_is_found_without_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the console script runs: the working directory is not on sys.path until a user's target is loaded."""
    import sys

    from groundeval.agents.base import _builtin_with_argument

    (tmp_path / "priors.py").write_text('def fn(request):\n    return "[]"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    assert _builtin_with_argument("priors:fn") is None  # not the built-in: loaded as module:attribute


def test_an_agent_module_that_raises_on_import_names_its_file_and_line(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makepyfile(raises_on_import="import os\n\nraise RuntimeError('no model file')\n",
                        bad_syntax_agent="def agent(request:\n")
    result = pytester.runpytest(*eval_args("--groundeval-agent=raises_on_import:agent"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    where = pytester.path / "raises_on_import.py"
    result.stderr.fnmatch_lines([f"ERROR: agent 'raises_on_import:agent': importing 'raises_on_import' raised "
                                 f"RuntimeError: no model file (at {where}:3); fix the module there"])
    result = pytester.runpytest(*eval_args("--groundeval-agent=bad_syntax_agent:agent"))
    result.stderr.fnmatch_lines([f"*raised SyntaxError: *(at {pytester.path / 'bad_syntax_agent.py'}:1)*"])
