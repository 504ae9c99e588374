"""Collection nodes: a dataset directory, its eval items, and malformed case files.

Node ids are ``groundeval/<task>::<case_id>`` wherever the data lives, so they are stable across
machines, readable in ``-k`` expressions, and identical on every xdist worker.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import _pytest
import pluggy
import pytest

import groundeval
from groundeval.datasets import Case
from groundeval.errors import DatasetError, GroundevalError, ScorerModelError
from groundeval.execution.outcome_policy import CaseRun
from groundeval.plugin.junit import junit_properties
from groundeval.records.run_record import CaseRecord
from groundeval.records.trial_ids import split_trial, split_twin, trial_name
from groundeval.shards import Shard
from groundeval.tasks.base import Task
from groundeval.tasks.counterfactual import interleave, twins, with_subject

CURRENT_TEST = "PYTEST_CURRENT_TEST"
LOADED_AT_COLLECTION = 256
"""Cases of a run that keep their content from collection and run without reading their file again.

Collection reads every case file (its id, checks, twins); the first cases keep what was read, so a
run of a few hundred cases reads each file once (case file -> typed case -> record). Later cases
keep their id, file, hash and meta only and are read again when they run (``execution.base.CaseFiles``),
so a run of thousands of cases does not hold every parsed Bundle (about 0.12 MB each) until its
case runs; a finished item drops its content (``plugin.report_trim.forget_finished``). A run with
counterfactual twins reads each file again when it runs (its twins are made then).
"""
"""The variable pytest sets to ``<node id> (<phase>)`` while an item runs (a twin's item shows its original's)."""


class CaseRunner(Protocol):
    """What the collection nodes need of the run (``GroundevalSession`` provides it)."""

    task: Task

    @property
    def shard(self) -> Shard | None:
        """``--groundeval-shard``: the shard of the cases to collect, or None for all."""
        ...

    @property
    def limit(self) -> int | None:
        """Run only the first N cases, or None for all."""
        ...

    @property
    def trials(self) -> int:
        """Items per case (``--groundeval-trials``)."""
        ...

    @property
    def counterfactual(self) -> bool:
        """Also run each case's counterfactual twins (``--groundeval-counterfactual``)."""
        ...

    @property
    def twin_seed(self) -> int:
        """The seed of the order a case's items and its twins' run in (``--groundeval-twin-seed``)."""
        ...

    def run_case(self, case: Case, nodeid: str, session: pytest.Session, trial: int = 0) -> CaseRun:
        """Run one case (trial ``trial``) and apply the stop policy."""
        ...

    def stop_requested(self) -> bool:
        """True when the run was told to stop and no new case may start."""
        ...

    def baseline_properties(self, record: CaseRecord) -> list[tuple[str, str]]:
        """The junit properties of the case against a baseline run (``regression``, ``lost``; none without one)."""
        ...

__all__ = ["BadCaseFile", "CaseFailed", "EvalDataset", "EvalItem", "explains_itself", "select_by_node_id"]

def explains_itself(record: CaseRecord, raised: BaseException | None) -> bool:
    """True when a case's setup error is shown as its record's message, not the frames that raised it.

    A classified error (``infra_error``, ``invalid_case``, ``config_error``, ...), or an
    ``agent_error`` that is one of groundeval's own errors (a replay record without the case),
    explains itself. The agent's own exception (``agent_error``) and groundeval's bugs
    (``harness_error``) keep their tracebacks.
    """
    explained = record.outcome == "agent_error" and isinstance(raised, GroundevalError)
    return record.outcome not in ("agent_error", "harness_error") or explained


class CaseFailed(AssertionError):
    """The agent's answer did not meet the task's thresholds, or there was no answer (a test *failure*)."""


class EvalDataset(pytest.Directory):
    """The directory of case files for the active task; yields one item per case (and trial, and twin)."""

    gsession: CaseRunner

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        """Yield an ``EvalItem`` per valid case and a ``BadCaseFile`` per malformed file.

        With ``--groundeval-counterfactual`` each case's twins (``tasks.counterfactual.twins``) are
        items too, one each (per trial), named ``<case_id>[cf-<perturbation>]``. A case's items and
        its twins' are collected together, in an order shuffled by the run's twin seed
        (``tasks.counterfactual.interleave``), so a twin is as likely as its original to be the
        case's first call; ``-k`` on a case id still selects its twins.
        """
        task, limit, shard = self.gsession.task, self.gsession.limit, self.gsession.shard
        seen: dict[str, str] = {}
        count = 0
        for position, path in enumerate(task.case_files(self.path)):
            if limit is not None and count >= limit:
                break
            try:
                case = task.load_case(path)
                if case.case_id in seen:
                    raise DatasetError(
                        str(path), f"case id {case.case_id!r} is already used by {seen[case.case_id]}; "
                        "keep one file per patient/case (extraction: --groundeval-case-ids=file takes ids from "
                        "the whole file names)",
                    )
            except DatasetError as exc:
                if shard is None or shard.owns(position):  # one shard reports it (groundeval.shards)
                    yield BadCaseFile.from_parent(self, name=path.name, error=exc)
                continue
            except Exception as exc:  # a task bug, or a shape its loader did not foresee: still only this file
                import traceback

                frames = "".join(traceback.format_exception(exc)[-6:])
                problem = (
                    f"harness_error: the {task.name} task's load_case raised {type(exc).__name__}: {exc} (a bug in "
                    f"the task's code, or a file shape it does not handle; other files still run)\n{frames}"
                )
                if shard is None or shard.owns(position):
                    yield BadCaseFile.from_parent(self, name=path.name, error=DatasetError(str(path), problem))
                continue
            seen[case.case_id] = path.name
            count += 1
            if shard is not None and not shard.owns(count - 1):
                continue  # another shard's case (and its trials and twins)
            trials = self.gsession.trials
            made: list[Case] = []
            if self.gsession.counterfactual:
                case = with_subject(case)
                try:
                    made = twins(task, case)
                except Exception as exc:  # a perturbation that did not move the truth as declared: a bug
                    problem = f"harness_error: the {task.name} task's counterfactual twins: {type(exc).__name__}: {exc}"
                    yield BadCaseFile.from_parent(self, name=f"{path.name}[cf]", error=DatasetError(str(path), problem))
            if self.gsession.counterfactual or count > LOADED_AT_COLLECTION:
                # read again when it runs (``execution.base.CaseFiles``): a run of thousands of
                # cases does not hold every parsed file from collection until its case runs
                case = dataclasses.replace(case, data={})
                made = [dataclasses.replace(t, data={}) for t in made]
            block = [
                EvalItem.from_parent(self, name=each.case_id if trials == 1 else trial_name(each.case_id, trial),
                                     case=each, trial=trial)
                for each in [case, *made] for trial in range(trials)
            ]
            yield from interleave(block, self.gsession.twin_seed, case.case_id) if made else block


class BadCaseFile(pytest.Collector):
    """A case file that could not be loaded: reported as a collection error, others still run."""

    def __init__(self, *, error: DatasetError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def collect(self) -> list[pytest.Item]:
        """Raise the stored ``DatasetError``."""
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        """The error message alone: file name, problem and fix."""
        return f"groundeval: {excinfo.value}"


class EvalItem(pytest.Item):
    """One eval case.

    Setup runs the case through the session (agent, truth, parsing, scoring), so anything excluded
    from the means (API trouble, an agent crash, a harness bug) is a pytest *error*. The call
    phase only reports the verdict, so a *failure* always means a wrong answer or no answer.
    """

    def __init__(self, *, case: Case, trial: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # the case as collected: with its content for the first ``LOADED_AT_COLLECTION`` cases of
        # a run (``EvalDataset.collect``), which then run without reading their file again; else
        # its id, file, hash and meta only, read again when the case runs
        # (``execution.base.CaseFiles``). ``report_trim.forget_finished`` drops the content once
        # the item is over.
        self.case = case
        self.trial = trial
        self.record: CaseRecord | None = None
        self.record_sent = False
        self.raised: BaseException | None = None  # what setup raised for an excluded outcome

    @property
    def gsession(self) -> CaseRunner:
        """The run's state (task, agent, run info)."""
        parent = self.parent
        assert isinstance(parent, EvalDataset)
        return parent.gsession

    @property
    def shown_nodeid(self) -> str:
        """The node id an agent may see for this item: its own, or for a twin its original's (same trial)."""
        name, trial = split_trial(self.name)
        of, kind = split_twin(name)
        if kind is None:
            return self.nodeid
        return f"{self.nodeid[: -len(self.name)]}{of if trial is None else trial_name(of, trial)}"

    def _neutral_current_test(self) -> None:
        """Make ``PYTEST_CURRENT_TEST`` name the original while a twin's item runs.

        pytest sets it to the item's node id at the start of each phase; an agent's call runs in
        this item's setup (or in a thread while some item runs), and the variable is the
        process's, so an agent could read ``[cf-...]`` there. pytest only writes it, and removes
        it after the item's teardown.
        """
        current = os.environ.get(CURRENT_TEST)
        if current is not None and current.startswith(f"{self.nodeid} ("):
            os.environ[CURRENT_TEST] = f"{self.shown_nodeid}{current[len(self.nodeid):]}"

    def setup(self) -> None:
        """Run the case; re-raise what made it an excluded outcome."""
        self._neutral_current_test()
        gs = self.gsession
        if gs.stop_requested():
            pytest.skip("not run: the run was interrupted")
        run = gs.run_case(self.case, self.nodeid, self.session, self.trial)
        self.record = run.record
        self.user_properties.extend(junit_properties(run.record, gs.task.metric_names))
        self.user_properties.extend(gs.baseline_properties(run.record))
        if run.exc is not None:
            self.raised = run.exc
            raise run.exc

    def runtest(self) -> None:
        """Report the verdict computed in setup."""
        self._neutral_current_test()
        assert self.record is not None
        if self.record.outcome != "passed":
            raise CaseFailed(self.record.message or self.record.outcome)

    def teardown(self) -> None:
        """Nothing to release; the twin's ``PYTEST_CURRENT_TEST`` names its original here too."""
        self._neutral_current_test()

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        """A verdict as its message and the case file; anything else as pytest shows it."""
        exc = excinfo.value
        if isinstance(exc, CaseFailed):
            twin = self.case.meta.get("counterfactual")
            changed = f"; counterfactual twin: {twin.get('change')}" if isinstance(twin, dict) else ""
            return f"{exc}\n(case file: {self.case.source.name}{changed})"
        if isinstance(exc, ScorerModelError) and self.record is not None:  # the judge's failure: its message
            return f"{self.record.message}\n(case file: {self.case.source.name})"
        return super().repr_failure(excinfo)

    def _repr_failure_py(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> Any:
        """A setup error that explains itself (``explains_itself``) as its record's message.

        pytest formats a setup error here; the message is what the report shows (the reporting
        hook sets the same text), so the traceback, which costs pytest a parse of the source file
        of every frame, is not built for it.
        """
        record, raised = self.record, excinfo.value
        if record is not None and raised is self.raised and explains_itself(record, raised):
            return record.message or record.outcome
        return super()._repr_failure_py(excinfo, style)

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """Hide pytest's and pluggy's plumbing; for an agent's error hide groundeval's frames too."""
        hidden: tuple[Path, ...] = tuple(Path(str(m.__file__)).parent for m in (_pytest, pluggy))
        if self.record is not None and self.record.outcome == "agent_error":
            hidden += (Path(str(groundeval.__file__)).parent,)
        prefixes = tuple(str(p) for p in hidden)
        traceback = excinfo.traceback
        kept = traceback.filter(lambda entry: not str(entry.path).startswith(prefixes))
        return kept or traceback[-1:]

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Point reports at the case file."""
        suffix = f" [trial-{self.trial}]" if self.gsession.trials > 1 else ""
        return self.case.source, None, f"{self.gsession.task.name}: {self.case.case_id}{suffix}"


def select_by_node_id(config: pytest.Config, items: list[Any], wanted: list[str], data_dir: Path) -> None:
    """Keep only the cases named by node id (``groundeval/<task>::<id>``); a case's id selects its trials and twins.

    Raises:
        pytest.UsageError: A named case does not exist; the message lists a few that do. A node id
            with a ``[trial-i]`` suffix this run does not have (``--groundeval-trials`` not given,
            or at most i) says to pass ``--groundeval-trials K`` (K > i), or to drop the suffix.
    """
    known = {item.nodeid for item in items}
    cases = {split_trial(n)[0] for n in known}
    unknown = [n for n in wanted if n not in known and n not in cases]
    if unknown:
        some = ", ".join(sorted(known)[:3])
        case, trial = split_trial(unknown[0])
        if trial is not None:
            trials = 1 + max((getattr(item, "trial", 0) for item in items), default=0)
            need = max(trial + 1, 2)  # with one trial, items have no [trial-i] suffix at all
            raise pytest.UsageError(
                f"no case {unknown[0]!r} in {data_dir}: this run has {trials} trial(s) per case, so [trial-{trial}] "
                f"does not exist; pass --groundeval-trials {need} (or more) to rerun that trial, or name the case "
                f"without the suffix ({case!r}); case ids look like: {some}"
            )
        raise pytest.UsageError(f"no case {unknown[0]!r} in {data_dir}; case ids look like: {some}")
    keep = set(wanted)
    chosen = [item for item in items if item.nodeid in keep or split_trial(item.nodeid)[0] in keep
              or split_twin(split_trial(item.nodeid)[0])[0] in keep]
    ids = {item.nodeid for item in chosen}
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in ids])
    items[:] = chosen


def deselect_fhir_only(config: pytest.Config, items: list[Any], task: Any) -> None:
    """Without ``--groundeval-fhir``, leave out the cases that run only over FHIR (``tasks.fhir_only``), saying why.

    Whole records do not fit a prompt. They are deselected (pytest counts them as such, on every
    xdist worker alike, and the run record does not count them as selected) and one warning names
    how many and why.
    """
    from groundeval.tasks.fhir_only import FHIR_ONLY_REASON, serves_records_over_fhir

    whole = [i for i in items if isinstance(i, EvalItem) and i.case.meta.get("record_access") == "fhir"]
    if not whole or serves_records_over_fhir(task):
        return
    config.hook.pytest_deselected(items=whole)
    left = set(map(id, whole))
    items[:] = [i for i in items if id(i) not in left]
    import warnings

    warnings.warn(pytest.PytestWarning(f"{len(whole)} case(s) not run: {FHIR_ONLY_REASON}"), stacklevel=1)
