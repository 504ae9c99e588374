"""The outcome policy, row by row, through the plugin (serial and -n 2).

One agent module gives every outcome of ``groundeval.outcomes.POLICY`` on its own patient; the
run-stopping rows (config_error, auth_error) get runs of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from groundeval.outcomes import OUTCOMES, POLICY, outcome_table_markdown

from .conftest import junit_cases, run_records

# patient prefix -> the outcome the matrix agent produces there
MATRIX = {
    "Liz_Conn": "passed",
    "Garrett_Thompson": "partial",
    "Max_Kris": "failed",
    "Stephen_McLaughlin": "no_answer",  # prose, no JSON
    "Clemente_Kreiger": "no_answer",  # prose on a patient with no medication: must still cost
    "Trey_Berge": "no_answer",  # the agent raised AgentError
    "Beatrice_Aufderhar": "truncated",
    "Bobbie849": "agent_loop",
    "Delores12": "refusal",
    "Demarcus108": "infra_error",
    "Emory494": "case_too_large",
    "Gordon377": "agent_error",  # RuntimeError
    "Herschel574": "agent_error",  # returned an int
    "Jayson808": "harness_error",  # the scorer raised
    "Johnie961": "passed",  # "[]" for a patient with no medication
}

MATRIX_AGENT = '''
from groundeval.agents.baseline import BaselineExtractionAgent, NaiveExtractionAgent
from groundeval.errors import (AgentError, AgentLoopError, CaseTooLargeError, InfraError, RefusalError,
                               TruncatedError)
from groundeval.tasks.extraction import ExtractionTask

BASE, NAIVE = BaselineExtractionAgent(), NaiveExtractionAgent()
_score = ExtractionTask.score


def _broken_score(self, case, truth, parsed):
    if case.case_id.startswith("Jayson808"):
        raise KeyError("scorer bug")
    return _score(self, case, truth, parsed)


ExtractionTask.score = _broken_score  # a harness bug on one case


def agent(request):
    cid = request.case_id
    if cid.startswith(("Liz_Conn", "Jayson808")):
        return BASE.run(request)
    if cid.startswith("Garrett_Thompson"):
        return NAIVE.run(request)
    if cid.startswith(("Max_Kris", "Johnie961")):
        return "[]"
    if cid.startswith(("Stephen_McLaughlin", "Clemente_Kreiger")):
        return "I could not find a medication list."
    if cid.startswith("Trey_Berge"):
        raise AgentError(cid + ": cannot answer")
    if cid.startswith("Beatrice_Aufderhar"):
        raise TruncatedError(cid + ": stopped at max_tokens", attempts=1,
                             details={"partial_text": "[{", "usage": {"output_tokens": 7}})
    if cid.startswith("Bobbie849"):
        raise AgentLoopError(cid + ": recursion limit", details={"model_calls": 25, "last_tool": "lookup_rxnorm",
                                                                 "limit": 25})
    if cid.startswith("Delores12"):
        raise RefusalError(cid + ": the model declined")
    if cid.startswith("Demarcus108"):
        raise InfraError(cid + ": overloaded (529) after 3 attempts", attempts=3)
    if cid.startswith("Emory494"):
        raise CaseTooLargeError(cid + ": the case is too large for the model")
    if cid.startswith("Gordon377"):
        raise RuntimeError("agent bug on " + cid)
    return 42
'''


@pytest.fixture
def matrix_dir(pytester: pytest.Pytester, copy_fixtures: Callable[[Path, Iterable[str]], Path]) -> Path:
    copy_fixtures(pytester.path / "data", MATRIX)
    pytester.makepyfile(matrix_agent=MATRIX_AGENT)
    pytester.syspathinsert()
    return pytester.path


def _args(agent: str, *extra: str) -> list[str]:
    return [f"--groundeval-agent={agent}", "--groundeval-task=extraction", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider", "--junitxml=out.xml", *extra]


def _prefix(case_id: str) -> str:
    return next(p for p in MATRIX if case_id.startswith(p))


@pytest.mark.parametrize("workers", [None, "2"], ids=["serial", "xdist"])
def test_every_outcome_row_is_reported_and_counted_as_the_policy_says(
    pytester: pytest.Pytester, matrix_dir: Path, workers: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundeval.tasks.extraction import ExtractionTask

    # the agent module patches ExtractionTask.truth (a harness bug on one case); in-process, undo it afterwards
    monkeypatch.setattr(ExtractionTask, "truth", ExtractionTask.truth)
    if workers is None:
        result = pytester.runpytest(*_args("matrix_agent:agent"))
    else:
        result = pytester.runpytest_subprocess(*_args("matrix_agent:agent", "-n", workers))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (record,) = run_records(pytester.path)
    cases = {_prefix(c["case_id"]): c for c in record["cases"]}
    assert {p: c["outcome"] for p, c in cases.items()} == MATRIX
    junit = {_prefix(name): props for name, props in junit_cases(pytester.path / "out.xml").items()}
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
    assert agg["pass_rate_ran"] == pytest.approx(2 / len(MATRIX), abs=1e-6)  # crashing on a case never raises this one
    answered = sum(o in ("passed", "partial", "failed") for o in MATRIX.values())
    assert agg["answer_rate"] == pytest.approx(answered / counted)
    assert record["complete"] is True
    out = result.stdout.str()
    assert f"scored {counted} of {len(MATRIX)} cases" in out
    # agent and harness errors keep their tracebacks; the agent's is its own frame, the harness's is full
    harness = cases["Jayson808"]["error"]
    assert harness["type"] == "KeyError" and "runner.py" in harness["traceback"]
    assert cases["Jayson808"]["raw_output"].startswith("[")  # the paid-for answer is kept
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


def test_config_stop_under_xdist_records_every_selected_case(pytester: pytest.Pytester, matrix_dir: Path) -> None:
    pytester.makepyfile(stop_agent='''
from groundeval.errors import RunStopError

def agent(request):
    raise RunStopError("unknown model id (404); fix --groundeval-model")
''')
    result = pytester.runpytest_subprocess(*_args("stop_agent:agent", "-n", "2"))
    assert result.ret != pytest.ExitCode.OK
    (record,) = run_records(pytester.path)
    assert len(record["cases"]) == len(MATRIX) and record["complete"] is False
    ran = [c for c in record["cases"] if c["outcome"] != "not_run"]
    assert 1 <= len(ran) <= 2 and all(c["outcome"] == "config_error" for c in ran)  # at most one per worker


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


def test_the_readme_outcome_table_is_the_policy() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert outcome_table_markdown() in readme
    assert len(POLICY) == len(OUTCOMES)
