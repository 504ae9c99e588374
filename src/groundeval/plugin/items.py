"""Collection nodes: a dataset directory, its eval items, and malformed case files.

Node ids are ``groundeval/<task>::<case_id>`` wherever the data lives, so they are stable across
machines, readable in ``-k`` expressions, and identical on every xdist worker.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import _pytest
import pluggy
import pytest

import groundeval
from groundeval.datasets import Case
from groundeval.errors import AuthError, DatasetError, GroundevalError, InfraError
from groundeval.runner import Execution, call_agent, error_record, evaluate, junit_properties, warm_up

if TYPE_CHECKING:
    from groundeval.plugin.session import GroundevalSession

__all__ = ["UNREACHABLE_AFTER", "BadCaseFile", "CaseFailed", "EvalDataset", "EvalItem"]

UNREACHABLE_AFTER = 3
"""Infra errors on a process's first cases, with no answer yet, after which the run stops."""


class CaseFailed(AssertionError):
    """The agent's answer did not meet the task's thresholds (a test *failure*)."""


class EvalDataset(pytest.Directory):
    """The directory of case files for the active task; yields one item per case."""

    gsession: GroundevalSession

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        """Yield an ``EvalItem`` per valid case and a ``BadCaseFile`` per malformed file."""
        task, limit = self.gsession.task, self.gsession.settings.limit
        seen: dict[str, str] = {}
        count = 0
        for path in task.case_files(self.path):
            if limit is not None and count >= limit:
                break
            try:
                case = task.load_case(path)
                if case.case_id in seen:
                    raise DatasetError(
                        str(path), f"case id {case.case_id!r} is already used by {seen[case.case_id]}; "
                        "keep one file per patient/case",
                    )
            except DatasetError as exc:
                yield BadCaseFile.from_parent(self, name=path.name, error=exc)
                continue
            except Exception as exc:  # a shape the loader did not foresee: still only this file
                problem = f"cannot load this case ({type(exc).__name__}: {exc}); check the file's structure"
                yield BadCaseFile.from_parent(self, name=path.name, error=DatasetError(str(path), problem))
                continue
            seen[case.case_id] = path.name
            count += 1
            yield EvalItem.from_parent(self, name=case.case_id, case=case)


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

    Setup calls the agent and scores the answer (any exception there is a pytest *error*:
    API trouble, an agent crash, a harness bug). The call phase only reports the verdict, so a
    *failure* always means a wrong answer.
    """

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.record: dict[str, Any] | None = None
        self.record_sent = False

    @property
    def gsession(self) -> GroundevalSession:
        """The run's state (task, agent, run info)."""
        parent = self.parent
        assert isinstance(parent, EvalDataset)
        return parent.gsession

    def setup(self) -> None:
        """Run the agent, then truth, parsing and scoring."""
        gs = self.gsession
        if not gs.warmed:
            gs.warmed = True
            warm_up(gs.agent)  # imports and clients, before the first case is timed
        start = time.perf_counter()
        execution: Execution | None = None
        try:
            execution = call_agent(gs.task, gs.agent, self.case)
            gs.answered += 1
            self.record = evaluate(gs.task, gs.info, self.case, execution, self.nodeid)
        except Exception as exc:  # agent, API or harness trouble: a pytest error, never a failure
            self.record = error_record(
                gs.info, self.case, self.nodeid, exc, time.perf_counter() - start, task=gs.task, execution=execution
            )
            self.user_properties.extend(junit_properties(self.record, gs.info))
            self._stop_if_hopeless(exc)
            raise
        finally:
            if gs.stream is not None and self.record is not None:  # LangSmith; never raises
                gs.stream.record_case(self.record, execution.result.trace if execution else None)
        self.user_properties.extend(junit_properties(self.record, gs.info))

    def _stop_if_hopeless(self, exc: Exception) -> None:
        """Stop the run when no later case can succeed (each xdist worker decides for itself).

        A rejected key stops at once. Infrastructure errors stop the run when the first
        ``UNREACHABLE_AFTER`` cases of this process all hit one and none has been answered yet
        (an unreachable endpoint or a DNS failure); later bursts (429/529) do not stop it.
        """
        gs = self.gsession
        if isinstance(exc, AuthError):
            self.session.shouldstop = "groundeval: stopped after an auth_error (see the error above)"
        elif isinstance(exc, InfraError):
            gs.infra_before_first_answer += 1
            if gs.answered == 0 and gs.infra_before_first_answer >= UNREACHABLE_AFTER:
                self.session.shouldstop = (
                    f"groundeval: the first {UNREACHABLE_AFTER} cases all failed with infra_error and "
                    "none was answered: the model API looks unreachable; check the endpoint and network"
                )

    def runtest(self) -> None:
        """Report the verdict computed in setup."""
        assert self.record is not None
        if self.record["outcome"] != "passed":
            raise CaseFailed(self.record.get("message") or self.record["outcome"])

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        """Score failures and groundeval errors as plain text; other errors with a traceback."""
        exc = excinfo.value
        if isinstance(exc, CaseFailed):
            return f"{self.case.case_id} ({self.case.source.name}): {exc}"
        if isinstance(exc, GroundevalError):
            return f"{type(exc).__name__}: {exc}"
        return super().repr_failure(excinfo)

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """Show the agent's own frames, not pytest's, pluggy's or groundeval's plumbing."""
        hidden = tuple(str(Path(str(m.__file__)).parent) for m in (_pytest, pluggy, groundeval))
        traceback = excinfo.traceback
        kept = traceback.filter(lambda entry: not str(entry.path).startswith(hidden))
        return kept or traceback[-1:]

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Point reports at the case file."""
        return self.case.source, None, f"{self.gsession.task.name}: {self.case.case_id}"
