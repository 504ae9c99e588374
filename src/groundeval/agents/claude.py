"""Claude agent: one Anthropic Messages API call per case, the model agent under the alias ``claude``.

The task's fixed instructions go in the system prompt, marked for prompt caching, and the case
content (the Bundle) is the user turn. The agent is ``agents.model_agent.ModelAgent``; the call,
its retries, failure classes, usage and prices are the model layer's (``models.policy`` over
``groundeval.models.providers.anthropic.AnthropicProvider``); this alias only names the provider,
the model (``--groundeval-model``, default ``DEFAULT_MODEL``), the key it needs and the advice its
messages give.

The ``anthropic`` SDK (the ``claude`` extra) is imported on first use, never at collection time.
"""

from __future__ import annotations

from typing import Any

from groundeval.agents.base import offline_hint
from groundeval.agents.model_agent import ModelAgent, ModelAlias
from groundeval.models.providers.anthropic import DEFAULT_MODEL, KEY_ENV, TRUNCATED, anthropic_usage
from groundeval.scoring import Metric

__all__ = ["CLAUDE", "DEFAULT_MODEL", "NO_KEY_HINT", "REJECTED_KEY_HINT", "TRUNCATED", "ClaudeAgent"]

NO_KEY_HINT = f"ANTHROPIC_API_KEY is not set: the agent 'claude' needs it. Set the key, or {offline_hint()}."
"""The one-line error without a key: names every built-in task's offline agent (``registry``)."""
REJECTED_KEY_HINT = f"set a valid ANTHROPIC_API_KEY, or {offline_hint()}"
"""The advice of a rejected key (401), for every agent that calls Claude."""


CLAUDE = ModelAlias(
    "claude",
    provider="anthropic",
    extra="claude",
    module="anthropic",
    hints={"no_key": NO_KEY_HINT, "rejected_key": REJECTED_KEY_HINT},
    key_env=KEY_ENV,
    no_key=NO_KEY_HINT,
)
"""The model agent's ``claude`` alias: Anthropic's provider, its key required before any case."""


class ClaudeAgent(ModelAgent):
    """Asks Claude for the answer with the task's system prompt and the case as the user turn.

    ``run`` sends one Messages API request (retried on infrastructure errors) and returns the
    text blocks joined, with ``meta["stop_reason"]`` the Messages API ``stop_reason``. It raises
    what ``PolicyModel.generate`` raises over ``AnthropicProvider``: ``AuthError`` for a rejected
    key (401) or a refused account or model (402/403), ``InfraError`` for 429, 5xx, 529, timeout
    or connection error after the allowed retries, ``TruncatedError`` at ``max_tokens`` or the
    context window, ``RefusalError`` for ``stop_reason`` ``refusal``, ``CaseTooLargeError`` for a
    case too large for the model, and ``RunStopError`` for an unknown model (404) or any other
    invalid request.

    Args:
        config: ``model`` (default ``DEFAULT_MODEL``, any Claude model id); options
            ``max_tokens`` (tokens, default 4096), ``temperature`` (default: not sent),
            ``max_retries`` (default 2) and ``timeout`` (seconds per case, default 600).
            ``base_url`` is not used: point the SDK at a gateway with ``ANTHROPIC_BASE_URL``.
        http_client: An ``httpx2.Client`` for the SDK (tests pass one with a ``MockTransport``).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: The anthropic SDK is not installed (the ``claude`` extra),
            ``ANTHROPIC_API_KEY`` is not set, or an option is out of range.
    """

    alias = CLAUDE

    @staticmethod
    def usage(model: str | None, usage: Any) -> dict[str, Metric]:
        """Token counts and list price of an Anthropic ``Usage`` (``models.providers.anthropic.anthropic_usage``)."""
        return anthropic_usage(model, usage)
