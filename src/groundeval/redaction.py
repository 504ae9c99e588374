"""One rule for every text that leaves the process: secrets redacted, text made writable.

Every output (run record, partial lines, junit properties, terminal lines, LangSmith) is built from
the case record, and the case record's strings pass through ``clean`` once, when the runner builds
it; anything written outside the record (failure text, captured output) passes through ``clean``
again where it is written.

* Secrets: the value of every environment variable whose name looks like a secret (``*KEY``,
  ``*TOKEN``, ``*SECRET``, ``*PASSWORD``, ``*CREDENTIALS``), 8 characters or longer, is replaced
  by ``[REDACTED]``; so is the userinfo of any ``scheme://user:pass@host`` URL and the value of
  an ``Authorization: Basic ...``/``Bearer ...`` header echoed in text.
* Text: a lone UTF-16 surrogate (half of an emoji, from a JSON escape such as ``\\ud83c``) becomes
  U+FFFD, so the text can be encoded as UTF-8; C0 control characters other than tab, newline and
  carriage return become U+FFFD, so no output carries terminal escape sequences or characters XML
  1.0 forbids.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "clean", "clean_text", "redact", "strip_userinfo"]

REDACTED = "[REDACTED]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]+)@")
_AUTH_HEADER = re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer)\s+)([A-Za-z0-9+/=._~-]+)")
_BAD_CHARS = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f]")


def strip_userinfo(url: str) -> str:
    """Return ``url`` without its ``user:password@`` part (``http://u:p@h/v1`` -> ``http://h/v1``)."""
    return _USERINFO.sub(lambda m: m.group("scheme"), url)


def redact(text: str) -> str:
    """Replace secret environment values, URL userinfo and echoed auth headers in ``text``."""
    for name, value in os.environ.items():
        if value and len(value) >= 8 and _SECRET_NAME.search(name) and value in text:
            text = text.replace(value, REDACTED)
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    if "uthorization" in text or "UTHORIZATION" in text:
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def clean_text(text: str) -> str:
    """``redact`` plus the text rule: lone surrogates and control characters become U+FFFD."""
    return redact(_BAD_CHARS.sub("\ufffd", text))


def clean(value: Any) -> Any:
    """Apply ``clean_text`` to every string (keys included) in a JSON-like value."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {clean_text(str(k)): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value
