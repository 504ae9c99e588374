"""CLI habits: --version, unknown flags, help text that names every default, a light --help."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version

import pytest

from groundeval.cli import CLI_DEFAULTS, MODEL_DEFAULT, build_parser, main, pytest_args


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as info:
        pytest_args(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("groundeval: error: ")
    return err[-1].removeprefix("groundeval: error: ")


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"groundeval {version('groundeval')}\n"


def test_unknown_flag_shows_the_same_command_with_pytest_options_after_the_separator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    message = _error(capsys, ["--agent", "baseline", "--junitxml=out.xml", "-k", "Liz"])
    assert message == (
        "unknown flag --junitxml; pass pytest options after --: "
        "groundeval --agent baseline -k Liz -- --junitxml=out.xml"
    )
    # The suggested command is accepted and does what was meant.
    suggested = message.split(": ", 1)[1].split()[1:]
    assert pytest_args(suggested)[-1] == "--junitxml=out.xml"


def test_unknown_flag_with_a_separate_value_moves_both(capsys: pytest.CaptureFixture[str]) -> None:
    message = _error(capsys, ["--junitxml", "out.xml", "--limit", "2"])
    assert message.endswith(": groundeval --limit 2 -- --junitxml out.xml")


def test_a_misspelt_flag_gets_the_close_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert _error(capsys, ["--min-fl", "0.5"]) == (
        "unknown flag --min-fl; did you mean --min-f1? (pytest options go after --)"
    )
    # a prefix is not taken for the flag it begins (argparse would, by default)
    assert _error(capsys, ["--min-f", "0.5"]).startswith("unknown flag --min-f; did you mean --min-f1?")


def test_every_flag_names_its_default_in_one_style() -> None:
    parser = build_parser()
    shown = [a for a in parser._actions if a.help not in (None, argparse.SUPPRESS)
             and not isinstance(a, argparse._HelpAction | argparse._VersionAction)]
    assert len(shown) >= 20
    for action in shown:
        assert action.help is not None
        assert action.help.endswith(").") and action.help.count("(default: ") == 1, action.option_strings
        assert "Default:" not in action.help, action.option_strings


def test_help_names_the_model_default_and_it_is_the_agents_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from groundeval.agents.claude import DEFAULT_MODEL
    from groundeval.agents.langgraph_agent import LangGraphWriteAgent

    assert MODEL_DEFAULT == DEFAULT_MODEL
    (model,) = [a for a in build_parser()._actions if "--model" in a.option_strings]
    assert model.help is not None and "(default: claude-opus-4-8 for claude and langgraph;" in model.help
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")  # builds the agent only; no call is made
    assert LangGraphWriteAgent().model == DEFAULT_MODEL
    assert set(CLI_DEFAULTS) <= {a.dest.replace("_", "-") for a in build_parser()._actions}


def test_help_imports_no_sdk() -> None:
    # `groundeval --help` must stay instant: no anthropic, openai, LangChain, HealthChain, FHIR models.
    code = (
        "import sys\n"
        "from groundeval.cli import build_parser\n"
        "build_parser().format_help()\n"
        "heavy = ('anthropic', 'openai', 'langchain_core', 'langsmith', 'healthchain', 'fhir', 'pydantic')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_help_lists_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in ("calibrate", "compare", "report"):
        assert f"\n  {name} " in out, name


def test_a_mistyped_subcommand_gets_a_did_you_mean_not_a_pytest_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.chdir(str(tmp_path))
    assert main(["comapre", "a.json", "b.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ERROR: unknown subcommand 'comapre'; did you mean compare?")
