"""``--groundeval-resume``: continue an interrupted run on the controlling process and its workers.

The controller reads the interrupted run (``records.resume``), refuses it when a setting differs
(a usage error naming each difference and the fix), takes its run id and start time, and keeps
its finished cases: their whole records go to this run's partial file (or stay where they are,
when the file resumed is this run's own partial file) and their light copies into the session,
as if they had just finished. Their items are deselected (pytest's ``deselected`` count says how
many), on the controller of a serial run and on every pytest-xdist worker, which gets the kept
node ids and case-file hashes from the controller (``RESUME_KEY``), so every worker collects the
same items. A kept case whose file no longer hashes as it did runs again, and its new record
replaces the old one. The run record counts the kept cases among the selected ones; junit and
the terminal list only the cases this run ran.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from groundeval.records.resume import ResumeError, differences, finished, read_interrupted

if TYPE_CHECKING:
    from groundeval.plugin.controller import RunController
    from groundeval.records.resume import Interrupted
    from groundeval.run.settings import Settings

__all__ = ["Resumed", "deselect_finished", "open_resume", "partial_header", "resume_run", "start_partial"]


class Resumed:
    """The kept cases of the run a session continues.

    Attributes:
        source: The interrupted run read, or None when this run resumes none.
        kept: Node id -> the case file's SHA-256 when the case ran ("" when it had none).
    """

    def __init__(self, source: Interrupted | None, kept: dict[str, str]) -> None:
        self.source = source
        self.kept = kept
        self._replaced: set[str] = set()

    def replaces(self, nodeid: str) -> bool:
        """True the first time a kept case's new record arrives (its file changed, so it ran again)."""
        if nodeid not in self.kept or nodeid in self._replaced:
            return False
        self._replaced.add(nodeid)
        return True


def open_resume(settings: Settings) -> Interrupted:
    """Read ``--groundeval-resume``'s file (its cases are read later, by ``resume_run``).

    Raises:
        pytest.UsageError: Not an interrupted run's record or partial file (``records.resume.ResumeError``).
    """
    assert settings.resume is not None
    try:
        return read_interrupted(settings.resume)
    except ResumeError as exc:
        raise pytest.UsageError(f"--groundeval-resume={settings.resume}: {exc}") from None


def partial_header(gs: RunController) -> dict[str, Any]:
    """The run facts the partial file starts with: what a resumed run is checked against and takes over."""
    import json

    from groundeval.plugin.run_end import run_settings

    run = {"run_id": gs.info.run_id, "task": gs.task.name, "started_at": gs.started.isoformat(),
           "model": gs.info.model, "data_dir": str(gs.settings.data_dir), "settings": run_settings(gs)}
    return dict(json.loads(json.dumps(run, default=str)))


def start_partial(gs: RunController) -> None:
    """Give the run's partial file its header (written with the first case)."""
    gs.writer.set_header(partial_header(gs))


def resume_run(gs: RunController, source: Interrupted) -> Resumed:
    """On the controller: check the interrupted run against this one and take over its finished cases.

    ``gs.info.run_id`` is already the interrupted run's (``open_resume``); this sets ``gs.started``
    to its start, appends each kept whole record to the partial file (or adopts its line when the
    file resumed is this run's own partial file) and keeps its light copy in ``gs.records``.

    Raises:
        pytest.UsageError: The run is of another task, it is complete, or a setting differs (each
            named, with the fix).
    """
    import json

    from groundeval.plugin.run_end import run_settings
    from groundeval.records.light import light_copy

    settings = gs.settings
    flag = f"--groundeval-resume={settings.resume}"
    if source.task != gs.task.name:
        raise pytest.UsageError(f"{flag}: a run of the {source.task} task; this run is {gs.task.name}: "
                                "resume it with --groundeval-task set as it was")
    if source.complete:
        raise pytest.UsageError(f"{flag}: that run is complete (every case ran); there is nothing to resume")
    now = {**run_settings(gs), "data_dir": str(settings.data_dir),
           "model": gs.info.model if gs.info.model is not None else source.model}
    found = differences(source, json.loads(json.dumps(now, default=str)))
    if found:
        raise pytest.UsageError(
            f"{flag}: this run's settings differ from the interrupted run's ({'; '.join(found)}); resume it with "
            "the same options it had (its settings are in the file), or start a new run without --groundeval-resume"
        )
    gs.started = datetime.fromisoformat(source.started_at)
    for stale in (gs.stop_file, gs.cooldown_file):  # a killed run's: named by the run id this run takes over
        stale.unlink(missing_ok=True)
    same_file = source.path.resolve() == gs.writer.partial.resolve()
    gs.writer.set_header(partial_header(gs))
    kept: dict[str, str] = {}
    try:
        for case, span in source.spans():
            if not finished(case):
                continue
            kept[case.nodeid] = case.fixture_sha256 or ""
            if same_file and span is not None:  # the line is already there: only remember where
                gs.writer.adopt(case.nodeid, span)
            else:
                gs.writer.append(case)
            gs.records[case.nodeid] = light_copy(case, keep_parsed=settings.counterfactual)
        if same_file:
            gs.writer.cut_to(source.whole_end)  # a line a kill cut short would glue itself to the next case
    except ResumeError as exc:
        raise pytest.UsageError(f"{flag}: {exc}") from None
    except OSError as exc:
        from groundeval.records.write_errors import describe

        raise pytest.UsageError(f"{flag}: {describe(exc)}") from None
    gs.selected = list(kept)  # the xdist controller hears the rest from its workers
    return Resumed(source, kept)


def deselect_finished(config: pytest.Config, items: list[Any], kept: dict[str, str]) -> list[str]:
    """Deselect the items of kept cases whose file still hashes as it did; return their node ids.

    The rest (including kept cases whose file changed) stay selected and run.
    """
    if not kept:
        return []
    keep: list[Any] = []
    dropped: list[Any] = []
    for item in items:
        sha = kept.get(item.nodeid)
        case = getattr(item, "case", None)
        if sha is not None and (not sha or getattr(case, "sha256", None) == sha):
            dropped.append(item)
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    return [item.nodeid for item in dropped]
