"""One bound on what an answer can add to every output: lists, strings and failure messages keep a sample.

A raw answer is capped by characters (``run_record.MAX_RAW_OUTPUT_CHARS``, with its full length
and hash). What is derived from it is capped here, by two limits: every list inside a case's
``parsed`` answer, its ``details`` and its error's ``details`` keeps its first ``MAX_LISTED``
items, and every string there (a dict key included) its first ``MAX_CHARS`` characters; the
failure message (and the error's message) keeps its first ``MAX_LISTED`` lines, each cut to
``MAX_CHARS`` characters, plus one line saying how many lines were left out. A cut string ends in
``CUT_MARK`` followed by its full length. The full length of everything cut is kept in the case
record's ``capped`` (path -> items of a list, characters of a string, lines of a message), so
the counts survive; the scores were computed on the whole answer before anything was cut. The
junit file, the terminal, the Markdown summary, the HTML report and LangSmith read the capped
record (LangSmith also cuts each field it sends to ``MAX_CHARS`` characters of JSON with
``cut_text``), so these limits bound them all: a 10 MB answer of 10,000 items, or of one item
with a 5 MB display, costs each output a sample.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CUT_MARK", "MAX_CHARS", "MAX_LISTED", "cap_lines", "cap_lists", "cap_text", "cut_text"]

MAX_LISTED = 100
"""Most items of any list, and lines of a failure message, kept in a case record and its outputs."""
MAX_CHARS = 2_000
"""Most characters of any string (and of each line of a failure message) kept in a case record and its outputs."""
CUT_MARK = "… [cut: "
"""What a cut string ends with, followed by ``<full length> characters]``."""


def cut_text(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit`` and ``… [cut: N characters]``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{CUT_MARK}{len(text)} characters]"


def cap_text(text: str, path: str, capped: dict[str, int]) -> str:
    """``cut_text(text)``, recording ``path -> full length in characters`` in ``capped`` when it cut."""
    if len(text) > MAX_CHARS:
        capped[path] = len(text)
        return cut_text(text)
    return text


def cap_lists(value: Any, path: str, capped: dict[str, int]) -> Any:
    """``value`` with every list cut to ``MAX_LISTED`` items and every string to ``MAX_CHARS`` characters.

    Args:
        value: A JSON-like value (dicts, lists, scalars).
        path: Its name in the record (``parsed``, ``details``); nested paths join keys with ``.``
            and list positions as ``[i]`` (``details.extra``, ``parsed[3].display``).
        capped: Filled with ``path -> full length`` for every list (items) and string
            (characters) that was cut; a cut key is named by its cut form.

    Returns:
        The value, sharing everything that was not cut.
    """
    if isinstance(value, str):
        return cap_text(value, path, capped)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = cap_text(k, f"{path}.{cut_text(k)}", capped) if isinstance(k, str) else k
            out[key] = cap_lists(v, f"{path}.{key}", capped)
        same = len(out) == len(value) and all(k in out and out[k] is v for k, v in value.items())
        return value if same else out
    if isinstance(value, list | tuple):
        if len(value) > MAX_LISTED:
            capped[path] = len(value)
        kept = list(value[:MAX_LISTED])
        items = [cap_lists(v, f"{path}[{i}]", capped) for i, v in enumerate(kept)]
        return value if len(value) <= MAX_LISTED and all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def cap_lines(text: str, path: str, capped: dict[str, int]) -> str:
    """``text`` cut to its first ``MAX_LISTED`` lines of at most ``MAX_CHARS`` characters each.

    A line saying how many were left out follows the kept lines. Records ``path -> full line
    count`` in ``capped`` when lines were left out, and ``path[i] -> full length in characters``
    for each kept line ``i`` that was cut.
    """
    if text.count("\n") < MAX_LISTED and len(text) <= MAX_CHARS:
        return text
    lines = text.splitlines()
    kept = [cap_text(line, f"{path}[{i}]", capped) for i, line in enumerate(lines[:MAX_LISTED])]
    if len(lines) <= MAX_LISTED:
        return text if all(a is b for a, b in zip(kept, lines, strict=True)) else "\n".join(kept)
    capped[path] = len(lines)
    left = len(lines) - MAX_LISTED
    return "\n".join([*kept, f"... {left} more lines (the first {MAX_LISTED} of {len(lines)} are shown)"])
