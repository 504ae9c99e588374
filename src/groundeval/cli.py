"""``groundeval`` command: the same run as ``pytest --groundeval-task=...``, through one path.

The CLI only translates its flags into ``--groundeval-*`` options and calls ``pytest.main``; the
plugin does the work and prints the summary, so a CLI run and a pytest run cannot drift apart.

Examples::

    uv run groundeval --agent baseline
    uv run groundeval --task write --agent baseline-write --limit 5
    uv run groundeval --agent baseline -n 2 -- --junitxml=out.xml -k Liz
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main", "pytest_args"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; one flag per ``--groundeval-*`` plugin option, same names."""
    from groundeval.plugin.options import OPTIONS

    parser = argparse.ArgumentParser(
        prog="groundeval",
        description="Run a groundeval task (a pytest run with the groundeval plugin switched on).",
        epilog="Arguments after '--' go to pytest unchanged (e.g. -- --junitxml=out.xml -x).",
    )
    for opt in OPTIONS:
        if opt.name == "task":
            parser.add_argument(
                "--task", dest="task", default="extraction", metavar=opt.metavar,
                help="the eval task: extraction or write (default: extraction)",
            )
            continue
        shown = "" if opt.default is None else f" (default: {opt.default})"
        parser.add_argument(f"--{opt.name}", dest=opt.key, default=None, metavar=opt.metavar, help=opt.help + shown)
    parser.add_argument(
        "-n", "--workers", default=None, metavar="N",
        help="run cases in N parallel processes (pytest-xdist; 'auto' = one per core)",
    )
    parser.add_argument(
        "-k", dest="keyword", default=None, metavar="EXPR", help="run only cases matching EXPR (pytest -k)"
    )
    parser.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failing case")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less output (repeatable)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="one line per case")
    parser.add_argument("pytest_extra", nargs="*", help=argparse.SUPPRESS)
    return parser


def pytest_args(argv: Sequence[str] | None = None) -> list[str]:
    """Translate CLI arguments into the pytest command line.

    Raises:
        SystemExit: Unknown flags (argparse prints usage; exit status 2).
    """
    from groundeval.plugin.options import OPTIONS

    args = build_parser().parse_args(argv)
    out: list[str] = []
    for opt in OPTIONS:
        value = getattr(args, opt.key)
        if value is not None:
            out.append(f"--groundeval-{opt.name}={value}")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``groundeval`` console script; returns pytest's exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("compare", "report"):  # read run records; no pytest run
        from groundeval.cli_tools import main as tools_main

        return tools_main(args)
    import pytest

    return int(pytest.main(pytest_args(args)))


if __name__ == "__main__":
    raise SystemExit(main())
