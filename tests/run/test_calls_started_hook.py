"""``ProcessRun.on_calls_started``: called once, after the first case's calls are submitted."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundeval.datasets import default_data_dir
from groundeval.execution import Job
from groundeval.run.assembly import Role, assemble
from groundeval.run.process import ProcessRun, run_info
from groundeval.run.settings import Settings


def test_the_hook_runs_once_after_the_first_cases_calls_are_submitted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(task="labs", agent="baseline-labs", data_dir=default_data_dir("labs"),
                        out_dir=tmp_path, task_name="labs", concurrency=4)
    parts = assemble(settings, Role())
    process = ProcessRun(parts, run_info(parts, settings, "hook"), settings)
    executor = process.executor
    assert executor is not None and executor.lookahead > 0  # the baseline makes no network call: calls go ahead
    events: list[str] = []
    submit = executor.submit
    monkeypatch.setattr(executor, "submit", lambda jobs: (events.append(f"submit {len(jobs)}"), submit(jobs))[1])
    process.on_calls_started = lambda: events.append("started")
    process.start()
    jobs = [Job(f"groundeval/labs::{case.case_id}", case)
            for case in map(parts.task.load_case, parts.task.case_files(settings.data_dir)[:3])]
    try:
        for i, job in enumerate(jobs):
            step = process.run(job, ahead=lambda window, i=i: jobs[i:i + window])
            assert step.run is not None
    finally:
        process.end()
    assert events[:2] == ["submit 3", "started"]  # the first case's calls were queued before the hook ran
    assert events.count("started") == 1
    assert process.on_calls_started is None
