"""The plugin's options registered with pytest, and whether a run names a task: all a plain pytest run reads.

A pytest run without ``--groundeval-task`` (or a ``groundeval_task`` ini value) imports this module
and the generated literal table ``groundeval.plugin.option_flags`` only (see
``groundeval.plugin.option_table.flags_source`` for why); the option table itself, with its
converters, and reading a run's settings (``groundeval.plugin.options.read_settings``) are imported
when a task is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groundeval.plugin.option_flags import FLAGS, GENERIC, GENERIC_HELP

if TYPE_CHECKING:
    import pytest

    from groundeval.options import Option

__all__ = ["add_options", "task_given"]


def add_options(parser: pytest.Parser) -> None:
    """Register every option in the ``groundeval`` group, each with an ini twin."""
    group = parser.getgroup("groundeval", "groundeval: evals of healthcare AI agents")
    for name, metavar, flag, help_text, default in FLAGS:
        dest = "groundeval_" + name.replace("-", "_")
        if flag:
            group.addoption(
                f"--groundeval-{name}", dest=dest, default=None, action="store_const", const="true",
                help=help_text + " Default: off.",
            )
        else:
            group.addoption(
                f"--groundeval-{name}", dest=dest, default=None, metavar=metavar, help=help_text + default,
            )
        parser.addini(dest, help_text + default, type="string", default="")
    group.addoption(
        f"--groundeval-{GENERIC}", dest=f"groundeval_{GENERIC}", action="append", default=None,
        metavar="KEY=VALUE", help=GENERIC_HELP,
    )
    parser.addini(f"groundeval_{GENERIC}", GENERIC_HELP + " One KEY=VALUE per line.", type="linelist", default=[])


def _raw_value(config: pytest.Config, name: str, dest: str) -> tuple[str | None, str]:
    """The raw value of option ``name`` and where it came from (the command-line flag or the ini key)."""
    value = config.getoption(dest, default=None)
    if value is not None:
        return str(value), f"--groundeval-{name}"
    ini = config.getini(dest)
    if isinstance(ini, str) and ini.strip():
        return ini, f"ini {dest}"
    return None, ""


def _raw(config: pytest.Config, opt: Option) -> tuple[str | None, str]:
    """The raw value of ``opt`` and where it came from (the command-line flag or the ini key)."""
    return _raw_value(config, opt.name, opt.dest)


def task_given(config: pytest.Config) -> bool:
    """True when ``--groundeval-task`` or the ``groundeval_task`` ini value names a task (not empty).

    Read before anything else of a run is imported: a plain pytest run stops here.
    """
    raw, _ = _raw_value(config, "task", "groundeval_task")
    return raw is not None and bool(raw.strip())
