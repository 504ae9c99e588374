r"""OpenAI-compatible agent: one chat-completions call per case to any server speaking that API.

This is how an open-weight model is compared with Claude on the same cases: serve it locally,
e.g. ``vllm serve <model>`` (base URL ``http://127.0.0.1:8000/v1``) or Ollama
(``http://127.0.0.1:11434/v1``), and run::

    uv run groundeval --agent openai-compatible --base-url http://127.0.0.1:8000/v1 \
        --model <served model name>

The call, its retries, failure classes, usage mapping and key handling are the model layer's
(``groundeval.models.openai_compat.OpenAICompatibleModel``; the key is
``GROUNDEVAL_OPENAI_API_KEY``, never ``OPENAI_API_KEY``); this agent names the server and model
from ``--groundeval-base-url`` and ``--groundeval-model``.

What the server says about itself is asked once, before the first case (``models.served``:
llama.cpp's ``GET /props``, vLLM's ``max_model_len`` in ``GET /v1/models``): with its context
known, a case is fitted to it as the ``local`` agent's are (the answer gets ``min(max_tokens,
context - prompt)`` tokens; a case leaving fewer than ``MIN_OUTPUT_TOKENS`` is
``case_too_large`` with no call), every case's ``agent_meta`` records the served model id, the
context and the server's slots, and the calls in flight are capped to its slots.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groundeval.agents._single_call import SingleCallAgent
from groundeval.agents.base import AgentConfig
from groundeval.errors import ConfigError
from groundeval.extras import require_extra
from groundeval.models import get_model
from groundeval.models.openai_compat import KEY_ENV, OpenAICompatibleModel, openai_usage
from groundeval.models.provider import ProviderModel
from groundeval.models.served import ServedFacts
from groundeval.scoring import Metric

if TYPE_CHECKING:
    import httpx2

__all__ = ["KEY_ENV", "NEEDS_MODEL", "NEEDS_URL", "OpenAICompatibleAgent"]

NEEDS_URL = (
    "--groundeval-agent=openai-compatible needs --groundeval-base-url: the server's OpenAI API "
    "root, e.g. http://127.0.0.1:8000/v1 (vLLM) or http://127.0.0.1:11434/v1 (Ollama)"
)
NEEDS_MODEL = (
    "--groundeval-agent=openai-compatible needs --groundeval-model: the model name the server "
    "serves (see GET <base-url>/models)"
)


class OpenAICompatibleAgent(SingleCallAgent):
    """Asks a model behind an OpenAI-compatible chat-completions endpoint.

    ``run`` sends one chat-completions request (retried on infrastructure errors) and returns
    the first choice's text, with ``meta["stop_reason"]`` its ``finish_reason``; it raises what
    ``OpenAICompatibleModel.generate`` raises (``AuthError``, ``InfraError``, ``TruncatedError``
    for ``finish_reason == "length"``, ``RefusalError``, ``CaseTooLargeError``, ``RunStopError``,
    ``AgentError`` for a reply with no choices). Credentials in the base URL are sent as HTTP
    Basic auth and never shown: ``base_url`` is the URL without them.

    Args:
        config: ``model`` (required: the served model name); options ``base_url`` (required),
            ``max_tokens`` (tokens, default 4096), ``temperature`` (default: not sent),
            ``max_retries`` (default 2) and ``timeout`` (seconds per case, default 600).
        http_client: An ``httpx2.Client`` for the SDK (tests).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: The openai SDK is not installed (the ``openai`` extra), no base URL or model,
            or an option out of range.
    """

    name = "openai-compatible"
    provider = "openai-compatible"

    def _build_model(
        self, config: AgentConfig, *, http_client: httpx2.Client | None, sleep: Callable[[float], None] | None
    ) -> ProviderModel[Any]:
        """The model, told to ask the server about itself (``OpenAICompatibleModel.served``)."""
        return get_model(
            f"{self.provider}/{config.model or ''}", "agent", options={**config.options, "server_facts": True},
            owner=f"the agent {self.name!r}", hints=self.hints(), http_client=http_client, sleep=sleep,
        )

    @property
    def served(self) -> ServedFacts:
        """What the server said about itself (asked once)."""
        assert isinstance(self.backend, OpenAICompatibleModel)
        return self.backend.served()

    @property
    def max_concurrency(self) -> int | None:
        """The server's slots when it says (llama.cpp ``total_slots``): more calls in flight would only queue."""
        return self.served.total_slots

    @classmethod
    def hints(cls) -> dict[str, str]:
        """The messages of a missing base URL or model name, in the agent's options' terms."""
        return {"no_url": NEEDS_URL, "no_model": NEEDS_MODEL}

    @classmethod
    def check_agent_config(cls, config: AgentConfig) -> None:
        """Refuse a run without the SDK, the base URL or the model name, before any case.

        Raises:
            ConfigError: The ``openai`` extra is missing, or no base URL or model name.
        """
        require_extra("openai", "openai", f"the agent {cls.name!r}")
        if not config.options.get("base_url"):
            raise ConfigError(NEEDS_URL)
        if not config.model:
            raise ConfigError(NEEDS_MODEL)

    @property
    def base_url(self) -> str:
        """The server's URL without credentials: what messages and metadata show."""
        url: str = getattr(self.backend, "base_url", "")
        return url

    @staticmethod
    def usage(model: str | None, usage: Any) -> dict[str, Metric]:
        """Token counts of an OpenAI ``CompletionUsage`` in Anthropic's terms (``openai_usage``)."""
        return openai_usage(model, usage)
