"""The task seams: task lookup, declared options, BaseTask, agent capabilities, shared helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ValidationError

from groundeval import (
    BaseTask,
    Case,
    CodeSetScorer,
    Parsed,
    TaskOption,
    codings_by_system,
    describe_validation_error,
    unit_interval,
    wrong_task_error,
)
from groundeval.agents.base import FunctionAgent, check_task
from groundeval.errors import ConfigError
from groundeval.tasks import make_task, task_class
from groundeval.tasks.base import TEXT_PROMPT, TOOLS, Task, case_files
from groundeval.tasks.extraction.task import ExtractionTask
from groundeval.tasks.write.task import WriteTask

TINY_TASK = '''
from dataclasses import dataclass
from typing import ClassVar
from groundeval import BaseTask, Case, CodeSetScorer, Parsed, Prompt, TaskOption, load_json, unit_interval


@dataclass(frozen=True, slots=True)
class TinyTask(BaseTask):
    name: ClassVar[str] = "tiny"
    default_agent: ClassVar[str] = "tiny_task:echo"
    options: ClassVar[tuple[TaskOption, ...]] = (TaskOption("min_f1", unit_interval, 1.0, "F1 to pass."),)
    min_f1: float = 1.0

    @property
    def scorer(self):
        return CodeSetScorer(min_f1=self.min_f1)

    def load_case(self, path):
        data, digest = load_json(path)
        return Case(case_id=path.stem, source=path, sha256=digest, data=data)

    def prompt(self, case):
        return Prompt(system="List the codes.", user=" ".join(case.data["codes"]))

    def truth(self, case):
        return sorted(case.data["codes"])

    def parse(self, case, raw):
        return Parsed(value=raw.split(), format_ok=True)


def echo(request):
    return "x" if "b" in request.prompt.user.split() else request.prompt.user
'''


class _Tiny(BaseTask):
    """A non-dataclass task: options become attributes."""

    name: ClassVar[str] = "tiny-attr"
    options: ClassVar[tuple[TaskOption, ...]] = (TaskOption("min_f1", unit_interval, 1.0, "F1 to pass."),)
    scorer = CodeSetScorer()

    def load_case(self, path: Path) -> Case:
        return Case(case_id=path.stem, source=path, sha256="", data={})


# -- task lookup ----------------------------------------------------------------------------

def test_built_in_names_and_module_class_specs_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert task_class("extraction") is ExtractionTask
    (tmp_path / "tiny_task.py").write_text(TINY_TASK)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    task = make_task("tiny_task:TinyTask", {"min_f1": "0.5"})
    assert task.name == "tiny" and task.min_f1 == 0.5  # type: ignore[attr-defined]
    assert isinstance(task, Task)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("summarise", "unknown task 'summarise'; choose one of: extraction, labs, reconcile, summary, write, or 'package.module:Class'*"),
        ("no_such_module:Task", "task 'no_such_module:Task': cannot import 'no_such_module'*"),
        ("groundeval.tasks:NoSuch", "task 'groundeval.tasks:NoSuch': 'groundeval.tasks' has no attribute 'NoSuch'"),
        ("groundeval.tasks:make_task", "task 'groundeval.tasks:make_task' is not a task class*"),
    ],
)
def test_bad_task_specs_are_config_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        task_class(spec)
    import fnmatch

    assert fnmatch.fnmatch(str(info.value), message), str(info.value)


# -- declared options -----------------------------------------------------------------------

def test_options_are_checked_per_task_naming_task_and_key() -> None:
    assert make_task("extraction", {"min_f1": "0.25", "case_ids": "file"}).min_f1 == 0.25  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"task 'write' has no option 'min_f1' \(its options: none\)"):
        make_task("write", {"min_f1": 0.5})
    with pytest.raises(ConfigError, match=r"task 'extraction' option min_f1='1.5': must be between 0 and 1"):
        make_task("extraction", {"min_f1": 1.5})
    with pytest.raises(ConfigError, match=r"option case_ids='names': must be 'name' .* or 'file'"):
        make_task("extraction", {"case_ids": "names"})
    plain = _Tiny.from_options({"min_f1": "0.4"})
    assert plain.min_f1 == 0.4


def test_task_option_values() -> None:
    opt = TaskOption("min_f1", unit_interval, 1.0, "help")
    assert opt.value(None) == 1.0 and opt.value(" 0.5 ") == 0.5 and opt.value(0.25) == 0.25
    with pytest.raises(ValueError, match="not a number"):
        opt.value("high")
    count = TaskOption("n", int, 3, "help", "N")
    with pytest.raises(ValueError, match="not a valid N"):
        count.value("x")


# -- BaseTask -------------------------------------------------------------------------------

def test_case_files_are_sorted_top_level_json_without_the_manifest(tmp_path: Path) -> None:
    for name in ("b.json", "a.json", "MANIFEST.json", "notes.txt"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text("{}")
    assert [p.name for p in case_files(tmp_path)] == ["a.json", "b.json"]
    assert [p.name for p in ExtractionTask().case_files(tmp_path)] == ["a.json", "b.json"]


def test_base_task_delegates_to_its_scorer_and_reports_capabilities() -> None:
    task = _Tiny()
    case = Case(case_id="c", source=Path("c.json"), sha256="", data={})
    score = task.score(case, ["1", "2"], Parsed(value=["1"], format_ok=True))
    assert score.metrics["recall"] == 0.5 and score.outcome == "partial"
    assert task.aggregate([score.metrics])["micro_recall"] == 0.5
    assert task.metric_names == CodeSetScorer.metric_names and task.context(case) == {}
    assert task.provides == frozenset({TEXT_PROMPT}) and WriteTask().provides == frozenset({TEXT_PROMPT, TOOLS})
    assert set(WriteTask.tools) == {"lookup_rxnorm", "build_medication_statement", "validate_medication_statement"}


def test_built_in_metric_names_cover_what_their_scorers_emit() -> None:
    from groundeval.tasks.extraction.scorer import score_medications

    emitted = score_medications([], [{"rxnorm_code": "1", "display": "x"}]).metrics
    assert set(emitted) == set(ExtractionTask.metric_names)
    assert set(WriteTask.metric_names) >= {"schema", "coding", "constraints", "safety", "dimensions_passed"}


# -- agent capabilities ---------------------------------------------------------------------

class _ToolAgent:
    name = "tool-agent"
    model: str | None = None
    requires = frozenset({TOOLS})

    def run(self, request: Any) -> Any:
        raise AssertionError


def test_text_agents_run_any_text_task_and_tool_agents_need_tools() -> None:
    text_agent = FunctionAgent(lambda r: "[]", name="fn")
    for task in (ExtractionTask(), WriteTask(), _Tiny()):
        check_task(text_agent, "fn", task)
    check_task(_ToolAgent(), "tool-agent", WriteTask())
    check_task(_ToolAgent(), "tool-agent", ExtractionTask())  # the FHIR read tools over its Bundle
    with pytest.raises(ConfigError, match=r"agent 'tool-agent' requires tools, which the tiny-attr task does not "
                                          r"provide \(it provides: text_prompt\)"):
        check_task(_ToolAgent(), "tool-agent", _Tiny())


def test_the_single_call_agents_declare_capabilities_not_task_names() -> None:
    from groundeval.agents.claude import ClaudeAgent
    from groundeval.agents.openai_compat import OpenAICompatibleAgent

    for cls in (ClaudeAgent, OpenAICompatibleAgent):
        assert cls.requires == frozenset({TEXT_PROMPT})
        assert not getattr(cls, "tasks", None)


def test_an_agent_bound_to_one_task_is_still_refused_elsewhere() -> None:
    from groundeval.agents.baselines.write import BaselineWriteAgent

    with pytest.raises(ConfigError, match="answers the write task, not 'extraction'"):
        check_task(BaselineWriteAgent(), "baseline-write", ExtractionTask())


# -- shared helpers -------------------------------------------------------------------------

def test_wrong_task_hints_come_from_the_tasks_claims(tmp_path: Path) -> None:
    note = {"id": "c", "note": "n", "expected": {}}
    error = wrong_task_error(note, tmp_path / "c.json", "extraction")
    assert error is not None and "this is a case of the write task, not of the extraction task" in str(error)
    assert wrong_task_error({"resourceType": "Bundle"}, tmp_path / "b.json", "write") is not None
    assert wrong_task_error({"something": "else"}, tmp_path / "x.json", "write") is None


def test_codings_are_picked_by_system_not_position() -> None:
    concept = {"coding": [
        {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "1"},
        {"system": " http://snomed.info/sct ", "code": " 22298006 ", "display": " Myocardial infarction "},
        {"system": "http://snomed.info/sct", "code": ""},
    ]}
    (coding,) = codings_by_system(concept, "http://snomed.info/sct")
    assert (coding.code, coding.display) == ("22298006", "Myocardial infarction")
    assert codings_by_system(None, "x") == [] and codings_by_system({"coding": ["bad"]}, "x") == []


def test_validation_errors_are_rendered_by_location() -> None:
    class M(BaseModel):
        id: str
        subject: dict[str, str]

    with pytest.raises(ValidationError) as info:
        M.model_validate({"id": 3, "subject": "Patient/x"})
    text = describe_validation_error(info.value, limit=1)
    assert text.startswith("id: Input should be a valid string") and text.endswith("(+1 more)")
    assert 'subject: expected a JSON object, got "Patient/x"' in describe_validation_error(info.value)


# -- the code-set scorer --------------------------------------------------------------------

def _case() -> Case:
    return Case(case_id="c", source=Path("c.json"), sha256="", data={})


def test_code_set_scores() -> None:
    scorer = CodeSetScorer(min_f1=0.6)
    score = scorer.score(_case(), ["1", "2", "3"], Parsed(value=["1", "2", "2", "9"], format_ok=True))
    assert score.metrics == {"precision": 0.666667, "recall": 0.666667, "f1": 0.666667, "tp": 2, "fp": 1,
                             "fn": 1, "duplicates": 1}
    assert score.outcome == "passed" and score.details == {"missing": ["3"], "extra": ["9"]}
    assert set(score.metrics) == set(CodeSetScorer.metric_names)
    empty = scorer.score(_case(), [], Parsed(value=[], format_ok=True))
    assert empty.outcome == "passed" and empty.metrics["f1"] == 1.0
    nothing = scorer.score(_case(), [], Parsed(value=[], format_ok=False, error="no JSON array", found=False))
    assert nothing.outcome == "failed" and nothing.metrics["f1"] == 0.0 and "no JSON array" in nothing.message
    low = CodeSetScorer(min_f1=1.0, label="SNOMED CT code").score(_case(), ["1", "2"], Parsed(value=["1"], format_ok=True))
    assert low.outcome == "partial" and "missing SNOMED CT codes (expected, not in the answer): 2" in low.message


def test_code_set_aggregate_micro_and_macro() -> None:
    scorer = CodeSetScorer()
    a = scorer.score(_case(), ["1", "2"], Parsed(value=["1"], format_ok=True)).metrics
    b = scorer.score(_case(), ["3"], Parsed(value=["3"], format_ok=True)).metrics
    agg = scorer.aggregate([a, b])
    assert agg["micro_recall"] == round(2 / 3, 6) and agg["macro_recall"] == 0.75
    assert agg["micro_precision"] == 1.0
    assert scorer.aggregate([])["micro_f1"] is None


# -- the plugin: options from the task ------------------------------------------------------

@pytest.fixture
def tiny_dir(pytester: pytest.Pytester) -> Path:
    pytester.makepyfile(tiny_task=TINY_TASK)
    data = pytester.path / "cases"
    data.mkdir()
    (data / "c1.json").write_text(json.dumps({"codes": ["a", "b"]}))
    (data / "c2.json").write_text(json.dumps({"codes": ["a"]}))
    return data


def _tiny_args(*extra: str) -> list[str]:
    return ["--groundeval-task=tiny_task:TinyTask", "--groundeval-data-dir=cases", "-p", "no:cacheprovider", *extra]


def test_an_outside_task_runs_with_its_own_options(pytester: pytest.Pytester, tiny_dir: Path) -> None:
    result = pytester.runpytest(*_tiny_args())
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*groundeval tiny*", "agent: tiny_task:echo  *"])
    result = pytester.runpytest(*_tiny_args("--groundeval-option=min_f1=0.0"))
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("--groundeval-option=min_f=0.5", "ERROR: --groundeval-option=min_f=0.5: the tiny task has no option 'min_f' (did you mean min_f1?) "
                                          "(its options: min_f1)"),
        ("--groundeval-option=min_f1=2", "ERROR: --groundeval-option min_f1='2': must be between 0 and 1 "
                                         "(option min_f1 of the tiny task)"),
        ("--groundeval-option=min_f1", "ERROR: --groundeval-option='min_f1': expected KEY=VALUE, e.g. min_f1=0.8"),
        ("--groundeval-case-ids=file", "ERROR: --groundeval-case-ids does not apply to the tiny task; drop it"),
    ],
)
def test_bad_task_options_are_usage_errors(pytester: pytest.Pytester, tiny_dir: Path, extra: str, message: str) -> None:
    result = pytester.runpytest(*_tiny_args(extra))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_ini_option_lines_and_first_class_flags(pytester: pytest.Pytester, tiny_dir: Path) -> None:
    pytester.makeini("""
        [pytest]
        groundeval_option =
            min_f1 = 0.0
    """)
    pytester.runpytest(*_tiny_args()).assert_outcomes(passed=2)
    # The command line wins over the ini file; a built-in flag applies to any task declaring that key.
    pytester.runpytest(*_tiny_args("--groundeval-min-f1=1.0")).assert_outcomes(passed=1, failed=1)
    pytester.runpytest(*_tiny_args("--groundeval-option=min_f1=1")).assert_outcomes(passed=1, failed=1)


def test_an_outside_task_without_cases_needs_a_data_dir(pytester: pytest.Pytester, tiny_dir: Path) -> None:
    result = pytester.runpytest("--groundeval-task=tiny_task:TinyTask", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --groundeval-task='tiny_task:TinyTask' ships no cases*--groundeval-data-dir=DIR"])


def test_unknown_task_lists_the_choices(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--groundeval-task=nosuch:Task")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --groundeval-task='nosuch:Task': task 'nosuch:Task': cannot import 'nosuch'*"])



def test_tasks_and_agents_are_loaded_by_one_loader_with_the_same_messages(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from groundeval.agents.base import make_agent
    from groundeval.errors import ConfigError
    from groundeval.tasks import task_class

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("class Thing:\n    pass\n")
    for load, kind in ((task_class, "task"), (make_agent, "agent")):
        with pytest.raises(ConfigError, match=rf"^{kind} 'no_such_module:X': cannot import 'no_such_module'"):
            load("no_such_module:X")
        with pytest.raises(ConfigError, match=rf"^{kind} 'mine:Other': 'mine' has no attribute 'Other'"):
            load("mine:Other")
