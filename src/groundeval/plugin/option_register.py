"""The plugin's options registered with pytest, and whether a run names a task: all a plain pytest run reads.

A pytest run without ``--groundeval-task`` (or a ``groundeval_task`` ini value) imports this module
and the option table (``groundeval.plugin.option_table``) only; reading and checking a run's
settings (``groundeval.plugin.options.read_settings``) is imported when a task is given.
"""

from __future__ import annotations

import pytest

from groundeval.plugin.option_table import GENERIC, OPTIONS, RUN_OPTIONS, Option

__all__ = ["add_options", "task_given"]


def add_options(parser: pytest.Parser) -> None:
    """Register every option in the ``groundeval`` group, each with an ini twin."""
    group = parser.getgroup("groundeval", "groundeval: evals of healthcare AI agents")
    for opt in OPTIONS:
        shown = "" if opt.default is None else f" Default: {opt.default}."
        if opt.flag:
            group.addoption(
                f"--groundeval-{opt.name}", dest=opt.dest, default=None, action="store_const", const="true",
                help=opt.help + " Default: off.",
            )
        else:
            group.addoption(
                f"--groundeval-{opt.name}", dest=opt.dest, default=None, metavar=opt.metavar,
                help=opt.help + shown,
            )
        parser.addini(opt.dest, opt.help + shown, type="string", default="")
    generic = (
        "Set an option the task declares, KEY=VALUE (repeatable), e.g. min_f1=0.8; for any task, "
        "including tasks from outside groundeval."
    )
    group.addoption(
        f"--groundeval-{GENERIC}", dest=f"groundeval_{GENERIC}", action="append", default=None,
        metavar="KEY=VALUE", help=generic,
    )
    parser.addini(f"groundeval_{GENERIC}", generic + " One KEY=VALUE per line.", type="linelist", default=[])


def _raw(config: pytest.Config, opt: Option) -> tuple[str | None, str]:
    """The raw value and where it came from (the command-line flag or the ini key)."""
    value = config.getoption(opt.dest, default=None)
    if value is not None:
        return str(value), f"--groundeval-{opt.name}"
    ini = config.getini(opt.dest)
    if isinstance(ini, str) and ini.strip():
        return ini, f"ini {opt.dest}"
    return None, ""


def task_given(config: pytest.Config) -> bool:
    """True when ``--groundeval-task`` or the ``groundeval_task`` ini value names a task (not empty).

    Read before anything else of a run is imported: a plain pytest run stops here.
    """
    raw, _ = _raw(config, RUN_OPTIONS[0])
    return raw is not None and bool(raw.strip())
