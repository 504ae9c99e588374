"""The literal option table a plain pytest run registers is the option table's own (issue 35)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from groundeval.plugin import option_flags
from groundeval.plugin.option_table import FLAGS_FILE, GENERIC, OPTIONS, flags_source
from tests._paths import REPO


def test_the_generated_flags_module_is_the_tables() -> None:
    written = (REPO / FLAGS_FILE).read_text(encoding="utf-8")
    assert written == flags_source(), "stale: run uv run python scripts/option_flags.py"
    assert [row[0] for row in option_flags.FLAGS] == [opt.name for opt in OPTIONS]
    assert option_flags.GENERIC == GENERIC


def test_every_option_of_the_table_is_registered_with_its_metavar_default_and_ini_twin() -> None:
    parser = pytest.Parser(_ispytest=True)
    from groundeval.plugin.option_register import add_options

    add_options(parser)
    group = parser.getgroup("groundeval")
    registered = {opt.names()[0]: opt for opt in group.options}
    assert set(registered) == {f"--groundeval-{opt.name}" for opt in OPTIONS} | {f"--groundeval-{GENERIC}"}
    for opt in OPTIONS:
        attrs = registered[f"--groundeval-{opt.name}"].attrs()
        assert attrs["dest"] == opt.dest
        assert attrs["help"].startswith(opt.help)
        if opt.flag:
            assert attrs["const"] == "true" and attrs["nargs"] == 0 and attrs["help"].endswith("Default: off.")
        else:
            assert attrs["metavar"] == opt.metavar
            assert (opt.default is None) or attrs["help"].endswith(f"Default: {opt.default}.")
        assert opt.dest in parser._inidict


def test_the_script_checks_and_rewrites_the_module() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "option_flags.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
