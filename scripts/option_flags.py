"""Write groundeval.plugin.option_flags from the option table (what a plain pytest run registers).

Usage::

    uv run python scripts/option_flags.py          # rewrite src/groundeval/plugin/option_flags.py
    uv run python scripts/option_flags.py --check  # exit 1 when the file is not the table's

Run it after changing ``groundeval.plugin.option_table`` or a built-in task's declared options
(``groundeval.registry.builtins``); ``tests/plugin/test_option_flags.py`` fails until you do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    from groundeval.plugin.option_table import FLAGS_FILE, flags_source

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when the file differs")
    args = parser.parse_args()
    path = ROOT / FLAGS_FILE
    expected = flags_source()
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    if args.check:
        if current != expected:
            print(f"{FLAGS_FILE} is not the option table's: run uv run python scripts/option_flags.py", file=sys.stderr)
            return 1
        return 0
    if current != expected:
        path.write_text(expected, encoding="utf-8")
        print(f"wrote {FLAGS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
