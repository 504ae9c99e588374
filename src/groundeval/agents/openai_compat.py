r"""OpenAI-compatible agent: one chat-completions call per case to any server speaking that API.

This is how an open-weight model is compared with Claude on the same cases: serve it locally,
e.g. ``vllm serve <model>`` (base URL ``http://127.0.0.1:8000/v1``) or Ollama
(``http://127.0.0.1:11434/v1``), and run::

    uv run groundeval --agent openai-compatible --base-url http://127.0.0.1:8000/v1 \
        --model <served model name>

It uses the maintained ``openai`` SDK (imported on first use) and has the same failure classes,
retry layer, usage fields and run-record fields as the Claude agent. The key sent to the server
is ``GROUNDEVAL_OPENAI_API_KEY`` when set, else the placeholder ``EMPTY`` that local servers
accept; ``OPENAI_API_KEY`` is deliberately not read, so a key meant for OpenAI is never sent to
another host. Token usage is mapped to Anthropic's meaning: ``input_tokens`` excludes the
``cached_tokens`` the server reports, which become ``cache_read_input_tokens``. The cost of a
model with no known list price (any open-weight model) is ``None``, not 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groundeval.agents._classify import advise, classify_openai_error
from groundeval.agents._retry import CallSettings, Completed, GaveUp, call_with_retries
from groundeval.agents.base import AgentConfig
from groundeval.errors import AgentError, ConfigError, TruncatedError
from groundeval.pricing import cost_usd
from groundeval.records import AgentRequest, AgentResult, Metric

if TYPE_CHECKING:
    import httpx2
    import openai

__all__ = ["KEY_ENV", "OpenAICompatibleAgent"]

KEY_ENV = "GROUNDEVAL_OPENAI_API_KEY"
"""Environment variable holding the key for the OpenAI-compatible server (optional)."""

NEEDS_URL = (
    "--groundeval-agent=openai-compatible needs --groundeval-base-url: the server's OpenAI API "
    "root, e.g. http://127.0.0.1:8000/v1 (vLLM) or http://127.0.0.1:11434/v1 (Ollama)"
)
NEEDS_MODEL = (
    "--groundeval-agent=openai-compatible needs --groundeval-model: the model name the server "
    "serves (see GET <base-url>/models)"
)


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) else None


class OpenAICompatibleAgent:
    """Asks a model behind an OpenAI-compatible chat-completions endpoint.

    Args:
        config: ``model`` (required: the served model name); options ``base_url`` (required),
            ``max_tokens`` (tokens, default 4096), ``temperature`` (default: not sent, the
            server's default), ``max_retries`` (default 2) and ``timeout`` (seconds per case,
            default 600).
        http_client: An ``httpx2.Client`` for the SDK (tests).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: No base URL or model, or an option out of range.
    """

    name = "openai-compatible"
    tasks: frozenset[str] = frozenset({"extraction"})

    def __init__(
        self,
        config: AgentConfig | None = None,
        *,
        http_client: httpx2.Client | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        config = config or AgentConfig()
        base_url = config.options.get("base_url")
        if not base_url:
            raise ConfigError(NEEDS_URL)
        if not config.model:
            raise ConfigError(NEEDS_MODEL)
        self.base_url = str(base_url).rstrip("/")
        self.model: str | None = config.model
        settings = CallSettings.from_config(config, sleep)
        self.max_tokens, self.temperature, self.retry = settings.max_tokens, settings.temperature, settings.retry
        self._http_client = http_client
        self._client: openai.OpenAI | None = None

    def _sdk(self) -> openai.OpenAI:
        if self._client is None:
            import openai

            key = os.environ.get(KEY_ENV) or "EMPTY"
            if self._http_client is None:
                self._client = openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=0)
            else:
                self._client = openai.OpenAI(
                    base_url=self.base_url, api_key=key, max_retries=0, http_client=self._http_client
                )
        return self._client

    def params(self, request: AgentRequest) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments for a request (no timeout)."""
        messages = [{"role": "user", "content": request.prompt.user}]
        if request.prompt.system:
            messages.insert(0, {"role": "system", "content": request.prompt.system})
        params: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def warmup(self) -> None:
        """Import the SDK and build the client before the first case is timed."""
        self._sdk()

    def run(self, request: AgentRequest) -> AgentResult:
        """Send one chat-completions request (retried on infrastructure errors).

        Returns:
            The first choice's text; ``usage`` (tokens, ``cost_usd``); ``attempts``; ``meta`` with
            ``stop_reason`` (the ``finish_reason``), ``request_id``, ``max_tokens``,
            ``temperature`` and ``retry_wait_s`` (seconds).

        Raises:
            AuthError: The server rejected the key (401/402/403).
            InfraError: 429, 5xx, timeout or connection error, after the allowed retries.
            TruncatedError: ``finish_reason == "length"``; ``details`` holds the partial text.
            AgentError: Any other refusal (unknown model, bad request) or a reply with no choices
                (an empty message is returned as empty text and scored as an empty answer).
        """
        import openai

        params = self.params(request)
        try:
            done = call_with_retries(
                lambda left: self._sdk().chat.completions.create(**params, timeout=left),
                self.retry, errors=(openai.APIError,), advise=advise,
            )
        except GaveUp as gave_up:
            error = classify_openai_error(
                gave_up.error, request.case_id, base_url=self.base_url,
                attempts=gave_up.attempts, note=gave_up.note,
            )
            error.details["retry_wait_s"] = round(gave_up.waited_s, 3)
            raise error from None  # the facts are in the message and details; the SDK chain is noise
        return self._result(request, done)

    def _result(self, request: AgentRequest, done: Completed[Any]) -> AgentResult:
        completion = done.value
        if not completion.choices:
            raise AgentError(
                f"{request.case_id}: the server at {self.base_url} returned no choices",
                attempts=done.attempts,
            )
        choice = completion.choices[0]
        text = choice.message.content or ""
        usage = self.usage(completion.model, completion.usage)
        meta: dict[str, Any] = {
            "stop_reason": choice.finish_reason,
            "request_id": getattr(completion, "_request_id", None),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "retry_wait_s": done.waited_s,
        }
        if choice.finish_reason == "length":
            raise TruncatedError(
                f"{request.case_id}: the answer was cut off (finish_reason=length) at "
                f"{usage['output_tokens']} output tokens with max_tokens={self.max_tokens}; it is "
                "not parsed (it counts as an empty answer in the run's means). Raise --groundeval-max-tokens",
                attempts=done.attempts,
                details={**meta, "model": completion.model, "usage": usage, "partial_text": text},
            )
        return AgentResult(
            text=text, model=completion.model, usage=usage, attempts=done.attempts, meta=meta
        )

    @staticmethod
    def usage(model: str | None, usage: Any) -> dict[str, Metric]:
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
