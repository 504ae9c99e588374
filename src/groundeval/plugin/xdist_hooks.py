"""Hooks that exist only when pytest-xdist is installed (registered conditionally, as pytest-randomly does)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from groundeval.execution.outcome_policy import not_run_record
from groundeval.plugin.worker_keys import CONCURRENCY_KEY, DROPPED_KEY, PEAK_KEY, RESUME_KEY, RUN_ID_KEY, SPEND_STOP_KEY

if TYPE_CHECKING:
    from groundeval.plugin.controller import RunController

__all__ = ["XdistHooks"]



class XdistHooks:
    """Hooks that exist only when pytest-xdist is installed (registered conditionally)."""

    def __init__(self, gsession: RunController) -> None:
        self.gsession = gsession

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """``--dist load`` (the default) with calls made ahead: keep each worker's queue long enough.

        See ``plugin.xdist_schedule``; other modes, and a run of one call at a time, keep xdist's own.
        """
        if config.getvalue("dist") != "load":
            return None
        from groundeval.execution import DEFAULT_CONCURRENCY, LOOKAHEAD_PER_SLOT

        wanted = self.gsession.settings.concurrency or DEFAULT_CONCURRENCY  # the workers' N (no agent here)
        if wanted <= 1:
            return None
        from groundeval.plugin.xdist_schedule import AheadLoadScheduling

        return AheadLoadScheduling(config, log, ahead=wanted * LOOKAHEAD_PER_SLOT)

    def pytest_configure_node(self, node: Any) -> None:
        """Give every worker the controller's run id, and under ``--groundeval-resume`` the cases it keeps."""
        node.workerinput[RUN_ID_KEY] = self.gsession.info.run_id
        if self.gsession.resumed.kept:
            node.workerinput[RESUME_KEY] = self.gsession.resumed.kept

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Add up the calls a worker made ahead and dropped when the run stopped."""
        output = getattr(node, "workeroutput", None) or {}
        dropped = output.get(DROPPED_KEY)
        if isinstance(dropped, int):
            self.gsession.discarded_calls += dropped
        peak = output.get(PEAK_KEY)
        if isinstance(peak, int):
            self.gsession.workers_peak = max(self.gsession.workers_peak, peak)
        spend_stop = output.get(SPEND_STOP_KEY)
        if isinstance(spend_stop, str) and not self.gsession.stop_reason:
            self.gsession.stop_reason = spend_stop  # a worker reached its share of --groundeval-max-cost
        concurrency = output.get(CONCURRENCY_KEY)
        if isinstance(concurrency, int) and not self.gsession.worker_concurrency_heard:
            self.gsession.concurrency = concurrency  # the workers' effective N (the controller has no agent)
            self.gsession.worker_concurrency_heard = True

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The selected cases, as the workers collected them (identical on every worker)."""
        known = set(self.gsession.selected)
        self.gsession.selected.extend(i for i in ids if i.startswith("groundeval/") and i not in known)

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """A worker died mid-case: give the case a ``worker_crashed`` record naming the worker."""
        gs = self.gsession
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
        if gs.stop_reason:  # the run was interrupted: the worker was stopped, it did not crash
            data = not_run_record(gs.info, crashitem, f"{gs.stop_reason} while it ran").model_dump(mode="json")
            report.groundeval = data  # type: ignore[attr-defined]
            # reported as the record has it (not run: skipped), not as xdist's "worker crashed" failure
            report.outcome = "skipped"
            report.longrepr = (crashitem.split("::")[0], None, f"Skipped: {data['message']}")  # type: ignore[assignment]
            return
        record = not_run_record(gs.info, crashitem, "")
        data = record.model_dump(mode="json")
        data.update(outcome="worker_crashed", worker=worker,
                    message=f"worker_crashed: pytest-xdist worker {worker} died while running this case")
        report.groundeval = data  # type: ignore[attr-defined]
