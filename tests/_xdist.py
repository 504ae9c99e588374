"""What a task's results go through under pytest-xdist, checked on an in-process serial run.

Under ``-n 2`` a worker turns each test report into a dict (``pytest_report_to_serializable``),
sends it over an execnet channel (whose serializer refuses a ``Decimal`` or a ``datetime``: the
report then never arrives and the case's result goes missing), and the controller turns it back
into a report (``pytest_report_from_serializable``) from which it writes the junit XML, the
summary and the run record. A per-task ``-n 2`` sub-run costs a controller and two workers, each
importing the stack; what it adds over a serial run for a task's own values is exactly this
trip, so the task tests make the trip here, in-process, on every report of their serial run.

How xdist spreads the cases, merges the workers' results and writes one record is the plugin's,
not a task's: the shared ``-n 2`` runs in ``tests/plugin`` check it once for every task.
"""

from __future__ import annotations

from typing import Any

import execnet
import pytest


def assert_reports_cross_to_the_controller(result: pytest.RunResult, config: pytest.Config) -> int:
    """Send every test report of an in-process run through xdist's worker-to-controller path.

    Args:
        result: The result of ``pytester.runpytest`` run in-process (it carries the hook recorder).
        config: Any pytest config (the outer run's ``request.config``); its hooks do the
            serialization xdist uses.

    Returns:
        The number of reports that made the trip (at least one).

    Raises:
        AssertionError: A report cannot be serialized, or comes back with other properties,
            another outcome or another node id.
    """
    reports: list[pytest.TestReport] = result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    assert reports, "the run made no test report"
    for report in reports:
        data: dict[str, Any] = config.hook.pytest_report_to_serializable(config=config, report=report)
        try:
            wire = execnet.loads(execnet.dumps(data))
        except execnet.DataFormatError as exc:  # DumpError: a value execnet cannot carry
            raise AssertionError(f"{report.nodeid} ({report.when}): its report cannot reach the controller: {exc}"
                                 f"; user_properties={report.user_properties!r}") from exc
        back = config.hook.pytest_report_from_serializable(config=config, data=wire)
        assert (back.nodeid, back.when, back.outcome) == (report.nodeid, report.when, report.outcome)
        assert [tuple(p) for p in back.user_properties] == [tuple(p) for p in report.user_properties], report.nodeid
    return len(reports)


def run_xdist(pytester: pytest.Pytester, *args: str, workers: int = 2) -> pytest.RunResult:
    """``pytester.runpytest(*args, "-n", workers)`` with the controller in this process.

    pytest-xdist's own tests run their controller in-process too; it saves an interpreter that
    imports the stack again. The workers are real processes and get this process's ``sys.path``
    as it was at startup (not the pytester directory), so ``pythonpath=.`` makes the agent and
    task modules written into the pytester directory importable there, as ``runpytest_subprocess``
    does through ``PYTHONPATH``.
    """
    return pytester.runpytest(*args, "-n", str(workers), "-o", "pythonpath=.")
