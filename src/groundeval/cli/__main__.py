"""``python -m groundeval.cli``: the same as the ``groundeval`` command."""

from __future__ import annotations

from groundeval.cli.entry import console_main

console_main()
