r"""Recover a JSON answer from model text.

Models asked for raw JSON sometimes wrap it in a markdown fence or add a sentence before or after
it. An answer is the *top-level* JSON value the prompt asks for, standing on its own:

1. The whole text (stripped) is one JSON value: if it has the requested shape it is the answer,
   ``format_ok`` True; if not (an object wrapping the requested array, ``{"data": [], ...}``), there
   is no answer: a value nested inside another is never dug out.
2. Otherwise the candidates are the JSON values that *begin a line* (nothing but spaces before
   them on their line) or begin a markdown fence's body (```` ```json [...] ````), each decoded in
   place with ``json.JSONDecoder.raw_decode`` (backticks or brackets inside strings are never
   touched). The search skips past every value it decodes, so nothing nested inside another value
   is a candidate. Exactly one candidate of the requested shape: recovered, ``format_ok`` False.
   Two or more: ambiguous, nothing is scored (a model that answers twice has not answered).
3. None: no answer, and the reason says what was found: a value of another shape (its kind and
   keys), or a value of the requested shape quoted inside a sentence (``... "entry": [] ...``): a
   fragment quoted in prose is not an answer. When a value failed to decode because a string in it
   holds a raw control character (a line break or tab that JSON requires escaped as ``\n``/``\t``),
   the reason names the character and where it is.

A pathological answer is a failed answer, never an exception: JSON nested deeper than
``MAX_DEPTH`` levels (Python's decoder raises ``RecursionError`` near 1,000 levels, and deep values
would break the scorers and the run record later), or more than ``MAX_FAILED_DECODES`` openers
that start no JSON value (each failed decode can scan to the end of the text), gives
``Parsed(found=False)`` with the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from groundeval.scoring import Parsed

__all__ = ["MAX_DEPTH", "MAX_FAILED_DECODES", "extract_json"]

_DECODER = json.JSONDecoder()

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in an answer (a FHIR resource needs under 10)."""
MAX_FAILED_DECODES = 1000
"""Openers tried that start no JSON value before the search gives up."""

_LINE_START = re.compile(r"(?m)^[ \t]*(?:```[A-Za-z0-9_+.\-]*[ \t]*)?(?=[\[{])")
"""Where a standalone value may begin: a line's first non-blank character, or a fence body's."""
_SHOWN = 60
"""Characters of a quoted fragment shown in a message."""


class _Pathological(Exception):
    """The answer cannot be searched safely; the message says why."""


def extract_json(raw: str, opener: str, accept: Callable[[Any], bool], empty: Any) -> Parsed:
    """Find the one standalone JSON value in ``raw`` that ``accept`` approves (rules: module docstring).

    Args:
        raw: The model's raw answer text.
        opener: ``"["`` when the answer is an array, ``"{"`` when it is an object.
        accept: Predicate telling whether a decoded value is an answer (e.g. a list of objects).
        empty: The value returned when nothing acceptable is found.

    Returns:
        ``Parsed(value, format_ok, error, found)``; never raises, also not for pathological text
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


class _Decoder:
    """``raw_decode`` with the failed-decode budget shared by every search of one answer."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.failed = 0
        self.control: json.JSONDecodeError | None = None  # the first decode that failed on a raw control character

    def at(self, i: int) -> tuple[Any, int] | None:
        try:
            value, end = _DECODER.raw_decode(self.text, i)
        except ValueError as exc:  # JSONDecodeError, and an integer past Python's 4,300-digit conversion limit
            self.control = self.control or _control_character(exc)
            self.failed += 1
            if self.failed > MAX_FAILED_DECODES:
                why = f"the answer holds over {MAX_FAILED_DECODES} brackets that start no JSON value"
                raise _Pathological(why) from None
            return None
        return _checked(value), end

    def standalone(self) -> Iterator[tuple[Any, int]]:
        """Values that begin a line or a fence body, skipping everything nested in a decoded value."""
        after = 0
        for match in _LINE_START.finditer(self.text):
            start = match.end()
            if start < after:
                continue
            found = self.at(start)
            if found is not None:
                yield found[0], start
                after = found[1]

    def inline(self, opener: str, accept: Callable[[Any], bool]) -> list[tuple[int, int]]:
        """``(start, end)`` of every value of the requested shape inside the text (for the message only)."""
        spans = []
        i = self.text.find(opener)
        while i != -1:
            found = self.at(i)
            if found is not None and accept(found[0]):
                spans.append((i, found[1]))
                i = self.text.find(opener, found[1])
            else:
                i = self.text.find(opener, i + 1)
        return spans


def _extract(raw: str, opener: str, accept: Callable[[Any], bool], empty: Any) -> Parsed:
    text = raw.strip()
    kind = "array" if opener == "[" else "object"
    try:
        whole = _checked(json.loads(text))
    except ValueError:  # JSONDecodeError, and an integer past Python's 4,300-digit conversion limit
        pass
    else:
        if accept(whole):
            return Parsed(value=whole, format_ok=True)
        why = f"the answer is {_describe(whole)}, not the requested {kind}"
        if isinstance(whole, dict | list):
            why += f"; a value nested inside it is not an answer (answer with the {kind} itself)"
        return Parsed(value=empty, format_ok=False, error=why, found=False)
    decoder = _Decoder(text)
    found: list[Any] = []
    other: list[Any] = []
    for value, _ in decoder.standalone():
        (found if accept(value) else other).append(value)
    if len(found) == 1:
        return Parsed(value=found[0], format_ok=False,
                      error="the JSON answer was wrapped in a markdown fence or surrounding prose")
    if found:
        return Parsed(value=empty, format_ok=False, found=False,
                      error=f"ambiguous answer: {len(found)} separate JSON values; answer with exactly one")
    reasons = []
    if other:
        shown = "; ".join(_describe(v) for v in other[:3])
        reasons.append(f"the JSON on its own is {shown}, not the requested {kind} (nothing nested inside it is "
                       "an answer)")
    quoted = decoder.inline(opener, accept)
    if quoted:
        start, end = quoted[0]
        line = text.rfind("\n", 0, start) + 1
        words = text[line:start].split()[-2:]  # the words just before the value, then the value itself
        value = " ".join(text[start:min(end, start + _SHOWN)].split())
        context = " ".join([*words, value + ("..." if end > start + _SHOWN else "")])
        what = f"a JSON {kind} appears" if len(quoted) == 1 else f"{len(quoted)} JSON {kind}s appear"
        reasons.append(f"{what} only inside a sentence ('{context}'): a value quoted in prose is not an answer; "
                       "the answer stands on its own lines or in a fence")
    if not reasons:
        reasons.append(_control_message(decoder.control, kind) if decoder.control is not None
                       else f"no JSON {kind} of the requested shape found")
    return Parsed(value=empty, format_ok=False, error="; ".join(reasons), found=False)


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


def _describe(value: Any) -> str:
    """``a JSON object with keys "data", "messageType"``, ``a JSON array of 2 items``, ``a JSON string``."""
    if isinstance(value, dict):
        keys = ", ".join(json.dumps(k) for k in list(value)[:5]) + (", ..." if len(value) > 5 else "")
        return f"a JSON object with keys {keys}" if value else "an empty JSON object"
    if isinstance(value, list):
        return f"a JSON array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, str):
        return "a JSON string"
    return "a JSON number" if isinstance(value, int | float) and not isinstance(value, bool) else "a JSON literal"
