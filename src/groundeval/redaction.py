r"""One rule for every text that leaves the process: secrets redacted, text made writable.

Every output (run record, partial lines, junit properties, terminal lines, LangSmith) is built from
the case record, and the case record's strings pass through ``clean`` once, when the runner builds
it; anything written outside the record (failure text, captured output) passes through
``clean_text`` where it is written.

* Secrets (``redact``): the value of every environment variable whose name looks like a secret
  (``*KEY``, ``*TOKEN``, ``*SECRET``, ``*PASSWORD``, ``*CREDENTIALS``), 8 characters or longer,
  becomes ``[REDACTED]``; so does the userinfo of any ``scheme://user:pass@host`` URL, a
  ``Basic``/``Bearer`` token a server echoes (``Basic [redacted]``: 8 or more characters with a
  digit, a symbol or mixed case, so that "Basic metabolic panel" stays), and any secret passed in
  (``url_secrets`` lists the forms a URL's credentials can take). Agent answers are scored after
  ``redact`` (``execution.call.call_agent``), which is why it must leave ordinary words alone.
* Text (``clean_text``): a lone UTF-16 surrogate (half of an emoji, from a JSON escape such as
  ``\ud83c``) becomes U+FFFD, so the text can be encoded as UTF-8; so do C0 control characters
  other than tab, newline and carriage return, DEL and the C1 controls (U+0080 to U+009F, among
  them U+009B CSI and U+009D OSC, which terminals read as ESC ``[`` and ESC ``]``), so no output
  carries terminal escape sequences or characters XML 1.0 forbids or discourages.

Nothing here imports anything beyond the standard library.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["REDACTED", "clean", "clean_text", "redact", "strip_userinfo", "url_secrets"]

REDACTED = "[REDACTED]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]+)@")
_TOKEN = re.compile(r"\b(Basic|Bearer)\s+([A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
_TOKEN_MARK = re.compile(r"[0-9._~+/=-]")


def _credential(token: str) -> bool:
    """True for what an auth token looks like, false for a word ("Basic metabolic panel").

    A token has a digit or a symbol, or mixed case after its first letter (base64, opaque keys).
    """
    rest = token[1:]
    return _TOKEN_MARK.search(token) is not None or (rest != rest.lower() and rest != rest.upper())


def _token(match: re.Match[str]) -> str:
    return f"{match.group(1)} [redacted]" if _credential(match.group(2)) else match.group(0)
_BAD_CHARS = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Lone surrogates, C0 controls but tab, LF and CR, DEL and the C1 controls (U+0080 to U+009F:
U+009B is a one-character CSI and U+009D an OSC, read as ESC [ and ESC ] by many terminals)."""


def strip_userinfo(url: str) -> str:
    """The URL without its ``user:password@`` part, for messages, metadata and run records.

    ``http://user:pass@host:8000/v1`` -> ``http://host:8000/v1``; a URL without userinfo, or a
    string that is not a URL, comes back unchanged.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def url_secrets(url: str | None) -> list[str]:
    """The credentials inside ``url`` in every form a server may echo them (raw, Basic token).

    Returns:
        Strings of at least 3 characters; empty when ``url`` has no userinfo.
    """
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    if "@" not in parts.netloc:
        return []
    raw = parts.netloc.rpartition("@")[0]
    found: list[str] = []
    for userinfo in {raw, unquote(raw)}:
        password = userinfo.partition(":")[2]
        found += [userinfo, password, base64.b64encode(userinfo.encode()).decode()]
    return [s for s in found if len(s) >= 3]


ENVIRON_TRIES = 100
"""How many times a snapshot of ``os.environ`` is retried when another thread changes it meanwhile."""


def _environ_items() -> list[tuple[str, str]]:
    """A snapshot of ``os.environ`` that a change made meanwhile by another thread cannot break.

    pytest sets and deletes ``PYTEST_CURRENT_TEST`` on the main thread around every test phase,
    while calls made ahead (``--groundeval-concurrency``) redact their answers in threads; iterating
    ``os.environ`` across such a change raises ``KeyError`` (a key listed, then deleted) or
    ``RuntimeError`` (the mapping changed size). Changes are rare, so a retry succeeds; the last
    try lets the error through rather than redact with a partial view.
    """
    for _ in range(ENVIRON_TRIES - 1):
        try:
            return list(os.environ.items())
        except (KeyError, RuntimeError):
            continue
    return list(os.environ.items())


def _env_secrets() -> list[str]:
    """Values of the environment variables whose names look like secrets (8 characters or longer)."""
    return [v for name, v in _environ_items() if v and len(v) >= 8 and _SECRET_NAME.search(name)]


def _redact(text: str, env_secrets: Iterable[str], secrets: Iterable[str]) -> str:
    for value in env_secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    text = _TOKEN.sub(_token, text)
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return text


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with secret environment values, URL userinfo, echoed auth tokens and ``secrets`` replaced.

    The environment is read on every call, so a key set after start-up is still redacted.
    """
    return _redact(text, _env_secrets(), secrets)


def clean_text(text: str) -> str:
    """``redact`` plus the text rule: lone surrogates and control characters become U+FFFD."""
    return redact(_BAD_CHARS.sub("\ufffd", text))


def _needs_work(env_secrets: list[str]) -> re.Pattern[str]:
    """One pattern that finds anything ``_redact`` or the text rule could change in a string.

    A string it does not match comes back unchanged from both (no bad character, no ``@``, no
    ``Basic``/``Bearer``, no secret value), so ``clean`` skips it with one search in C; ``re``
    caches the compiled pattern, so it is built once per set of secrets.
    """
    literals = "".join(f"|{re.escape(v)}" for v in sorted(env_secrets, key=len, reverse=True))
    return re.compile(f"{_BAD_CHARS.pattern}|@|(?i:basic|bearer){literals}")


def clean(value: Any) -> Any:
    """Apply ``clean_text`` to every string (keys included) in a JSON-like value.

    The environment's secrets are read once per call, not once per string (a case record holds
    thousands of strings; reading ``os.environ`` for each cost more than scoring the case), and
    a string with nothing to change is found with one pattern search and kept as it is.
    """
    env = _env_secrets()
    needs = _needs_work(env).search

    def text(item: str) -> str:
        if type(item) is str and needs(item) is None:
            return item
        return _redact(_BAD_CHARS.sub("\ufffd", item), env, ())

    def walk(item: Any) -> Any:
        kind = type(item)
        if kind is str:
            return text(item)
        if kind is dict:
            return {text(k) if type(k) is str else walk(str(k)): walk(v) for k, v in item.items()}
        if kind is list:
            return [walk(v) for v in item]
        if kind in (int, float, bool) or item is None:
            return item
        if isinstance(item, str):
            return text(item)
        if isinstance(item, Mapping):
            return {walk(str(k)): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        return item

    return walk(value)
