r"""OpenAI-compatible agent: one chat-completions call per case to any server speaking that API.

This is how an open-weight model is compared with Claude on the same cases: serve it locally,
e.g. ``vllm serve <model>`` (base URL ``http://127.0.0.1:8000/v1``) or Ollama
(``http://127.0.0.1:11434/v1``), and run::

    uv run groundeval --agent openai-compatible --base-url http://127.0.0.1:8000/v1 \
        --model <served model name>

It uses the maintained ``openai`` SDK (the ``openai`` extra, imported on first use) and has the same failure classes,
retry layer, usage fields and run-record fields as the Claude agent. The key sent to the server
is ``GROUNDEVAL_OPENAI_API_KEY`` when set, else the placeholder ``EMPTY`` that local servers
accept; ``OPENAI_API_KEY`` is deliberately not read, so a key meant for OpenAI is never sent to
another host. Token usage is mapped to Anthropic's meaning: ``input_tokens`` excludes the
``cached_tokens`` the server reports, which become ``cache_read_input_tokens``. The cost of a
model with no known list price (any open-weight model) is ``None``, not 0.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from groundeval.agent_io import AgentRequest
from groundeval.agents._single_call import Reply, SingleCallAgent
from groundeval.agents.base import AgentConfig
from groundeval.errors import AgentError, ConfigError
from groundeval.extras import require_extra
from groundeval.models.classify import BadResponse, classify_openai_error, strip_userinfo
from groundeval.models.pricing import cost_usd
from groundeval.models.retry import Completed
from groundeval.scoring import Metric

if TYPE_CHECKING:
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


class OpenAICompatibleAgent(SingleCallAgent["openai.OpenAI"]):
    """Asks a model behind an OpenAI-compatible chat-completions endpoint.

    ``run`` sends one chat-completions request (retried on infrastructure errors) and returns
    the first choice's text, with ``meta["stop_reason"]`` its ``finish_reason``. It raises
    ``AuthError`` when the server rejected the key (401/402/403), ``InfraError`` for 429, 5xx,
    timeout or connection error after the allowed retries, ``TruncatedError`` for
    ``finish_reason == "length"``, ``RefusalError`` for ``content_filter`` or a ``message.refusal``
    with no content (its text kept as the case's raw output),
    ``CaseTooLargeError`` for a context-length 400, ``RunStopError`` for an unknown model (404),
    any other invalid request (4xx) or an HTML page on every attempt of the first case, and
    ``AgentError`` for a reply with no choices (an empty message is returned as empty text and
    scored as an empty answer). Credentials in the base URL are sent as HTTP Basic auth and
    never shown: ``base_url`` is the URL without them.

    Args:
        config: ``model`` (required: the served model name); options ``base_url`` (required),
            ``max_tokens`` (tokens, default 4096), ``temperature`` (default: not sent, the
            server's default), ``max_retries`` (default 2) and ``timeout`` (seconds per case,
            default 600).
        http_client: An ``httpx2.Client`` for the SDK (tests).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: The openai SDK is not installed (the ``openai`` extra), no base URL or model,
            or an option out of range.
    """

    name = "openai-compatible"
    stop_field = "finish_reason"
    refusal_reasons = frozenset({"content_filter"})
    temperature_range = (0.0, 2.0)  # https://platform.openai.com/docs/api-reference/chat/create ("temperature")
    base_url: str
    """The server's URL without credentials: what messages and metadata show."""

    def _configure(self, config: AgentConfig) -> str | None:
        require_extra("openai", "openai", f"the agent {self.name!r}")
        base_url = config.options.get("base_url")
        if not base_url:
            raise ConfigError(NEEDS_URL)
        if not config.model:
            raise ConfigError(NEEDS_MODEL)
        self._url = str(base_url).rstrip("/")  # credentials in it reach the SDK only (HTTP Basic auth)
        self.base_url = strip_userinfo(self._url)
        return config.model

    def _new_client(self, options: dict[str, Any]) -> openai.OpenAI:
        import openai

        key = os.environ.get(KEY_ENV) or "EMPTY"
        return openai.OpenAI(base_url=self._url, api_key=key, **options)

    def params(self, request: AgentRequest) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments for a request (no timeout)."""
        messages = [{"role": "user", "content": request.prompt.user}]
        if request.prompt.system:
            messages.insert(0, {"role": "system", "content": request.prompt.system})
        params: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def _api_errors(self) -> tuple[type[BaseException], ...]:
        import openai

        return (openai.APIError,)

    def _call(self, params: dict[str, Any], timeout_s: float) -> Any:
        return self._sdk().chat.completions.create(**params, timeout=timeout_s)

    def _classify(self, exc: BaseException, case_id: str, *, attempts: int, note: str) -> AgentError:
        return classify_openai_error(exc, case_id, base_url=self._url, attempts=attempts, note=note, model=self.model)

    def _check(self, value: Any) -> None:
        choices = getattr(value, "choices", None)
        if not isinstance(choices, list) or any(getattr(c, "message", None) is None for c in choices):
            raise BadResponse("shape", "JSON that is not a chat-completions answer (no choices with a message)")

    def _endpoint(self) -> str:
        return self.base_url

    def _reply(self, request: AgentRequest, done: Completed[Any]) -> Reply:
        completion = done.value
        if not completion.choices:
            raise AgentError(
                f"{request.case_id}: the server at {self.base_url} returned no choices",
                attempts=done.attempts,
            )
        choice = completion.choices[0]
        return Reply(
            text=choice.message.content or "",
            model=completion.model,
            stop_reason=choice.finish_reason,
            usage=self.usage(completion.model, completion.usage),
            request_id=getattr(completion, "_request_id", None),
            refusal=refusal or None if isinstance(refusal := getattr(choice.message, "refusal", None), str) else None,
        )

    def _truncation_fix(self, stop_reason: str | None) -> str | None:
        return "Raise --groundeval-max-tokens" if stop_reason == "length" else None

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
