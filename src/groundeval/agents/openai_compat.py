r"""OpenAI-compatible agent: one chat-completions call per case to any server speaking that API.

This is how an open-weight model is compared with Claude on the same cases: serve it locally,
e.g. ``vllm serve <model>`` (base URL ``http://127.0.0.1:8000/v1``) or Ollama
(``http://127.0.0.1:11434/v1``), and run::

    uv run groundeval --agent openai-compatible --base-url http://127.0.0.1:8000/v1 \
        --model <served model name>

It is the model agent (``agents.model_agent.ModelAgent``) under the alias ``openai-compatible``.
The call, its retries, failure classes, usage mapping and key handling are the model layer's
(``models.policy`` over ``groundeval.models.providers.openai_compat.OpenAICompatibleProvider``; the
key is ``GROUNDEVAL_OPENAI_API_KEY``, never ``OPENAI_API_KEY``); this alias names the server and
model from ``--groundeval-base-url`` and ``--groundeval-model``.

What the server says about itself is asked once, before the first case (``models.served``:
llama.cpp's ``GET /props``, vLLM's ``max_model_len`` in ``GET /v1/models``): with its context
known, a case is fitted to it as the ``local`` agent's are (the answer gets ``min(max_tokens,
context - prompt)`` tokens; a case leaving fewer than ``MIN_OUTPUT_TOKENS`` is
``case_too_large`` with no call), every case's ``agent_meta`` records the served model id, the
context and the server's slots, and the calls in flight are capped to its slots.
"""

from __future__ import annotations

from typing import Any

from groundeval.agents.model_agent import ModelAgent, ModelAlias
from groundeval.models.providers.openai_compat import KEY_ENV, openai_usage
from groundeval.scoring import Metric

__all__ = ["KEY_ENV", "NEEDS_MODEL", "NEEDS_URL", "OPENAI_COMPATIBLE", "OpenAICompatibleAgent"]

NEEDS_URL = (
    "--groundeval-agent=openai-compatible needs --groundeval-base-url: the server's OpenAI API "
    "root, e.g. http://127.0.0.1:8000/v1 (vLLM) or http://127.0.0.1:11434/v1 (Ollama)"
)
NEEDS_MODEL = (
    "--groundeval-agent=openai-compatible needs --groundeval-model: the model name the server "
    "serves (see GET <base-url>/models)"
)

OPENAI_COMPATIBLE = ModelAlias(
    "openai-compatible",
    provider="openai-compatible",
    extra="openai",
    module="openai",
    hints={"no_url": NEEDS_URL, "no_model": NEEDS_MODEL},
    needs_url=NEEDS_URL,
    needs_model=NEEDS_MODEL,
    server_facts=True,
)
"""The model agent's ``openai-compatible`` alias: a base URL and a model name required, the server asked."""


class OpenAICompatibleAgent(ModelAgent):
    """Asks a model behind an OpenAI-compatible chat-completions endpoint.

    ``run`` sends one chat-completions request (retried on infrastructure errors) and returns
    the first choice's text, with ``meta["stop_reason"]`` its ``finish_reason``; it raises what
    ``PolicyModel.generate`` raises over ``OpenAICompatibleProvider`` (``AuthError``,
    ``InfraError``, ``TruncatedError`` for ``finish_reason == "length"``, ``RefusalError``,
    ``CaseTooLargeError``, ``RunStopError``, ``AgentError`` for a reply with no choices).
    Credentials in the base URL are sent as HTTP Basic auth and never shown: ``base_url`` is the
    URL without them.

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

    alias = OPENAI_COMPATIBLE

    @staticmethod
    def usage(model: str | None, usage: Any) -> dict[str, Metric]:
        """Token counts of an OpenAI ``CompletionUsage`` in Anthropic's terms (``openai_usage``)."""
        return openai_usage(model, usage)
