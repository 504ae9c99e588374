"""Map model-SDK exceptions to groundeval's error classes, and say which ones to retry.

Both supported SDKs (``anthropic`` and ``openai``) raise the same shapes of exception:
``APIStatusError`` with ``status_code``, ``response`` (headers) and a JSON ``body``;
``APIConnectionError`` and its subclass ``APITimeoutError`` when no response came back.
LangChain's ``ChatAnthropic`` lets the ``anthropic`` exceptions through unchanged, so
``classify_anthropic_error`` serves tool-using agents too.

The mapping:

==========================================  ==================================  =======
cause                                       class (outcome)                     retried
==========================================  ==================================  =======
401 key rejected, 402 billing, 403          ``AuthError`` (auth_error)          no
408, 409, 429, 5xx incl. 529                ``InfraError`` (infra_error)        yes
a 200 that is not an answer: HTML, cut-off  ``InfraError`` (infra_error)        yes
JSON, JSON of the wrong shape (``BadResponse``)
the case outlived ``--groundeval-timeout``  ``InfraError`` (infra_error)        no
no concurrency slot came free, or the run   ``InfraError`` (infra_error)        no
stopped, before anything was sent
connection refused, DNS, TLS, no response   ``InfraError(connection=True)``     yes
400/413/422 "prompt is too long", context   ``CaseTooLargeError`` (case_too_    no
window exceeded                             large)
404 unknown model or endpoint               ``RunStopError`` (config_error)     no
other 4xx (unknown parameter, bad value)    ``RunStopError`` (config_error)     no
anything else                               ``AgentError`` (no_answer)          no
==========================================  ==================================  =======

A server's ``x-should-retry: true|false`` header overrides the retry column, except for auth.
Messages name the case, the status and error type, the number of attempts and the fix; they
never include request headers, credentials in the base URL, or a ``Basic``/``Bearer`` token a
server echoes back in its error body (``redact``), so no key can leak into a record through them.
"""

from __future__ import annotations

import email.utils
import os
import re
import time
from collections.abc import Mapping
from typing import Any

from groundeval.errors import AgentError, AuthError, CaseTooLargeError, InfraError, RunStopError
from groundeval.models.retry import DeadlineExceeded
from groundeval.models.stop_switch import CallsStopped
from groundeval.models.throttle import SlotTimeout
from groundeval.redaction import redact, strip_userinfo, url_secrets

__all__ = [
    "BadResponse",
    "advise",
    "classify_anthropic_error",
    "classify_openai_error",
    "parse_retry_after",
    "redact",
    "strip_userinfo",
    "too_large",
]

RETRY_STATUS = frozenset({408, 409, 429})
AUTH_STATUS = frozenset({401, 402, 403})
_MAX_TEXT = 300

TOO_LARGE = re.compile(
    r"prompt is too long|too many (input )?tokens|context[ _](length|window)|maximum context|"
    r"exceeds? (the )?(model's )?(context|maximum)|request_too_large|input is too long|reduce the length",
    re.IGNORECASE,
)
"""Error messages that mean the case's content does not fit the model (Anthropic says
``prompt is too long: 212345 tokens > 200000 maximum``; OpenAI-compatible servers say
``This model's maximum context length is ...`` or ``context_length_exceeded``)."""

def too_large(message: str) -> bool:
    """True when an API error message says the prompt does not fit the model's context."""
    return bool(TOO_LARGE.search(message))


class BadResponse(Exception):
    """A 2xx response that is not an API answer (raised by the agents, retried like a 5xx).

    Attributes:
        kind: ``"html"`` (a web page: the base URL points at a site, not the API),
            ``"not_json"`` (cut-off or other non-JSON text) or ``"shape"`` (JSON without the
            fields of an answer).
        what: One line saying what came back, e.g. ``"an HTML page (<!doctype html>...)"``.
    """

    def __init__(self, kind: str, what: str) -> None:
        super().__init__(what)
        self.kind = kind
        self.what = what

    @classmethod
    def from_text(cls, text: str) -> BadResponse:
        """Describe a body that was not JSON: an HTML page or other text (e.g. cut-off JSON)."""
        head = text.lstrip()[:80].replace("\n", " ")
        if head[:1] == "<" and re.match(r"<(!doctype|html|head|body|\?xml|!--)", head, re.IGNORECASE):
            return cls("html", f"an HTML page ({head[:40]!r}), not an API response")
        return cls("not_json", f"a body that is not valid JSON ({head[:40]!r}...)")


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
    if isinstance(exc, BadResponse):
        return True, None
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


def _facts(exc: BaseException, secrets: list[str]) -> dict[str, Any]:
    """Status, error type, server message and request id of an SDK error (JSON-safe, redacted)."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    message = getattr(exc, "api_message", None)
    if message is None and isinstance(inner, dict):
        message = inner.get("message")
    if message is None and isinstance(body, str):
        message = body
    etype = getattr(exc, "type", None)
    if etype is None and isinstance(inner, dict):
        etype = inner.get("type") or inner.get("code")
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    request_id = getattr(exc, "request_id", None) or headers.get("request-id") or headers.get("x-request-id")
    facts: dict[str, Any] = {
        "status_code": getattr(exc, "status_code", None),
        "error_type": str(etype) if etype else None,
        "api_message": redact(str(message), secrets)[:_MAX_TEXT] if message else None,
        "request_id": request_id,
        "retry_after_s": parse_retry_after(headers) if response is not None else None,
    }
    return {k: v for k, v in facts.items() if v is not None}


def _cause(exc: BaseException, secrets: list[str]) -> str:
    cause = exc.__cause__ or exc.__context__
    if cause is None:
        return type(exc).__name__
    text = redact(str(cause).strip(), secrets)
    return f"{type(cause).__name__}: {text[:_MAX_TEXT]}" if text else type(cause).__name__


def _classify(  # one branch per row of the module's table
    exc: BaseException,
    case_id: str,
    *,
    provider: str,
    model: str | None,
    key_hint: str,
    where: str,
    attempts: int | None,
    note: str,
    secrets: list[str],
) -> AgentError:
    facts = _facts(exc, secrets)
    details: dict[str, object] = {"provider": provider, **facts}
    if note:
        details["gave_up"] = note
    tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
    tail = f" ({note})" if note else ""
    status = facts.get("status_code")
    what = " ".join(str(x) for x in (status, facts.get("error_type")) if x)
    said = f": {facts['api_message']}" if "api_message" in facts else ""
    kw: dict[str, Any] = {"attempts": attempts, "details": details}
    if isinstance(exc, SlotTimeout):  # nothing was sent: no status to keep
        details.update(slot_wait_s=round(exc.waited_s, 3), in_flight=exc.in_flight, limit=exc.limit)
        return InfraError(
            f"{case_id}: {exc}; lower --groundeval-concurrency, or raise --groundeval-timeout (the longest a case "
            "waits for its first slot)", **kw,
        )
    if isinstance(exc, CallsStopped):
        return InfraError(f"{case_id}: {exc}", **kw)
    if isinstance(exc, DeadlineExceeded):
        details.update(ran_s=exc.ran_s, timeout_s=exc.bound_s)
        if exc.others_in_flight:
            details["others_in_flight"] = exc.others_in_flight
        return InfraError(
            f"{case_id}: {provider} had not answered when the case reached its time bound: {exc}{tries}; "
            "raise --groundeval-timeout or check the server", **kw,
        )
    if isinstance(exc, BadResponse):
        details["bad_response"] = exc.kind
        return InfraError(
            f"{case_id}: {provider} answered with {exc.what}{tries}{tail}; check "
            f"{'--groundeval-base-url (it should end in /v1)' if where else 'ANTHROPIC_BASE_URL'} and that the server "
            "serves the API", **kw,
        )
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
        if status in (400, 413, 422) and too_large(f"{facts.get('error_type', '')} {facts.get('api_message', '')}"):
            return CaseTooLargeError(
                f"{case_id}: the case is too large for the model {model} ({what}{said}); it is excluded "
                "from the means. Use a model with a larger context window or a smaller case", **kw,
            )
        if status == 404:
            return RunStopError(
                f"{provider} found no model {model!r} or no such endpoint ({what}{said}); check "
                f"--groundeval-model{where}", **kw,
            )
        hint = "check the --groundeval-* options that set it (model, max tokens, temperature)"
        if "temperature" in str(facts.get("api_message", "")):
            hint = "this model takes no temperature: drop --groundeval-temperature"
        return RunStopError(
            f"{provider} refused the request for model {model!r} as invalid ({what}{said}); {hint}", **kw,
        )
    if any(cls.__name__ == "APITimeoutError" for cls in type(exc).__mro__):
        return InfraError(
            f"{case_id}: no answer from {provider} in time{tries}{tail}; raise --groundeval-timeout "
            "or retry later", connection=True, **kw,
        )
    if _connection_types(exc):
        details["cause"] = _cause(exc, secrets)
        return InfraError(
            f"{case_id}: cannot reach {provider} ({_cause(exc, secrets)}){tries}{tail}; check the network"
            f"{where}", connection=True, **kw,
        )
    details["exception"] = type(exc).__name__
    text = redact(str(exc), secrets)[:_MAX_TEXT]
    return AgentError(f"{case_id}: {provider} call failed: {type(exc).__name__}: {text}", **kw)


def classify_anthropic_error(
    exc: BaseException, case_id: str, *, attempts: int | None = None, note: str = "", model: str | None = None,
    key_hint: str | None = None,
) -> AgentError:
    """Turn an ``anthropic`` SDK exception into the groundeval error that reports it.

    Works for exceptions from ``anthropic.Anthropic`` and from LangChain's ``ChatAnthropic``.

    Args:
        exc: The exception (an ``anthropic.APIError``, a ``BadResponse`` or a
            ``DeadlineExceeded`` normally; anything else becomes a plain ``AgentError``).
        case_id: The case being run, for the message.
        attempts: Model calls made, when known.
        note: Why retrying stopped (from the retry layer), or "".
        model: The model id, named in run-stopping messages.
        key_hint: What to do about a rejected key (the agent's own advice, e.g. which offline
            agent runs without one); default "set a valid ANTHROPIC_API_KEY".

    Returns:
        The class of the module's table, with ``attempts`` and JSON-safe ``details``
        (status_code, error_type, api_message, request_id, retry_after_s). The caller raises
        it ``from exc``.
    """
    return _classify(
        exc, case_id, provider="Anthropic", model=model, attempts=attempts, note=note, where="",
        secrets=url_secrets(os.environ.get("ANTHROPIC_BASE_URL")),
        key_hint=key_hint or "set a valid ANTHROPIC_API_KEY",
    )


def classify_openai_error(
    exc: BaseException,
    case_id: str,
    *,
    base_url: str | None = None,
    attempts: int | None = None,
    note: str = "",
    model: str | None = None,
) -> AgentError:
    """Turn an ``openai`` SDK exception from an OpenAI-compatible server into a groundeval error.

    Args:
        exc: The exception.
        case_id: The case being run, for the message.
        base_url: The server's URL (credentials in it are never shown, and are redacted from
            what the server echoes back).
        attempts: Model calls made, when known.
        note: Why retrying stopped, or "".
        model: The model id, named in run-stopping messages.

    Returns:
        The same classes as ``classify_anthropic_error``.
    """
    server = f"the server at {strip_userinfo(base_url)}" if base_url else "the OpenAI-compatible server"
    return _classify(
        exc, case_id, provider=server, model=model, attempts=attempts, note=note,
        where=" and --groundeval-base-url", secrets=url_secrets(base_url),
        key_hint="set GROUNDEVAL_OPENAI_API_KEY to the key the server expects",
    )
