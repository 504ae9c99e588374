"""One bound on what an answer can add to every output: lists and failure messages keep a sample.

A raw answer is capped by characters (``run_record.MAX_RAW_OUTPUT_CHARS``, with its full length
and hash). What is derived from it is capped by items, with one limit, ``MAX_LISTED``: every list
inside a case's ``parsed`` answer, its ``details`` and its error's ``details`` keeps its first
``MAX_LISTED`` items, and the failure message (and the error's message) its first ``MAX_LISTED``
lines plus one line saying how many were left out. The full length of everything cut is kept in
the case record's ``capped`` (path -> count), so the counts survive; the scores were computed on
the whole answer before anything was cut. The junit file, the terminal, the Markdown summary and
the HTML report read the capped record, so one limit bounds them all: a 10 MB answer of 10,000
items costs each output at most a sample of ``MAX_LISTED`` items.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_LISTED", "cap_lines", "cap_lists"]

MAX_LISTED = 100
"""Most items of any list, and lines of a failure message, kept in a case record and its outputs."""


def cap_lists(value: Any, path: str, capped: dict[str, int]) -> Any:
    """``value`` with every list longer than ``MAX_LISTED`` cut to its first ``MAX_LISTED`` items.

    Args:
        value: A JSON-like value (dicts, lists, scalars).
        path: Its name in the record (``parsed``, ``details``); nested paths join keys with ``.``
            and list positions as ``[i]`` (``details.extra``, ``parsed[3].codes``).
        capped: Filled with ``path -> full length`` for every list that was cut.

    Returns:
        The value, sharing everything that was not cut.
    """
    if isinstance(value, dict):
        out = {k: cap_lists(v, f"{path}.{k}", capped) for k, v in value.items()}
        return value if all(out[k] is v for k, v in value.items()) else out
    if isinstance(value, list | tuple):
        if len(value) > MAX_LISTED:
            capped[path] = len(value)
        kept = list(value[:MAX_LISTED])
        items = [cap_lists(v, f"{path}[{i}]", capped) for i, v in enumerate(kept)]
        return value if len(value) <= MAX_LISTED and all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def cap_lines(text: str, path: str, capped: dict[str, int]) -> str:
    """``text`` cut to its first ``MAX_LISTED`` lines plus a line saying how many were left out.

    Records ``path -> full line count`` in ``capped`` when it cut.
    """
    if text.count("\n") < MAX_LISTED:
        return text
    lines = text.splitlines()
    if len(lines) <= MAX_LISTED:
        return text
    capped[path] = len(lines)
    left = len(lines) - MAX_LISTED
    return "\n".join([*lines[:MAX_LISTED], f"... {left} more lines (the first {MAX_LISTED} of {len(lines)} are shown)"])
