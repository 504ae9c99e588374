"""``groundeval`` command: the same run as ``pytest --groundeval-task=...``, through one path.

The CLI only translates its flags into ``--groundeval-*`` options and calls ``pytest.main``; the
plugin does the work and prints the summary, so a CLI run and a pytest run cannot drift apart.

Examples::

    uv run groundeval --agent baseline
    uv run groundeval --task write --agent baseline-write --limit 5
    uv run groundeval --agent baseline -n 2 -- --junitxml=out.xml -k Liz
    uv run groundeval --agent baseline --shard 2/3
    uv run groundeval merge runs-1/*.json runs-2/*.json runs-3/*.json -o run.json
    uv run groundeval --version
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence

from groundeval.extras import extra_missing_message, has_module
from groundeval.registry import builtins as _builtins

__all__ = ["CLI_DEFAULTS", "SUBCOMMANDS", "build_parser", "main", "pytest_args", "version"]

SUBCOMMANDS: dict[str, str] = {
    "calibrate": "measure a judge against labels (kappa, agreement) and write its card",
    "export": "write run records as one CSV or Parquet table (one row per case and trial)",
    "compare": "compare two run records (paired intervals, per-case changes, the gate), or N as a matrix",
    "report": "write a self-contained HTML report of one run, two compared, or a matrix of N",
    "view": "browse run records in a local web viewer (127.0.0.1): cases, conversations, runs side by side",
}
"""Subcommands of ``groundeval`` that read files and run no eval; ``groundeval SUB --help`` for each."""

MODEL_DEFAULT = "claude-opus-4-8"
"""Default model id of the ``claude`` and ``langgraph`` agents (``groundeval.agents.claude.DEFAULT_MODEL``;
kept as a literal so ``--help`` imports no agent; a test checks that the two agree)."""

CLI_DEFAULTS: dict[str, str] = {
    "task": "extraction",
    "agent": "the task's own: " + _builtins.default_agents(),
    "model": f"{MODEL_DEFAULT} for claude and langgraph; smollm2 for local; openai-compatible needs one",
    "limit": "all cases",
    "twin-seed": "one drawn for each run, kept in its run record (settings.twin_seed)",
    "shard": "every case (no split)",
    "data-dir": "the packaged fixtures",
    "temperature": "none sent, so the model's own; Claude Opus 4.7 and later reject an explicit one",
    "recursion-limit": "25",
    "base-url": "none; openai-compatible needs one",
    "n-ctx": "8192",
    "cache": "off: every case calls the agent",
    "max-cost": "no limit",
    "prices": "the packaged list prices (Claude models)",
    "concurrency": "4 for the built-in agents, 1 for an agent of your own unless it sets thread_safe = True",
    "judge-card": "the packaged card of the same judge and prompt, if any",
    "judge-cache": "off: a model judge is asked on every run",
}
"""Shown default of each option whose plugin default is ``None`` (meaning "decided later")."""

_OWN_DEFAULT = re.compile(r"\s*\(default: [^()]*\)|\s*Default: (?:[^.()]|\([^()]*\))*\.\s*$")
"""A default already written into a plugin option's help: "(default: X)" or a final "Default: X." sentence."""


def version() -> str:
    """The installed groundeval version (package metadata), or ``"unknown"`` from a bare checkout."""
    from importlib.metadata import PackageNotFoundError, version as dist_version

    try:
        return dist_version("groundeval")
    except PackageNotFoundError:
        return "unknown"


def _help(text: str, default: str) -> str:
    """The option's help without its own default, ending in ``(default: X).``: one style for all."""
    return f"{_OWN_DEFAULT.sub('', text).rstrip().rstrip('.')} (default: {default})."


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; one flag per ``--groundeval-*`` plugin option, same names.

    Every flag's help ends in ``(default: ...)``.
    """
    from groundeval.plugin.option_table import OPTIONS

    parser = argparse.ArgumentParser(
        prog="groundeval",
        description="Run a groundeval task (a pytest run with the groundeval plugin switched on).",
        epilog="subcommands (no eval is run; 'groundeval SUBCOMMAND --help' for each):\n"
        + "".join(f"  {name:<10} {text}\n" for name, text in SUBCOMMANDS.items())
        + "\nArguments after '--' go to pytest unchanged, e.g. groundeval --agent baseline -- --junitxml=out.xml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # --min-f must not silently mean --min-f1
    )
    parser.add_argument("--version", action="version", version=f"groundeval {version()}")
    for opt in OPTIONS:
        shown = f"{opt.default:g}" if isinstance(opt.default, float) else str(opt.default)
        default = CLI_DEFAULTS.get(opt.name, shown)
        if opt.name == "task":
            parser.add_argument(
                "--task", dest="task", default="extraction", metavar=opt.metavar,
                help=_help(
                    "The eval task: " + _builtins.task_choices() + ", a registered task or package.module:Class.",
                    default,
                ),
            )
            continue
        if opt.flag:
            parser.add_argument(
                f"--{opt.name}", dest=opt.key, default=None, action="store_const", const="true",
                help=_help(opt.help, "off"),
            )
            continue
        parser.add_argument(
            f"--{opt.name}", dest=opt.key, default=None, metavar=opt.metavar, help=_help(opt.help, default)
        )
    parser.add_argument(
        "--option", dest="task_option", action="append", default=None, metavar="KEY=VALUE",
        help=_help("Set an option the task declares (repeatable), e.g. --option min_f1=0.8.", "none"),
    )
    parser.add_argument(
        "-n", "--workers", default=None, metavar="N",
        help=_help("Run cases in N parallel processes (pytest-xdist; 'auto' = one per core).", "serial"),
    )
    parser.add_argument(
        "-k", dest="keyword", default=None, metavar="EXPR",
        help=_help("Run only cases matching EXPR (pytest -k).", "every case"),
    )
    parser.add_argument(
        "-x", "--exitfirst", action="store_true", help=_help("Stop at the first failing case.", "off")
    )
    parser.add_argument("-q", "--quiet", action="count", default=0, help=_help("Less output (repeatable).", "off"))
    parser.add_argument("-v", "--verbose", action="count", default=0, help=_help("One line per case.", "off"))
    parser.add_argument("pytest_extra", nargs="*", help=argparse.SUPPRESS)
    return parser


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return [s for action in parser._actions for s in action.option_strings if s.startswith("--")]


def _unknown_flag_message(parser: argparse.ArgumentParser, argv: Sequence[str], unknown: list[str]) -> str:
    """One line: the first unknown flag, a close known flag if any, else the ``--`` form."""
    flag = unknown[0].partition("=")[0]
    close = difflib.get_close_matches(flag, _flags(parser), n=1, cutoff=0.75)
    if close:
        return f"unknown flag {flag}; did you mean {close[0]}? (pytest options go after --)"
    # The suggested command: the known flags as given, then "--", then the unknown ones (with a
    # value that followed an unknown flag as its own word).
    moved: list[str] = []
    kept: list[str] = []
    after_unknown = False
    for arg in argv:
        if arg in unknown:
            moved.append(arg)
            after_unknown = "=" not in arg
        elif after_unknown and not arg.startswith("-"):
            moved.append(arg)
            after_unknown = False
        else:
            kept.append(arg)
            after_unknown = False
    suggestion = " ".join(["groundeval", *kept, "--", *moved])
    return f"unknown flag {flag}; pass pytest options after --: {suggestion}"


def pytest_args(argv: Sequence[str] | None = None) -> list[str]:
    """Translate CLI arguments into the pytest command line.

    Raises:
        SystemExit: Unknown flags (status 2; the message names the flag and shows the same
            command with pytest's options after ``--``), ``--help`` and ``--version`` (status 0).
    """
    from groundeval.plugin.option_table import OPTIONS

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(_unknown_flag_message(parser, argv, unknown))
    if not str(args.task).strip():
        parser.error(f"--task must name a task ({', '.join(_builtins.task_names())}, or package.module:Class); "
                     "it cannot be empty")
    out: list[str] = []
    for opt in OPTIONS:
        value = getattr(args, opt.key)
        if value is not None:
            out.append(f"--groundeval-{opt.name}" if opt.flag else f"--groundeval-{opt.name}={value}")
    out += [f"--groundeval-option={item}" for item in args.task_option or []]
    if args.workers is not None:
        out += ["-n", str(args.workers)]
    if args.keyword is not None:
        out += ["-k", args.keyword]
    if args.exitfirst:
        out.append("-x")
    out += ["-q"] * args.quiet + ["-v"] * args.verbose
    # The CLI has imported groundeval already, so pytest cannot assert-rewrite it (harmless:
    # eval items do not use assert statements); say so instead of warning on every run.
    out += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return out + list(args.pytest_extra)


def _serial_without_xdist(pargs: list[str]) -> list[str]:
    """``pargs`` without ``-n 0`` (serial, which needs no pytest-xdist); anything else is kept."""
    out, i = [], 0
    while i < len(pargs):
        if pargs[i] == "-n" and i + 1 < len(pargs) and pargs[i + 1] == "0":
            i += 2
            continue
        if pargs[i] in ("-n0", "--numprocesses=0"):
            i += 1
            continue
        out.append(pargs[i])
        i += 1
    return out


def _usage_problem(argv: list[str]) -> str | None:
    """The first certain usage error in the CLI's own flags (``groundeval.cli.usage.run_problem``), or None."""
    from groundeval.cli.usage import run_problem
    from groundeval.plugin.option_table import OPTIONS

    args, _ = build_parser().parse_known_args(argv)
    given = {opt.name: str(getattr(args, opt.key)) for opt in OPTIONS
             if opt.name != "task" and getattr(args, opt.key) is not None}
    return run_problem(str(args.task).strip(), given, args.task_option or [], list(args.pytest_extra))


def _mistyped_subcommand(args: Sequence[str]) -> str | None:
    """A first word close to a subcommand that is not a path pytest could collect, or None.

    ``groundeval comapre A B`` would otherwise go to pytest as paths and fail on a missing API key.
    """
    import os

    if not args or args[0].startswith("-") or os.path.exists(args[0]):
        return None
    word = args[0]
    near = difflib.get_close_matches(word, list(SUBCOMMANDS), n=1, cutoff=0.6)
    if near:
        return (f"unknown subcommand {word!r}; did you mean {near[0]}? "
                f"(subcommands: {', '.join(SUBCOMMANDS)}; see groundeval --help)")
    if "/" not in word and "." not in word and "::" not in word:
        return (f"{word!r} is neither a subcommand ({', '.join(SUBCOMMANDS)}) nor an existing path; "
                "see groundeval --help")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``groundeval`` console script; returns pytest's exit code.

    ``-n N`` without pytest-xdist installed is one line naming the ``xdist`` extra and exit
    status 4 (pytest's usage error), as for any other missing extra.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "calibrate":  # measure a judge; no pytest run
        from groundeval.cli.calibrate import main as calibrate_main

        return calibrate_main(args[1:])
    if args and args[0] == "merge":  # join a split run's records; no pytest run
        from groundeval.cli.merge import merge_main

        return merge_main(args[1:])
    if args and args[0] == "view":  # serve the run records on 127.0.0.1; no pytest run
        from groundeval.view import main as view_main

        return view_main(args[1:])
    if args and args[0] == "export":  # run records as a table; no pytest run
        from groundeval.cli.export import export_main

        return export_main(args[1:])
    if args and args[0] in ("compare", "report"):  # read run records; no pytest run
        from groundeval.cli.tools import main as tools_main

        return tools_main(args)
    mistyped = _mistyped_subcommand(args)
    if mistyped is not None:
        print(f"ERROR: {mistyped}", file=sys.stderr)
        return 2
    pargs = pytest_args(args)
    problem = _usage_problem(args)
    if problem is not None:  # before pytest starts: a usage error costs a fraction of a second
        print(f"ERROR: {problem}", file=sys.stderr)
        return 4
    if not has_module("xdist"):
        pargs = _serial_without_xdist(pargs)
        workers = any(a.startswith("--numprocesses") or (a.startswith("-n") and not a.startswith("--")) for a in pargs)
        if workers:
            print(f"ERROR: {extra_missing_message('xdist', 'pytest-xdist', '-n (parallel workers)')}", file=sys.stderr)
            return 4
    import pytest

    return int(pytest.main(pargs))

