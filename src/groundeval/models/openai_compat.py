r"""Any server speaking OpenAI's chat-completions API, as a ``Model``.

The spec is ``openai-compatible/<served model name>@<base URL>``.

This is how an open-weight model is compared with Claude on the same cases: serve it locally,
e.g. ``vllm serve <model>`` (base URL ``http://127.0.0.1:8000/v1``) or Ollama
(``http://127.0.0.1:11434/v1``). It uses the maintained ``openai`` SDK (the ``openai`` extra,
imported on first use) and has the same failure classes, retry layer and usage fields as the
Anthropic model. The key sent to the server is ``GROUNDEVAL_OPENAI_API_KEY`` when set, else the
placeholder ``EMPTY`` that local servers accept; ``OPENAI_API_KEY`` is deliberately not read, so
a key meant for OpenAI is never sent to another host. Token usage is mapped to Anthropic's
meaning: ``input_tokens`` excludes the ``cached_tokens`` the server reports, which become
``cache_read_input_tokens``. The cost of a model with no known list price (any open-weight
model) is ``None``, not 0.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from groundeval.errors import AgentError, ConfigError
from groundeval.extras import require_extra
from groundeval.models.base import ModelRequest, ToolCall
from groundeval.models.classify import BadResponse, classify_openai_error, strip_userinfo
from groundeval.models.pricing import cost_usd
from groundeval.models.provider import ProviderModel, Reply
from groundeval.models.retry import Completed
from groundeval.scoring import Metric

if TYPE_CHECKING:
    import openai

__all__ = ["KEY_ENV", "OpenAICompatibleModel", "openai_usage"]

KEY_ENV = "GROUNDEVAL_OPENAI_API_KEY"
"""Environment variable holding the key for the OpenAI-compatible server (optional)."""


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def openai_usage(model: str | None, usage: Any) -> dict[str, Metric]:
    """Token counts of an OpenAI ``CompletionUsage`` in Anthropic's terms, and their price.

    Returns:
        ``input_tokens`` (uncached prompt tokens), ``output_tokens``,
        ``cache_creation_input_tokens`` (always 0), ``cache_read_input_tokens`` (tokens; None
        each when the server reported no usage) and ``cost_usd`` (USD, None when unknown).
    """
    prompt = _tokens(getattr(usage, "prompt_tokens", None))
    output = _tokens(getattr(usage, "completion_tokens", None))
    details = getattr(usage, "prompt_tokens_details", None)
    cached = _tokens(getattr(details, "cached_tokens", None)) or 0
    if prompt is None or output is None:
        counts: dict[str, int | None] = dict.fromkeys(
            ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        return {**counts, "cost_usd": None}
    counts = {
        "input_tokens": prompt - cached,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }
    return {**counts, "cost_usd": cost_usd(model, **counts)}


def _tool_args(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class OpenAICompatibleModel(ProviderModel["openai.OpenAI"]):
    """A model behind an OpenAI-compatible chat-completions endpoint.

    ``generate`` sends one chat-completions request (retried on infrastructure errors) and
    returns the first choice's text and tool calls, with its ``finish_reason`` as the stop
    reason. It raises ``AuthError`` when the server rejected the key (401/402/403),
    ``InfraError`` for 429, 5xx, timeout or connection error after the allowed retries,
    ``TruncatedError`` for ``finish_reason == "length"``, ``RefusalError`` for
    ``content_filter`` or a ``message.refusal`` with no content (its text kept as the raw
    output), ``CaseTooLargeError`` for a context-length 400, ``RunStopError`` for an unknown model
    (404), any other invalid request (4xx) or an HTML page on every attempt of the first call, and
    ``AgentError`` for a reply with no choices (an empty message is returned as empty text).
    Credentials in the base URL are sent as HTTP Basic auth and never shown: ``base_url`` is the
    URL without them.

    Options: ``base_url`` (required), ``max_tokens`` (tokens, default 4096), ``temperature``
    (default: not sent, the server's default), ``max_retries`` (default 2) and ``timeout``
    (seconds per call, default 600).

    Raises:
        ConfigError: The openai SDK is not installed (the ``openai`` extra), no base URL or
            model name, or an option out of range.
    """

    provider = "openai-compatible"
    stop_field = "finish_reason"
    refusal_reasons = frozenset({"content_filter"})
    temperature_range = (0.0, 2.0)  # https://platform.openai.com/docs/api-reference/chat/create ("temperature")
    batch_api_class = "groundeval.models.openai_batch:OpenAIBatches"
    base_url: str
    """The server's URL without credentials: what messages and metadata show."""

    @property
    def spec(self) -> str:
        """``openai-compatible/<model>@<base URL without credentials>``."""
        return f"{self.provider}/{self.name}@{self.base_url}"

    def _configure(self, name: str | None) -> str | None:
        require_extra("openai", "openai", self.owner)
        base_url = self.options.get("base_url")
        if not base_url:
            raise ConfigError(self.hints.get("no_url") or f"{self.owner} needs the server's base URL (…/v1)")
        if not name:
            raise ConfigError(self.hints.get("no_model") or f"{self.owner} needs the served model's name")
        self.set_url(str(base_url))
        return name

    def set_url(self, url: str) -> None:
        """Point the model at ``url`` (credentials in it reach the SDK only, as HTTP Basic auth)."""
        self._url = url.rstrip("/")
        self.base_url = strip_userinfo(self._url)

    def _new_client(self, options: dict[str, Any]) -> openai.OpenAI:
        import openai

        key = os.environ.get(KEY_ENV) or "EMPTY"
        return openai.OpenAI(base_url=self._url, api_key=key, **options)

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments for a request (no timeout)."""
        messages = [dict(m) for m in request.messages]
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        params: dict[str, Any] = {"model": self.name, "messages": messages, "max_tokens": self.max_tokens_for(request)}
        if request.tools:
            params["tools"] = [
                {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                  "parameters": t.get("input_schema", {"type": "object"})}}
                for t in request.tools
            ]
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def _api_errors(self) -> tuple[type[BaseException], ...]:
        import openai

        return (openai.APIError,)

    def _call(self, params: dict[str, Any], timeout_s: float) -> Any:
        return self._sdk().chat.completions.create(**params, timeout=timeout_s)

    def _classify(self, exc: BaseException, label: str, *, attempts: int, note: str) -> AgentError:
        return classify_openai_error(exc, label, base_url=self._url, attempts=attempts, note=note, model=self.name)

    def _check(self, value: Any) -> None:
        choices = getattr(value, "choices", None)
        if not isinstance(choices, list) or any(getattr(c, "message", None) is None for c in choices):
            raise BadResponse("shape", "JSON that is not a chat-completions answer (no choices with a message)")

    def _endpoint(self) -> str:
        return self.base_url

    def _reply(self, request: ModelRequest, done: Completed[Any]) -> Reply:
        completion = done.value
        if not completion.choices:
            raise AgentError(
                f"{request.label}: the server at {self.base_url} returned no choices",
                attempts=done.attempts,
            )
        choice = completion.choices[0]
        calls = tuple(
            ToolCall(id=str(c.id), name=str(c.function.name), args=_tool_args(c.function.arguments))
            for c in (getattr(choice.message, "tool_calls", None) or ()) if getattr(c, "function", None) is not None
        )
        refusal = getattr(choice.message, "refusal", None)
        return Reply(
            text=choice.message.content or "",
            model=completion.model,
            stop_reason=choice.finish_reason,
            usage=openai_usage(completion.model, completion.usage),
            request_id=getattr(completion, "_request_id", None),
            refusal=refusal or None if isinstance(refusal, str) else None,
            tool_calls=calls,
        )

    def _truncation_fix(self, stop_reason: str | None) -> str | None:
        return "Raise --groundeval-max-tokens" if stop_reason == "length" else None
