"""The end of a run on the controlling process: the run record, the verdicts, the gate, the outputs.

Order matters: the record is built from every gathered case record, then the case verdicts
(``--groundeval-min-pass-rate``) and the regression gate settle the exit status, then the Markdown
summary is written from the record (a failed write makes the run exit 2), then the record is
written with the final status, then junit's suite properties are derived from it. A failure in the
gate or a summary is reported and never loses the record.
"""

from __future__ import annotations

import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from groundeval.execution.outcome_policy import not_run_record
from groundeval.records.aggregate import summarize
from groundeval.records.run_record import RunRecord, fixtures_of, package_versions
from groundeval.records.trial_stats import verdict_exit_status
from groundeval.records.write_errors import describe
from groundeval.redaction import clean, clean_text, strip_userinfo

if TYPE_CHECKING:
    from groundeval.execution.outcome_policy import RunInfo
    from groundeval.records.run_record import CaseRecord
    from groundeval.records.run_writer import RunWriter
    from groundeval.reporting import GateResult
    from groundeval.run.settings import Settings
    from groundeval.tasks.base import Task

__all__ = ["RunState", "build_record", "finish_run", "run_settings"]


class RunState(Protocol):
    """What the end of a run reads of the run (``plugin.controller.RunController`` provides it), and what it sets."""

    config: pytest.Config
    settings: Settings
    task: Task
    info: RunInfo
    records: dict[str, CaseRecord]
    selected: list[str]
    collection_errors: dict[str, dict[str, str]]
    stop_reason: str | None
    started: datetime
    t0: float
    concurrency: int
    discarded_calls: int
    baseline: Any
    twin_seed: int

    @property
    def peak_in_flight(self) -> int:
        """The most agent calls in flight at once in one process."""
        ...

    writer: RunWriter
    gate: GateResult | None
    run_record: RunRecord | None
    record_path: Path | None
    output_failures: list[str]

    @property
    def stop_file(self) -> Path:
        """The stop file workers watch (removed at the end)."""
        ...

    @property
    def cooldown_file(self) -> Path:
        """The run's pause after a rate-limit answer, shared by its workers (removed at the end)."""
        ...

    def build_record(self, exit_status: int | None = None) -> RunRecord:
        """The run record from everything gathered so far."""
        ...


def build_record(gs: RunState, exit_status: int | None = None) -> RunRecord:
    """The run record from everything gathered so far; not-run cases get a ``not_run`` record.

    ``complete`` is true only when every selected case has a record of a case that ran.
    """
    reason = gs.stop_reason or "the run stopped before this case (-x, --maxfail, Ctrl-C or a signal)"
    missing = [n for n in gs.selected if n not in gs.records]
    cases = sorted(
        [*gs.records.values(), *(not_run_record(gs.info, n, reason) for n in missing)],
        key=lambda r: (r.case_id, r.trial),
    )
    complete = not missing and bool(gs.selected or not gs.collection_errors)
    model = gs.info.model or next((c.model for c in cases if c.model), None)
    facts = getattr(gs.task, "run_facts", None)
    record = RunRecord(
        run_id=gs.info.run_id, task=gs.info.task, agent=clean_text(gs.info.agent),
        model=clean_text(model) if model else None,
        started_at=gs.started.isoformat(), finished_at=datetime.now(UTC).isoformat(),
        duration_s=round(time.perf_counter() - gs.t0, 3), complete=complete,
        stop_reason=None if complete else (gs.stop_reason or _why_incomplete(gs)), exit_status=exit_status,
        settings=run_settings(gs),
        task_facts=dict(facts() if callable(facts) else facts or {}),
        packages=package_versions(), data_dir=str(gs.settings.data_dir),
        collection_errors=list(gs.collection_errors.values()),
        dropped_calls=gs.discarded_calls,
        peak_in_flight=gs.peak_in_flight,
        metric_names=list(gs.task.metric_names),
        metric_directions=_directions(gs.task),
        cases=cases,
        aggregate=summarize(gs.task, cases, selected=len(gs.selected) or len(cases),
                            min_pass_rate=gs.settings.min_pass_rate),
    )
    # set after validation: validating a list of str dicts copies every dict (one a case)
    return record.model_copy(update={"fixtures": fixtures_of(cases)})


def run_settings(gs: RunState) -> dict[str, Any]:
    """``RunRecord.settings`` of the run (cleaned; a base URL without its user info).

    Also the partial file's header (``records.run_writer``), which a resumed run is checked against.
    """
    settings = gs.settings
    options = dict(settings.agent_options)
    if isinstance(options.get("base_url"), str):
        options["base_url"] = strip_userinfo(options["base_url"])
    return dict(clean({
        "task_spec": settings.task, "agent_spec": settings.agent, "limit": settings.limit,
        "task_options": settings.task_options,
        "agent_options": options, "workers": gs.config.getoption("numprocesses", default=None),
        "trials": settings.trials, "concurrency": gs.concurrency, "min_pass_rate": settings.min_pass_rate,
        "counterfactual": settings.counterfactual, "shard": None if settings.shard is None else str(settings.shard),
        "models": _models(settings), "conversation": settings.conversation,
        **({"fhir": settings.fhir} if settings.fhir is not None else {}),
        **({"twin_seed": gs.twin_seed} if settings.counterfactual else {}),
    }))


def _directions(task: Task) -> dict[str, Any]:
    """The task's ``metric_directions``, with the grounding metrics' when it declares ``lookups``."""
    from groundeval.scorers.grounding import GROUNDING_DIRECTIONS

    grounding = GROUNDING_DIRECTIONS if callable(getattr(task, "lookups", None)) else {}
    return {**grounding, **dict(getattr(task, "metric_directions", None) or {})}


def _models(settings: Any) -> list[dict[str, Any]]:
    """The models the run's agent calls through the model layer, each ``{"role": "agent", "spec"}``.

    Empty for an agent that calls no model through groundeval's layer (rule-based, replayed, a
    tool-using agent's chat model, your own). A judge's settings are the task's (``task_facts``).
    """
    from groundeval.agents.base import AgentConfig, agent_target

    spec = str(settings.agent)
    if spec.startswith("replay:"):
        return []
    try:
        cls = agent_target(spec)
    except Exception:  # an agent that cannot be loaded here has already been reported
        return []
    model_spec = getattr(cls, "model_spec", None) if isinstance(cls, type) else None
    if not callable(model_spec):  # the class declares no provider model (``agents.base.Agent``)
        return []
    config = AgentConfig(model=settings.model, options=dict(settings.agent_options))
    return [{"role": "agent", "spec": str(model_spec(config))}]


def _why_incomplete(gs: RunState) -> str:
    """The stop reason of an incomplete run that no stop named: no readable case file, or an interruption."""
    if not gs.selected and gs.collection_errors:
        n = len(gs.collection_errors)
        return f"no case to run: {'the' if n == 1 else 'all'} {n} case file{'s' * (n != 1)} failed collection"
    return "interrupted"


def finish_run(gs: RunState, session: pytest.Session, exitstatus: int) -> None:
    """Build and write the run record, apply the verdicts and the gate, write the summaries.

    Sets ``session.exitstatus``: cleared to 0 when every case meets ``--groundeval-min-pass-rate``
    and only tolerated trials failed; 1 when ``--groundeval-fail-on-regression`` finds a
    regression; 3 (internal error) when the gate or the Markdown summary itself failed; 2
    (interrupted: the run is incomplete) when an output file could not be written (the partial
    file, the run record or the Markdown summary; each is named in ``output_failures`` with the
    reason, and printed at the end of the terminal summary). The Markdown summary is written
    (whole or not at all) before the record, so the record's ``exit_status`` is the process's
    exit status, a failed summary included; only the record's own failed write cannot be in it.
    """
    record = gs.build_record(exit_status=exitstatus)
    status = exitstatus
    cleared = verdict_exit_status(record, exitstatus, session.testsfailed)  # --groundeval-min-pass-rate
    if cleared is not None:
        status = cleared
    failure: Exception | None = None
    try:
        if gs.baseline is not None:
            from groundeval.reporting import regressions

            gs.gate = regressions(gs.baseline, record)
            if gs.settings.fail_on_regression and gs.gate.failed and status == pytest.ExitCode.OK:
                status = pytest.ExitCode.TESTS_FAILED
    except Exception as exc:  # a harness bug after the run: say so, keep the exit status honest
        failure = exc
    if failure is not None and status == pytest.ExitCode.OK:
        status = pytest.ExitCode.INTERNAL_ERROR
    # the summaries are written from the record before the record itself, so the status a failed
    # summary sets is the status the record holds
    try:
        if gs.settings.summary_md is not None:
            from groundeval.reporting import write_summary_markdown

            write_summary_markdown(record, gs.gate, gs.settings.summary_md)
    except OSError as exc:
        gs.output_failures.append(describe(exc))
    except Exception as exc:
        failure = failure or exc
        if status == pytest.ExitCode.OK:
            status = pytest.ExitCode.INTERNAL_ERROR
    if gs.output_failures and status in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        status = pytest.ExitCode.INTERRUPTED  # an output is missing: the run is incomplete
    session.exitstatus = status
    record = gs.run_record = record.model_copy(update={"exit_status": int(status)})
    try:
        gs.record_path = gs.writer.finish(record)
    except OSError as exc:
        junit = gs.config.getoption("xmlpath", default=None)
        finished = len(gs.records)
        kept = [f"{gs.writer.partial} ({gs.writer.appended} of {finished})"] if gs.writer.appended else []
        kept += [f"the junit file {junit}"] if junit else []
        gs.output_failures.append(
            describe(exc, gs.writer.path) + (f"; the finished cases are in {' and '.join(kept)}" if kept else "")
        )
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.INTERRUPTED  # the record is missing: the run is incomplete
    if failure is not None:
        warnings.warn(f"groundeval: the regression gate or Markdown summary failed: {failure!r}", stacklevel=1)
    gs.stop_file.unlink(missing_ok=True)
    gs.cooldown_file.unlink(missing_ok=True)
    from _pytest.junitxml import xml_key  # the LogXML object; pytest has no public accessor

    xml = gs.config.stash.get(xml_key, None)
    if xml is not None:
        from groundeval.plugin.junit import suite_properties

        for name, value in suite_properties(record):
            xml.add_global_property(name, value)
