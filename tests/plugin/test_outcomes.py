"""The outcome policy, row by row, through the plugin (serial and -n 2).

One agent module gives every outcome of ``groundeval.records.outcomes.POLICY`` on its own patient; the
run-stopping rows (config_error, auth_error) get runs of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groundeval.records.outcomes import OUTCOMES, POLICY, outcome_table_markdown
from tests._paths import REPO
from tests._xdist import run_xdist

from .conftest import run_records
from .matrix import MATRIX, SharedRun, matrix_args, prefix_of, write_matrix_dir


@pytest.fixture
def matrix_dir(pytester: pytest.Pytester) -> Path:
    write_matrix_dir(pytester.path)
    pytester.syspathinsert()
    return pytester.path


_args = matrix_args
_prefix = prefix_of


def test_every_outcome_row_is_reported_and_counted_as_the_policy_says_serial(xdist_matrix: SharedRun) -> None:
    """The serial twin of the shared -n 2 matrix run (``matrix.py``)."""
    _assert_matrix(xdist_matrix.serial, xdist_matrix.serial_record, xdist_matrix.serial_junit)


def test_every_outcome_row_is_reported_and_counted_as_the_policy_says_under_xdist(xdist_matrix: SharedRun) -> None:
    _assert_matrix(xdist_matrix.result, xdist_matrix.record, xdist_matrix.junit)


def _assert_matrix(result: pytest.RunResult, record: dict[str, Any], junit_by_name: dict[str, dict[str, str]]) -> None:
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = {_prefix(c["case_id"]): c for c in record["cases"]}
    assert {p: c["outcome"] for p, c in cases.items()} == MATRIX
    junit = {_prefix(name): props for name, props in junit_by_name.items() if not name.endswith(".json")}
    for prefix, outcome in MATRIX.items():
        rule = OUTCOMES[outcome]
        expected = {"passed": "passed", "failed": "failure", "error": "error"}[rule.pytest.split()[0]]
        assert junit[prefix]["_result"] == expected, prefix
        assert junit[prefix]["outcome"] == outcome
        assert junit[prefix]["counted"] == ("true" if rule.counted else "false")
        assert cases[prefix]["counted"] is rule.counted
    # agent behaviour is scored as an empty answer, so it costs in every mean
    assert cases["Clemente_Kreiger"]["metrics"]["f1"] == 0.0
    assert cases["Trey_Berge"]["metrics"]["f1"] == 0.0
    loop = junit["Bobbie849"]
    assert (loop["model_calls"], loop["last_tool"]) == ("25", "lookup_rxnorm")
    assert cases["Beatrice_Aufderhar"]["raw_output"] == "[{" and cases["Beatrice_Aufderhar"]["usage"]
    agg = record["aggregate"]
    counted = sum(OUTCOMES[o].counted for o in MATRIX.values())
    assert agg["counted"] == counted and agg["excluded"] == len(MATRIX) - counted and agg["not_run"] == 0
    assert agg["pass_rate"] == pytest.approx(2 / counted)
    ran = sum(OUTCOMES[o].agent_ran for o in MATRIX.values())  # every matrix outcome but an invalid case ran
    assert agg["pass_rate_ran"] == pytest.approx(2 / ran, abs=1e-6)  # crashing on a case never raises this one
    answered = sum(o in ("passed", "partial", "failed") for o in MATRIX.values())
    assert agg["answer_rate"] == pytest.approx(answered / counted)
    assert record["complete"] is True
    out = result.stdout.str()
    assert f"scored {counted} of {len(MATRIX)} cases" in out
    # agent and harness errors keep their tracebacks; the agent's is its own frame, the harness's is full
    harness = cases["Jayson808"]["error"]
    assert harness["type"] == "KeyError" and "call.py" in harness["traceback"]
    # the truth is derived before the agent runs (runner.prepare): a truth bug never calls the agent
    assert cases["Jayson808"]["raw_output"] is None and cases["Jayson808"]["latency_s"] is None
    assert "raise RuntimeError(" in out
    assert "returned int; return a str or a groundeval.AgentResult" in out


def test_a_str_from_a_class_agent_is_an_answer(pytester: pytest.Pytester, matrix_dir: Path) -> None:
    pytester.makepyfile(str_agent='''
class Agent:
    name = "str-agent"
    def run(self, request):
        return "[]"
''')
    result = pytester.runpytest(*_args("str_agent:Agent", "-k", "Johnie961 or Clemente"))
    result.assert_outcomes(passed=2, deselected=len(MATRIX) - 2)


@pytest.mark.parametrize(
    ("raised", "outcome", "hint"),
    [
        ("RunStopError('unknown model id claude-nope (404); fix --groundeval-model')", "config_error",
         "--groundeval-model"),
        ("AuthError('the API key was rejected (401); set ANTHROPIC_API_KEY')", "auth_error", "ANTHROPIC_API_KEY"),
    ],
)
def test_a_configuration_no_case_survives_stops_the_run_at_once(
    pytester: pytest.Pytester, matrix_dir: Path, raised: str, outcome: str, hint: str
) -> None:
    pytester.makepyfile(stop_agent=f'''
from groundeval.errors import AuthError, RunStopError

calls = []

def agent(request):
    calls.append(request.case_id)
    raise {raised}
''')
    result = pytester.runpytest(*_args("stop_agent:agent"))
    assert result.parseoutcomes()["errors"] == 1
    stops = [line for line in result.stdout.lines if line.startswith("! Interrupted")]
    assert len(stops) == 1 and f"stopped after {outcome} on " in stops[0], result.stdout.str()
    result.stdout.fnmatch_lines([f"{outcome}: *{hint}*"])  # the error names the cause and the fix
    (record,) = run_records(pytester.path)
    outcomes = [c["outcome"] for c in record["cases"]]
    assert outcomes.count(outcome) == 1 and outcomes.count("not_run") == len(MATRIX) - 1
    assert record["complete"] is False and outcome in record["stop_reason"]
    assert f"0 of {len(MATRIX)}" in result.stdout.str()


def test_a_rejected_key_under_xdist_stops_promptly_with_one_message_and_records_every_case(
    pytester: pytest.Pytester, matrix_dir: Path
) -> None:
    """A run-stopping error (here the Claude agent's 401, as ``AuthError``) under ``-n 2``."""
    pytester.makepyfile(stop_agent='''
from groundeval.errors import AuthError

def agent(request):
    raise AuthError("the API key was rejected (401); set ANTHROPIC_API_KEY")
''')
    # -rN: no short summary, which repeats the message untruncated when CI is set.
    result = run_xdist(pytester, *_args("stop_agent:agent", "-rN"))
    assert result.ret != pytest.ExitCode.OK
    out = result.stdout.str()
    assert out.count("the API key was rejected") == 1, out
    assert "stopped after auth_error" in out
    (record,) = run_records(pytester.path)
    assert len(record["cases"]) == len(MATRIX) and record["complete"] is False
    ran = [c for c in record["cases"] if c["outcome"] != "not_run"]
    assert 1 <= len(ran) <= 2 and all(c["outcome"] == "auth_error" for c in ran)  # at most one per worker
    # promptly: no case after the first per worker was started, and every other one is recorded unrun
    assert len(record["cases"]) - len(ran) == record["aggregate"]["not_run"] >= len(MATRIX) - 2


def test_a_warmup_that_raises_gives_the_case_a_record_and_stops(pytester: pytest.Pytester, matrix_dir: Path) -> None:
    pytester.makepyfile(cold_agent='''
class Cold:
    name = "cold"
    def warmup(self):
        raise OSError("model weights missing")
    def run(self, request):
        return "[]"
''')
    result = pytester.runpytest(*_args("cold_agent:Cold"))
    assert result.parseoutcomes()["errors"] == 1
    (record,) = run_records(pytester.path)
    first = next(c for c in record["cases"] if c["outcome"] != "not_run")
    assert first["outcome"] == "agent_error" and "model weights missing" in first["message"]
    assert record["complete"] is False and record["aggregate"]["not_run"] == len(MATRIX) - 1
    result.stdout.fnmatch_lines(["*INCOMPLETE: groundeval: the agent's warmup() raised OSError*"])


def test_the_outcomes_page_table_is_the_policy() -> None:

    page = (REPO / "docs" / "reference" / "outcomes.md").read_text(encoding="utf-8")
    assert outcome_table_markdown() in page
    assert len(POLICY) == len(OUTCOMES)
