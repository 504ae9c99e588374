"""``groundeval.run`` drives a run with no pytest plugin: settings by hand, assembled, one case run to its record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groundeval.datasets import default_data_dir
from groundeval.errors import ConfigError
from groundeval.execution import Job
from groundeval.records.run_record import CaseRecord
from groundeval.run.assembly import Role, assemble
from groundeval.run.process import ProcessRun, Step, run_info
from groundeval.run.settings import Settings


def _settings(tmp_path: Path, **changes: object) -> Settings:
    values: dict[str, object] = {
        "task": "labs", "agent": "baseline-labs", "data_dir": default_data_dir("labs"), "out_dir": tmp_path / "runs",
        "task_name": "labs",
    }
    values.update(changes)
    return Settings(**values)  # type: ignore[arg-type]


def test_a_packaged_case_runs_end_to_end_through_groundeval_run(tmp_path: Path) -> None:
    settings = _settings(tmp_path, max_cost=1.0)  # a rule-based agent: nothing to spend, and no refusal
    parts = assemble(settings, Role())
    assert parts.agent is not None and parts.agent_name == "baseline-labs" and parts.model is None
    info = run_info(parts, settings, "run-1")
    process = ProcessRun(parts, info, settings)
    process.start()
    try:
        source = parts.task.case_files(settings.data_dir)[0]
        case = parts.task.load_case(source)
        nodeid = f"groundeval/labs::{case.case_id}"
        step = process.run(Job(nodeid, case), ahead=lambda window: [])
    finally:
        assert process.end() == []
    assert step.stop is None and step.not_run is None and step.run is not None
    record = step.run.record
    assert isinstance(record, CaseRecord)
    assert (record.nodeid, record.run_id, record.agent, record.task) == (nodeid, "run-1", "baseline-labs", "labs")
    assert record.outcome == "passed" and record.answered and record.fixture_sha256 == case.sha256
    assert process.calls.made == 1


def test_assembly_refusals_are_groundeval_errors_not_pytest_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="agent 'baseline-write' answers the write task, not 'labs'"):
        assemble(_settings(tmp_path, agent="baseline-write"), Role())
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ConfigError, match=r"--groundeval-out-dir=.* is a file, not a directory"):
        assemble(_settings(tmp_path, out_dir=tmp_path / "a-file"), Role())


def test_the_run_package_imports_no_pytest() -> None:
    code = (
        "import sys\n"
        "import groundeval.run.process, groundeval.run.assembly, groundeval.run.settings\n"
        "import groundeval.run.stop_policy, groundeval.run.spend_check, groundeval.run.batch_mode\n"
        "loaded = sorted(m for m in sys.modules if m == 'pytest' or m.startswith(('_pytest', 'pytest.')))\n"
        "assert not loaded, loaded\n"
        "assert 'groundeval.run.process' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


class _WarmupFails:
    name = "cold"
    model = None

    def warmup(self) -> None:
        raise ValueError("no weights")

    def run(self, request: object) -> str:
        return "[]"


class _Rejected:
    name = "rejected"
    model = "m"

    def run(self, request: object) -> str:
        from groundeval.errors import AuthError

        raise AuthError("401: invalid x-api-key")


def _one_step(tmp_path: Path, agent: Any) -> tuple[Step, Step]:
    from groundeval.run.assembly import Assembly
    from groundeval.tasks.labs.task import LabsTask

    settings = _settings(tmp_path, concurrency=1)
    task = LabsTask()
    parts = Assembly(task=task, agent=agent, agent_name=str(agent.name))
    process = ProcessRun(parts, run_info(parts, settings, "run-2"), settings)
    case = task.load_case(task.case_files(settings.data_dir)[0])
    first = process.run(Job(f"groundeval/labs::{case.case_id}", case), ahead=lambda window: [])
    second = process.run(Job(f"groundeval/labs::{case.case_id}[again]", case), ahead=lambda window: [])
    process.end()
    return first, second


def test_a_warmup_that_raises_is_the_first_cases_agent_error_and_stops_the_run(tmp_path: Path) -> None:
    first, second = _one_step(tmp_path, _WarmupFails())
    assert first.run is not None and first.run.record.outcome == "agent_error"
    assert first.stop == "groundeval: the agent's warmup() raised ValueError: no weights"
    assert second.run is not None and second.run.record.outcome != "agent_error"  # warm-up is tried once per process


def test_an_outcome_that_stops_the_run_is_a_step_with_its_reason(tmp_path: Path) -> None:
    first, _ = _one_step(tmp_path, _Rejected())
    assert first.run is not None and first.run.record.outcome == "auth_error"
    assert first.stop is not None and "stopped after auth_error" in first.stop
