"""The groundeval pytest plugin (entry point ``pytest11: groundeval``).

Thin by design: options, configuration and registration. With no ``--groundeval-task`` (and no
``groundeval_task`` ini value) it registers nothing and imports nothing beyond this package's
option table, so ordinary test runs pay nothing for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__ = ["pytest_addoption", "pytest_configure"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--groundeval-*`` options and their ini twins."""
    from groundeval.plugin.option_register import add_options

    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Switch the plugin on when a task is given.

    Collection is redirected to the task's data directory (the project's own tests are not
    collected), and collection errors do not stop the run: a malformed case file is reported and
    the other cases still run.

    Positional arguments may only be case node ids as pytest prints them
    (``groundeval/extraction::<case id>``, or ``groundeval/extraction`` for all), so a FAILED line
    can be rerun as it is printed.

    Raises:
        pytest.UsageError: Bad option values, positional paths that are not case node ids, or an
            agent that cannot run (e.g. ``claude`` without ``ANTHROPIC_API_KEY``).
    """
    import pytest

    from groundeval.plugin.option_register import task_given

    config.addinivalue_line("markers", "live: calls a real model API (needs ANTHROPIC_API_KEY)")
    if not task_given(config):  # a plain pytest run: nothing of a run is imported
        return
    from groundeval.plugin.options import read_settings

    settings = read_settings(config)
    if settings.task is None:
        return
    is_worker = hasattr(config, "workerinput")
    if not is_worker and config.args_source == pytest.Config.ArgsSource.ARGS:
        config.option.groundeval_select = _node_ids(config.args, settings.task)
    from groundeval.plugin.reporting import ReportHooks
    from groundeval.plugin.session import GroundevalSession
    from groundeval.plugin.xdist_hooks import XdistHooks

    gsession = GroundevalSession(config, settings)
    config.args = [str(settings.data_dir)]
    # the eval's own cases, not the project's testpaths: pytest's header must not say "testpaths: tests"
    config.args_source = pytest.Config.ArgsSource.ARGS
    config.option.continue_on_collection_errors = True
    if config.getini("junit_suite_name") == "pytest":  # the default; read by junitxml, configured after us
        config._inicache["junit_suite_name"] = f"groundeval-{settings.task}"
    config.pluginmanager.register(gsession, "groundeval-session")
    config.pluginmanager.register(ReportHooks(), "groundeval-reporting")
    from groundeval.plugin.progress import LiveOnReports, Progress

    if not is_worker:  # the controlling process: records, the run record, signals, the summary
        from groundeval.plugin.controller import RunController
        from groundeval.plugin.report_trim import ReportTrim

        controller = RunController(gsession)
        config.pluginmanager.register(controller, "groundeval-controller")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(XdistHooks(controller), "groundeval-xdist")
        config.pluginmanager.register(ReportTrim(config), "groundeval-report-trim")
        if config.getoption("xmlpath", default=None):
            from groundeval.plugin.junit_spool import JunitSpool

            config.pluginmanager.register(JunitSpool(), "groundeval-junit-spool")
    if is_worker:
        config.pluginmanager.register(LiveOnReports(), "groundeval-live")
    elif settings.progress != "off" and not config.getoption("collectonly", default=False):
        config.pluginmanager.register(Progress(controller, settings.progress, settings.progress_every),
                                      "groundeval-progress")


def _node_ids(args: list[str], task: str) -> list[str] | None:
    """The case node ids given as positional arguments, or None to select every case.

    Raises:
        pytest.UsageError: An argument that is not a node id of this task.
    """
    import pytest

    prefix = f"groundeval/{task}"
    ids: list[str] = []
    for arg in args:
        if arg == prefix or arg == prefix + "/":
            return None
        if not arg.startswith(prefix + "::"):
            raise pytest.UsageError(
                f"{arg!r}: with --groundeval-task, positional arguments are case node ids such as "
                f"'{prefix}::<case id>' (as printed on a FAILED line); select cases with -k or "
                "--groundeval-limit, and give your own case files with --groundeval-data-dir"
            )
        ids.append(arg)
    return ids
