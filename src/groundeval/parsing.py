r"""Recover a JSON answer from model text.

Models asked for raw JSON sometimes wrap it in a markdown fence or add a sentence before or after
it. The rule here:

1. The whole text (stripped) parses as the wanted JSON value: accepted, ``format_ok`` True.
2. Otherwise every top-level JSON value that starts at an opening bracket is decoded in place
   with ``json.JSONDecoder.raw_decode`` (so backticks or brackets inside strings are never
   touched). Exactly one acceptable value: recovered, ``format_ok`` False. Two or more:
   ambiguous, nothing is scored (a model that answers twice has not answered).
3. None: no answer, with the reason recorded. When the text held an opener whose value failed
   because a string in it holds a raw control character (a line break or tab that JSON
   requires escaped as ``\n``/``\t``), the reason names the character and where it is.

A pathological answer is a failed answer, never an exception: JSON nested deeper than
``MAX_DEPTH`` levels (Python's decoder raises ``RecursionError`` near 1,000 levels, and deep values
would break the scorers and the run record later), or more than ``MAX_FAILED_DECODES`` openers
that start no JSON value (each failed decode can scan to the end of the text), gives
``Parsed(found=False)`` with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from groundeval.scoring import Parsed

__all__ = ["MAX_DEPTH", "MAX_FAILED_DECODES", "extract_json"]

_DECODER = json.JSONDecoder()

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in an answer (a FHIR resource needs under 10)."""
MAX_FAILED_DECODES = 1000
"""Openers tried that start no JSON value before the search gives up."""


class _Pathological(Exception):
    """The answer cannot be searched safely; the message says why."""


def extract_json(raw: str, opener: str, accept: Callable[[Any], bool], empty: Any) -> Parsed:
    """Find the one JSON value in ``raw`` that ``accept`` approves.

    Args:
        raw: The model's raw answer text.
        opener: ``"["`` to look for arrays, ``"{"`` for objects.
        accept: Predicate telling whether a decoded value is an answer (e.g. a list of objects).
        empty: The value returned when nothing acceptable is found.

    Returns:
        ``Parsed(value, format_ok, error)``; never raises, also not for pathological text
        (``found=False`` with the reason).
    """
    kind = "array" if opener == "[" else "object"
    try:
        return _extract(raw, opener, accept, empty)
    except (_Pathological, RecursionError) as exc:
        why = str(exc) if isinstance(exc, _Pathological) else (
            f"the answer nests brackets too deeply to be parsed (over {MAX_DEPTH} levels)")
        return Parsed(value=empty, format_ok=False, error=f"{why}; no JSON {kind} was recovered", found=False)


def _depth_ok(value: Any) -> bool:
    """True when ``value`` nests at most ``MAX_DEPTH`` arrays/objects (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def _checked(value: Any) -> Any:
    if not _depth_ok(value):
        raise _Pathological(f"the answer nests JSON more than {MAX_DEPTH} levels deep")
    return value


def _extract(raw: str, opener: str, accept: Callable[[Any], bool], empty: Any) -> Parsed:
    text = raw.strip()
    wrapper: str | None = None
    control: json.JSONDecodeError | None = None  # the first decode that failed on a raw control character
    try:
        whole = _checked(json.loads(text))
    except ValueError as exc:  # JSONDecodeError, and an integer past Python's 4,300-digit conversion limit
        control = _control_character(exc)
    else:
        if accept(whole):
            return Parsed(value=whole, format_ok=True)
        wrapper = _json_kind(whole)
    found: list[Any] = []
    failed = 0
    i = text.find(opener)
    while i != -1:
        try:
            value, end = _DECODER.raw_decode(text, i)
        except ValueError as exc:  # JSONDecodeError, and an integer past Python's 4,300-digit conversion limit
            control = control or _control_character(exc)
            failed += 1
            if failed > MAX_FAILED_DECODES:
                why = f"the answer holds over {MAX_FAILED_DECODES} brackets that start no JSON value"
                raise _Pathological(why) from None
            i = text.find(opener, i + 1)
            continue
        _checked(value)
        if accept(value):
            found.append(value)
            i = text.find(opener, end)
        else:
            i = text.find(opener, i + 1)
    kind = "array" if opener == "[" else "object"
    if len(found) == 1:
        why = (
            f"the answer is a JSON {wrapper}, not the requested {kind}; the one {kind} inside it was used"
            if wrapper
            else "the JSON answer was wrapped in a markdown fence or surrounding prose"
        )
        return Parsed(value=found[0], format_ok=False, error=why)
    if found:
        return Parsed(
            value=empty,
            format_ok=False,
            error=f"ambiguous answer: {len(found)} separate JSON values; answer with exactly one",
            found=False,
        )
    if wrapper:
        why = f"the answer is a JSON {wrapper}, not the requested {kind}"
        return Parsed(value=empty, format_ok=False, error=why, found=False)
    if control is not None:
        return Parsed(value=empty, format_ok=False, error=_control_message(control, kind), found=False)
    return Parsed(value=empty, format_ok=False, error=f"no JSON {kind} of the requested shape found", found=False)


_CONTROL_NAMES = {"\n": "a line feed", "\r": "a carriage return", "\t": "a tab"}


def _control_character(exc: ValueError) -> json.JSONDecodeError | None:
    """``exc`` when the decoder stopped at a raw control character inside a string, else None."""
    if isinstance(exc, json.JSONDecodeError) and exc.msg.startswith("Invalid control character"):
        return exc
    return None


def _control_message(exc: json.JSONDecodeError, kind: str) -> str:
    char = exc.doc[exc.pos] if 0 <= exc.pos < len(exc.doc) else "?"
    name = _CONTROL_NAMES.get(char, "a control character")
    return (
        f"the answer's JSON is invalid: {name} (U+{ord(char):04X}) inside a string at line {exc.lineno} column "
        f"{exc.colno}; JSON strings must escape control characters (\\n, \\t), so no JSON {kind} was recovered"
    )


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else "number" if isinstance(value, int | float) else "literal"
