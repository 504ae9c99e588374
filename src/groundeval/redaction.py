"""Keep credentials out of messages, metadata and run records.

* :func:`strip_userinfo` removes ``user:password@`` from a URL (``--groundeval-base-url``,
  ``ANTHROPIC_BASE_URL``) before it is shown or recorded; the SDK still gets the full URL and
  sends the credentials as HTTP Basic auth.
* :func:`redact` replaces ``Basic``/``Bearer`` tokens and given secrets in free text (a server's
  error body that echoes the ``Authorization`` header, captured output).
* :func:`url_secrets` lists the forms a URL's credentials can take in such text (raw,
  percent-decoded, the password alone, the Basic-auth token), for :func:`redact`.

Nothing here imports anything beyond the standard library.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["redact", "strip_userinfo", "url_secrets"]

_TOKEN = re.compile(r"\b(Basic|Bearer)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


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


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with ``Basic``/``Bearer`` tokens and each of ``secrets`` replaced by ``[redacted]``."""
    text = _TOKEN.sub(lambda m: f"{m.group(1)} [redacted]", text)
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return text
