"""Anthropic's Messages API as a provider (spec ``anthropic/<model id>``).

The request's fixed instructions go in the system prompt, marked for prompt caching
(``cache_control: ephemeral``, 5-minute TTL), so the calls of one run share that prefix; the
messages follow. Caching only applies to a prefix above the model's minimum cacheable length
(1,024 tokens for Opus 4.8, more for some models); a shorter system prompt is sent and billed as
ordinary input, which the recorded cache token counts show.

Failure classes (``models.classify``): a rejected key is an ``AuthError`` that stops the run;
rate limits, overload, 5xx, timeouts and connection errors are ``InfraError``; a reply cut off at
``max_tokens`` is a ``TruncatedError`` carrying the partial text. The SDK client is built with
``max_retries=0``: ``models.retry`` is the one retry layer, and it bounds all attempts and waits
of a call by ``timeout``.

The ``anthropic`` SDK (the ``claude`` extra) is imported on first use, never at collection time.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import TYPE_CHECKING, Any

from groundeval.errors import AgentError, ConfigError
from groundeval.extras import require_extra
from groundeval.models.base import ModelRequest, ToolCall
from groundeval.models.classify import BadResponse, classify_anthropic_error, strip_userinfo
from groundeval.models.pricing import batch_usage, cost_usd, priced
from groundeval.models.providers.base import Provider, Reply
from groundeval.models.retry import Completed
from groundeval.scoring import Metric

if TYPE_CHECKING:
    import anthropic

__all__ = ["DEFAULT_MODEL", "KEY_ENV", "TRUNCATED", "AnthropicProvider", "anthropic_usage"]

DEFAULT_MODEL = "claude-opus-4-8"
"""Model used when a spec or ``--groundeval-model`` names none."""
KEY_ENV = "ANTHROPIC_API_KEY"
"""The environment variable the SDK reads the key from."""
TRUNCATED = frozenset({"max_tokens", "model_context_window_exceeded"})
"""Stop reasons meaning the answer was cut off."""
_DEPRECATED = r"The model '.*' is deprecated"


def _maybe_deprecated(model: str) -> bool:
    """Whether the SDK may warn that ``model`` is deprecated (True when its list cannot be read)."""
    try:
        from anthropic._data import DEPRECATED_MODELS
    except ImportError:  # pragma: no cover - an SDK that moved its private list
        return True
    return model in DEPRECATED_MODELS


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int) else 0


def anthropic_usage(model: str | None, usage: Any) -> dict[str, Metric]:
    """Token counts of an Anthropic ``Usage`` and their list price.

    Returns:
        ``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``,
        ``cache_read_input_tokens`` (tokens) and ``cost_usd`` (USD; None when the model's
        price is unknown or the request ran on a non-standard tier or speed). A request of a
        Message Batch (``service_tier`` ``batch``) is priced at the batch rate and also carries
        ``standard_cost_usd`` (``pricing.batch_usage``); a priced call names its ``price_source``.
    """
    counts: dict[str, int] = {
        "input_tokens": _int(getattr(usage, "input_tokens", None)),
        "output_tokens": _int(getattr(usage, "output_tokens", None)),
        "cache_creation_input_tokens": _int(getattr(usage, "cache_creation_input_tokens", None)),
        "cache_read_input_tokens": _int(getattr(usage, "cache_read_input_tokens", None)),
    }
    breakdown = getattr(usage, "cache_creation", None)
    tier = getattr(usage, "service_tier", None)
    standard = getattr(usage, "speed", None) in (None, "standard") and tier in (None, "standard", "batch")
    cost = cost_usd(
        model, **counts, cache_write_1h_tokens=_int(getattr(breakdown, "ephemeral_1h_input_tokens", None))
    ) if standard else None
    usage_priced = priced(model, {**counts, "cost_usd": cost})
    return batch_usage(usage_priced, model) if tier == "batch" else usage_priced


class AnthropicProvider(Provider["anthropic.Anthropic"]):
    """A Claude model through the Messages API (under ``models.policy.PolicyModel``).

    The model's ``generate`` sends one ``messages.create`` request (retried on infrastructure errors) and
    returns the text blocks joined, the ``tool_use`` blocks as tool calls and the Messages API
    ``stop_reason``. It raises ``AuthError`` when the key was rejected (401) or the account or
    model refused (402/403), ``InfraError`` for 429, 5xx, 529, timeout or connection error after
    the allowed retries, ``TruncatedError`` when the reply stopped at ``max_tokens`` or the
    context window, ``RefusalError`` for ``stop_reason`` ``refusal``, ``CaseTooLargeError`` for a
    request too large for the model (estimated before the call, or a 400 "prompt is too long"),
    and ``RunStopError`` for an unknown model (404) or any other invalid request (4xx); see
    ``models.classify`` for the whole table.

    Options: ``max_tokens`` (tokens, default 4096), ``temperature`` (default: not sent, so the
    model's own; sent in the request body when given, as the SDK has no argument for it; Claude
    Opus 4.7 and later answer an explicit value with a 400), ``max_retries`` (default 2) and
    ``timeout`` (seconds per call, default 600). There is no ``base_url``: point the SDK at a
    gateway with ``ANTHROPIC_BASE_URL``.

    Raises:
        ConfigError: The anthropic SDK is not installed (the ``claude`` extra),
            ``ANTHROPIC_API_KEY`` is not set, or an option is out of range.
    """

    name = "anthropic"
    default_model = DEFAULT_MODEL
    refusal_reasons = frozenset({"refusal"})
    base_url_hint = "ANTHROPIC_BASE_URL (unset it to call the Anthropic API)"
    temperature_range = (0.0, 1.0)  # https://platform.claude.com/docs/en/api/messages ("temperature")
    batch_api_class = "groundeval.models.providers.anthropic_batch:AnthropicBatches"
    _deprecation_shown = False

    @classmethod
    def takes_temperature(cls, name: str | None) -> bool:
        """False for Claude Opus 4.7 and later, which answer an explicit temperature with a 400."""
        found = re.search(r"claude-opus-(\d+)-(\d+)", name or "")
        return found is None or (int(found[1]), int(found[2])) < (4, 7)

    def configure(self, name: str | None) -> str | None:
        """Check the SDK and settings this provider needs and return the model id (see the class)."""
        require_extra("claude", "anthropic", self.owner)
        if not os.environ.get(KEY_ENV):
            raise ConfigError(self.hints.get("no_key") or f"{KEY_ENV} is not set: {self.owner} needs it")
        return name

    def new_client(self, options: dict[str, Any]) -> anthropic.Anthropic:
        """The SDK client over ``options`` (``max_retries=0``: the policy retries)."""
        import anthropic

        return anthropic.Anthropic(**options)

    def params(self, request: ModelRequest, max_tokens: int, temperature: float | None) -> dict[str, Any]:
        """The ``messages.create`` arguments for a request (no timeout)."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [dict(m) for m in request.messages],
        }
        if request.system:
            params["system"] = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
        if request.tools:
            params["tools"] = [dict(t) for t in request.tools]
        if temperature is not None:  # the SDK (2.14) dropped the argument; the API still reads it
            params["extra_body"] = {"temperature": temperature}
        return params

    def api_errors(self) -> tuple[type[BaseException], ...]:
        """The SDK's ``APIError``: every failure of a call."""
        import anthropic

        return (anthropic.APIError,)

    def call(self, params: dict[str, Any], timeout_s: float) -> Any:
        """One API call. The SDK's deprecation warning for an old model id is let through once.

        ``warnings.catch_warnings`` changes process-wide state and is not thread-safe, so it is
        entered only for a model id the SDK lists as deprecated (``anthropic._data``, private;
        when it cannot be read, always): calls of a current model made ahead in threads
        (``--groundeval-concurrency``) never touch the warning filters.
        """
        if not _maybe_deprecated(str(params.get("model"))):
            return self.client().messages.create(**params, timeout=timeout_s)
        with warnings.catch_warnings():
            if self._deprecation_shown:
                warnings.filterwarnings("ignore", message=_DEPRECATED, category=DeprecationWarning)
            try:
                return self.client().messages.create(**params, timeout=timeout_s)
            finally:
                self._deprecation_shown = True

    def classify(self, exc: BaseException, label: str, *, attempts: int, note: str) -> AgentError:
        """The groundeval error of a failed call (``models.classify``)."""
        return classify_anthropic_error(
            exc, label, attempts=attempts, note=note, model=self.model,
            key_hint=self.hints.get("rejected_key", f"set a valid {KEY_ENV}"),
        )

    def check_value(self, value: Any) -> None:
        """Refuse a 2xx value of the wrong shape (``BadResponse``)."""
        if not isinstance(getattr(value, "content", None), list):
            raise BadResponse("shape", "JSON that is not a Messages API answer (no content list)")

    def endpoint(self) -> str:
        """The API root, without credentials."""
        return strip_userinfo(str(self.client().base_url))

    def reply(self, request: ModelRequest, done: Completed[Any]) -> Reply:
        """Read the answer, stop reason, usage and tool calls of a response."""
        message = done.value
        blocks = message.content
        calls = tuple(
            ToolCall(id=str(b.id), name=str(b.name), args=dict(b.input) if isinstance(b.input, dict) else {})
            for b in blocks if getattr(b, "type", None) == "tool_use"
        )
        return Reply(
            text="".join(b.text for b in blocks if getattr(b, "type", None) == "text"),
            model=message.model,
            stop_reason=message.stop_reason,
            usage=anthropic_usage(message.model, message.usage),
            request_id=getattr(message, "_request_id", None),
            tool_calls=calls,
        )

    def truncation_fix(self, stop_reason: str | None) -> str | None:
        """The advice of a reply cut off at the output limit, or None."""
        if stop_reason not in TRUNCATED:
            return None
        if stop_reason == "max_tokens":
            return "Raise --groundeval-max-tokens"
        return "The prompt and answer exceed the model's context window: use a shorter case"
