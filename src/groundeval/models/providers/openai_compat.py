r"""Any server speaking OpenAI's chat-completions API, as a provider.

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

import dataclasses
import json
import os
import threading
from typing import TYPE_CHECKING, Any

from groundeval.errors import AgentError, CaseTooLargeError, ConfigError
from groundeval.extras import require_extra
from groundeval.models.base import ModelRequest, ToolCall
from groundeval.models.classify import BadResponse, classify_openai_error, strip_userinfo
from groundeval.models.pricing import cost_usd, priced
from groundeval.models.providers.base import Provider, Reply
from groundeval.models.retry import Completed
from groundeval.models.served import (
    LLAMA_CPP_PYTHON,
    ServedFacts,
    context_from_error,
    looks_like_llama_cpp_python,
    read_models,
    read_props,
    read_tokenize_count,
)
from groundeval.scoring import Metric

if TYPE_CHECKING:
    import openai

__all__ = ["KEY_ENV", "PROBE_TIMEOUT_S", "TEMPLATE_TOKENS", "OpenAICompatibleProvider", "openai_usage"]

KEY_ENV = "GROUNDEVAL_OPENAI_API_KEY"
"""Environment variable holding the key for the OpenAI-compatible server (optional)."""
PROBE_TIMEOUT_S = 10.0
"""Timeout of one request asking the server about itself (``/props``, ``/v1/models``, its tokenizer), seconds."""
TEMPLATE_TOKENS = 32
"""Tokens allowed for the chat template around the system and user messages (ChatML adds 5 per
message and 3 for the assistant's turn); a tokenizer endpoint counts raw text only."""


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def openai_usage(model: str | None, usage: Any) -> dict[str, Metric]:
    """Token counts of an OpenAI ``CompletionUsage`` in Anthropic's terms, and their price.

    Returns:
        ``input_tokens`` (uncached prompt tokens), ``output_tokens``,
        ``cache_creation_input_tokens`` (always 0), ``cache_read_input_tokens`` (tokens; None
        each when the server reported no usage), ``cost_usd`` (USD, None when unknown) and, when
        priced, ``price_source`` (``pricing.priced``).
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
    return priced(model, {**counts, "cost_usd": cost_usd(model, **counts)})


def _tool_args(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class OpenAICompatibleProvider(Provider["openai.OpenAI"]):
    """A model behind an OpenAI-compatible chat-completions endpoint (under ``models.policy.PolicyModel``).

    The model's ``generate`` sends one chat-completions request (retried on infrastructure errors) and
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
    (default: not sent, the server's default), ``max_retries`` (default 2), ``timeout``
    (seconds per call, default 600) and ``server_facts`` (default False: ask the server about
    itself, ``served``).

    **Context.** When the server's context is known (``context_tokens``: what the server said,
    ``models.served``), the policy fits a request to it before the call (``PolicyModel.fit``):
    its prompt is counted by the server's tokenizer (``count_tokens``, else estimated as
    characters / ``pricing.CHARS_PER_TOKEN``) plus ``TEMPLATE_TOKENS``, the answer gets
    ``min(max_tokens, context - prompt)`` tokens, and a request that leaves fewer than
    ``min(max_tokens, MIN_OUTPUT_TOKENS)`` is ``CaseTooLargeError`` with no call made
    (``models.served.output_budget``). Otherwise the server decides (its 400).

    Raises:
        ConfigError: The openai SDK is not installed (the ``openai`` extra), no base URL or
            model name, or an option out of range.
    """

    name = "openai-compatible"
    stop_field = "finish_reason"
    refusal_reasons = frozenset({"content_filter"})
    temperature_range = (0.0, 2.0)  # https://platform.openai.com/docs/api-reference/chat/create ("temperature")
    batch_api_class = "groundeval.models.providers.openai_batch:OpenAIBatches"
    template_tokens = TEMPLATE_TOKENS
    base_url: str
    """The server's URL without credentials: what messages and metadata show."""

    @property
    def spec(self) -> str:
        """``openai-compatible/<model>@<base URL without credentials>``."""
        return f"{self.name}/{self.model}@{self.base_url}"

    def configure(self, name: str | None) -> str | None:
        """Check the SDK and settings this provider needs and return the model id (see the class)."""
        require_extra("openai", "openai", self.owner)
        base_url = self.options.get("base_url")
        if not base_url:
            raise ConfigError(self.hints.get("no_url") or f"{self.owner} needs the server's base URL (…/v1)")
        if not name:
            raise ConfigError(self.hints.get("no_model") or f"{self.owner} needs the served model's name")
        self.set_url(str(base_url))
        self._init_served(bool(self.options.get("server_facts")))
        return name

    def _init_served(self, ask: bool) -> None:
        self._ask_served = ask
        self._served: ServedFacts | None = None
        self._served_lock = threading.Lock()

    def set_url(self, url: str) -> None:
        """Point the model at ``url`` (credentials in it reach the SDK only, as HTTP Basic auth)."""
        self._url = url.rstrip("/")
        self.base_url = strip_userinfo(self._url)

    def new_client(self, options: dict[str, Any]) -> openai.OpenAI:
        """The SDK client over ``options`` (``max_retries=0``: the policy retries)."""
        import openai

        key = os.environ.get(KEY_ENV) or "EMPTY"
        return openai.OpenAI(base_url=self._url, api_key=key, **options)

    def params(self, request: ModelRequest, max_tokens: int, temperature: float | None) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments for a request (no timeout)."""
        messages = [dict(m) for m in request.messages]
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        params: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": max_tokens}
        if request.tools:
            params["tools"] = [
                {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                  "parameters": t.get("input_schema", {"type": "object"})}}
                for t in request.tools
            ]
        if temperature is not None:
            params["temperature"] = temperature
        return params

    def api_errors(self) -> tuple[type[BaseException], ...]:
        """The SDK's ``APIError``: every failure of a call."""
        import openai

        return (openai.APIError,)

    def call(self, params: dict[str, Any], timeout_s: float) -> Any:
        """One chat-completions call on this attempt's client."""
        return self.client().chat.completions.create(**params, timeout=timeout_s)

    def classify(self, exc: BaseException, label: str, *, attempts: int, note: str) -> AgentError:
        """The groundeval error of a failed call (``models.classify``)."""
        return classify_openai_error(
            exc, label, base_url=self._url, attempts=attempts, note=note, model=self.model,
        )

    def check_value(self, value: Any) -> None:
        """Refuse a 2xx value of the wrong shape (``BadResponse``)."""
        choices = getattr(value, "choices", None)
        if not isinstance(choices, list) or any(getattr(c, "message", None) is None for c in choices):
            raise BadResponse("shape", "JSON that is not a chat-completions answer (no choices with a message)")

    def endpoint(self) -> str:
        """The API root, without credentials."""
        return self.base_url

    def reply(self, request: ModelRequest, done: Completed[Any]) -> Reply:
        """Read the answer, stop reason, usage and tool calls of a response."""
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

    def truncation_fix(self, stop_reason: str | None) -> str | None:
        """The advice of a reply cut off at the output limit, or None."""
        return "Raise --groundeval-max-tokens" if stop_reason == "length" else None

    # -- what the server says about itself -----------------------------------------------------
    def served(self) -> ServedFacts:
        """What the server said about itself (``models.served``), asked once; empty without ``server_facts``.

        An endpoint the server lacks, or that fails, says nothing; it never fails the run.
        """
        with self._served_lock:
            if self._served is None:
                self._served = self._ask_server() if self._ask_served else ServedFacts()
            return self._served

    def _root(self) -> str:
        """The server's root (the base URL without its trailing ``/v1``)."""
        return self._url[: -len("/v1")] if self._url.endswith("/v1") else self._url

    def _probe(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        """The JSON a probe of the server answered, or None (any failure: the endpoint is absent)."""
        import openai

        options: Any = {"timeout": PROBE_TIMEOUT_S}
        try:
            if method == "GET":
                return self.client().get(url, cast_to=object, options=options)
            return self.client().post(url, cast_to=object, body=body, options=options)
        except (openai.APIError, ValueError, TypeError):
            return None

    def _ask_server(self) -> ServedFacts:
        found = read_props(self._probe("GET", f"{self._root()}/props"))
        models = self._probe("GET", f"{self._url}/models")
        for key, value in read_models(models, self.model).items():
            found.setdefault(key, value)
        if "server" not in found and looks_like_llama_cpp_python(models):  # confirmed by its own tokenizer
            found.update(read_tokenize_count(self._probe("POST", f"{self._root()}/extras/tokenize/count",
                                                         {"input": "groundeval"})))
        return ServedFacts(**found)

    def learn(self, error: CaseTooLargeError) -> None:
        """Keep the context a "too large" 400 stated when the server had not said (llama-cpp-python's)."""
        n_ctx = context_from_error(error.details)
        with self._served_lock:
            if n_ctx is not None and self._served is not None and self._served.n_ctx is None:
                self._served = dataclasses.replace(
                    self._served, n_ctx=n_ctx, n_ctx_from="400 context_length_exceeded"
                )

    def server_meta(self) -> dict[str, Any]:
        """Facts of the model and its server recorded with every call (``ServedFacts.meta``)."""
        return self.served().meta()

    def context_tokens(self) -> int | None:
        """The context one request gets, tokens, when the server said; else None (not checked here)."""
        return self.served().n_ctx

    def count_tokens(self, text: str) -> int | None:
        """Tokens the server's tokenizer makes of ``text`` (raw, no chat template), or None without one.

        llama.cpp: ``POST /tokenize {"content"}``; vLLM: ``POST /tokenize {"model", "prompt"}``;
        llama-cpp-python: ``POST /extras/tokenize/count {"input"}``.
        """
        server = self.served().server
        if server == LLAMA_CPP_PYTHON:
            reply = self._probe("POST", f"{self._root()}/extras/tokenize/count", {"input": text})
            count = reply.get("count") if isinstance(reply, dict) else None
            return count if isinstance(count, int) and not isinstance(count, bool) else None
        if server == "llama.cpp":
            reply = self._probe("POST", f"{self._root()}/tokenize", {"content": text})
            tokens = reply.get("tokens") if isinstance(reply, dict) else None
            return len(tokens) if isinstance(tokens, list) else None
        if server == "vllm":
            reply = self._probe("POST", f"{self._root()}/tokenize", {"model": self.model, "prompt": text})
            count = reply.get("count") if isinstance(reply, dict) else None
            return count if isinstance(count, int) and not isinstance(count, bool) else None
        return None

    def warmup(self) -> None:
        """Build the client and ask the server about itself before the first call is timed."""
        super().warmup()
        self.served()
