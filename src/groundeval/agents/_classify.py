"""Map model-SDK exceptions to groundeval's error classes, and say which ones to retry.

Both supported SDKs (``anthropic`` and ``openai``) raise the same shapes of exception:
``APIStatusError`` with ``status_code``, ``response`` (headers) and a JSON ``body``;
``APIConnectionError`` and its subclass ``APITimeoutError`` when no response came back.
LangChain's ``ChatAnthropic`` lets the ``anthropic`` exceptions through unchanged, so
``classify_anthropic_error`` serves tool-using agents too.

The mapping:

=====================================  ===========================  ==========
cause                                  class (outcome)              retried
=====================================  ===========================  ==========
401 key rejected, 402 billing, 403     ``AuthError`` (auth_error)    no
408, 409, 429, 5xx incl. 529           ``InfraError`` (infra_error)  yes
connection error, timeout              ``InfraError`` (infra_error)  yes
other 4xx (bad request, no such model) ``AgentError`` (error)        no
=====================================  ===========================  ==========

A server's ``x-should-retry: true|false`` header overrides the retry column, except for auth.
Messages name the case, the status and error type, the number of attempts and the fix; they
never include request headers, so no key can leak into a record through them.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

from groundeval.errors import AgentError, AuthError, InfraError

__all__ = [
    "advise",
    "classify_anthropic_error",
    "classify_openai_error",
    "parse_retry_after",
]

RETRY_STATUS = frozenset({408, 409, 429})
AUTH_STATUS = frozenset({401, 402, 403})
_MAX_TEXT = 300


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a response asks the client to wait, or None.

    Reads ``retry-after-ms`` (milliseconds), then ``retry-after`` as seconds or as an HTTP
    date, like the SDKs do.
    """
    if not headers:
        return None
    try:
        return float(headers["retry-after-ms"]) / 1000.0
    except (KeyError, TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())


def _connection_types(exc: BaseException) -> bool:
    """True for the SDKs' connection errors (timeouts included), matched by class name."""
    return any(cls.__name__ == "APIConnectionError" for cls in type(exc).__mro__)


def advise(exc: BaseException) -> tuple[bool, float | None]:
    """Whether a failed attempt may be retried, and how long the server asked to wait.

    Returns:
        ``(retry, wait)``: ``wait`` is the ``Retry-After`` in seconds when the response gave a
        positive one, else None (the caller backs off on its own).
    """
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if isinstance(status, int) and response is not None:
        if status in AUTH_STATUS:
            return False, None
        headers = getattr(response, "headers", {}) or {}
        flag = headers.get("x-should-retry")
        if flag == "false":
            return False, None
        if flag == "true" or status in RETRY_STATUS or status >= 500:
            wait = parse_retry_after(headers)
            return True, wait if wait is not None and wait > 0 else None
        return False, None
    return _connection_types(exc), None


def _facts(exc: BaseException) -> dict[str, Any]:
    """Status, error type, server message and request id of an SDK error (JSON-safe)."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    message = getattr(exc, "api_message", None)
    if message is None and isinstance(inner, dict):
        message = inner.get("message")
    etype = getattr(exc, "type", None)
    if etype is None and isinstance(inner, dict):
        etype = inner.get("type")
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    request_id = getattr(exc, "request_id", None) or headers.get("request-id") or headers.get("x-request-id")
    facts: dict[str, Any] = {
        "status_code": getattr(exc, "status_code", None),
        "error_type": str(etype) if etype else None,
        "api_message": str(message)[:_MAX_TEXT] if message else None,
        "request_id": request_id,
        "retry_after_s": parse_retry_after(headers) if response is not None else None,
    }
    return {k: v for k, v in facts.items() if v is not None}


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    if cause is None:
        return type(exc).__name__
    text = str(cause).strip()
    return f"{type(cause).__name__}: {text[:_MAX_TEXT]}" if text else type(cause).__name__


def _classify(
    exc: BaseException,
    case_id: str,
    *,
    provider: str,
    key_hint: str,
    where: str,
    attempts: int | None,
    note: str,
) -> AgentError:
    facts = _facts(exc)
    details: dict[str, object] = {"provider": provider, **facts}
    if note:
        details["gave_up"] = note
    tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
    tail = f" ({note})" if note else ""
    status = facts.get("status_code")
    what = " ".join(str(x) for x in (status, facts.get("error_type")) if x)
    said = f": {facts['api_message']}" if "api_message" in facts else ""
    kw: dict[str, Any] = {"attempts": attempts, "details": details}
    if isinstance(status, int):
        if status == 401:
            return AuthError(f"{case_id}: {provider} rejected the API key ({what}{said}); {key_hint}", **kw)
        if status == 402:
            return AuthError(f"{case_id}: {provider} refused the account ({what}{said}); check its billing", **kw)
        if status == 403:
            return AuthError(
                f"{case_id}: the API key may not use this model or endpoint ({what}{said}); "
                f"check --groundeval-model and the key's permissions", **kw,
            )
        if status == 429:
            return InfraError(
                f"{case_id}: rate limited by {provider} ({what}){tries}{tail}; run fewer workers (-n), "
                "raise --groundeval-max-retries or --groundeval-timeout, or retry later", **kw,
            )
        if status in RETRY_STATUS or status >= 500:
            kind = "overloaded" if status == 529 else "server error"
            return InfraError(
                f"{case_id}: {provider} {kind} ({what}{said}){tries}{tail}; retry later or raise "
                "--groundeval-max-retries", **kw,
            )
        if status == 404:
            return AgentError(
                f"{case_id}: {provider} found no such model or endpoint ({what}{said}); check "
                f"--groundeval-model{where}", **kw,
            )
        hint = ""
        if "temperature" in str(facts.get("api_message", "")):
            hint = "; this model takes no temperature: drop --groundeval-temperature"
        return AgentError(f"{case_id}: {provider} refused the request ({what}{said}){hint}", **kw)
    if any(cls.__name__ == "APITimeoutError" for cls in type(exc).__mro__):
        return InfraError(
            f"{case_id}: no answer from {provider} in time{tries}{tail}; raise --groundeval-timeout "
            "or retry later", **kw,
        )
    if _connection_types(exc):
        details["cause"] = _cause(exc)
        return InfraError(
            f"{case_id}: cannot reach {provider} ({_cause(exc)}){tries}{tail}; check the network"
            f"{where}", **kw,
        )
    details["exception"] = type(exc).__name__
    return AgentError(f"{case_id}: {provider} call failed: {type(exc).__name__}: {str(exc)[:_MAX_TEXT]}", **kw)


def classify_anthropic_error(
    exc: BaseException, case_id: str, *, attempts: int | None = None, note: str = ""
) -> AgentError:
    """Turn an ``anthropic`` SDK exception into the groundeval error that reports it.

    Works for exceptions from ``anthropic.Anthropic`` and from LangChain's ``ChatAnthropic``.

    Args:
        exc: The exception (an ``anthropic.APIError`` normally; anything else becomes a plain
            ``AgentError``).
        case_id: The case being run, for the message.
        attempts: Model calls made, when known.
        note: Why retrying stopped (from the retry layer), or "".

    Returns:
        ``AuthError`` (401/402/403), ``InfraError`` (429, 5xx, 529, timeout, connection) or
        ``AgentError``, with ``attempts`` and JSON-safe ``details`` (status_code, error_type,
        api_message, request_id, retry_after_s). The caller raises it ``from exc``.
    """
    return _classify(
        exc, case_id, provider="Anthropic", attempts=attempts, note=note, where="",
        key_hint="set a valid ANTHROPIC_API_KEY, or run offline with --groundeval-agent=baseline",
    )


def classify_openai_error(
    exc: BaseException,
    case_id: str,
    *,
    base_url: str | None = None,
    attempts: int | None = None,
    note: str = "",
) -> AgentError:
    """Turn an ``openai`` SDK exception from an OpenAI-compatible server into a groundeval error.

    Args:
        exc: The exception.
        case_id: The case being run, for the message.
        base_url: The server's URL, named in messages.
        attempts: Model calls made, when known.
        note: Why retrying stopped, or "".

    Returns:
        The same classes as ``classify_anthropic_error``.
    """
    server = f"the server at {base_url}" if base_url else "the OpenAI-compatible server"
    return _classify(
        exc, case_id, provider=server, attempts=attempts, note=note,
        where=" and --groundeval-base-url",
        key_hint="set GROUNDEVAL_OPENAI_API_KEY to the key the server expects",
    )
