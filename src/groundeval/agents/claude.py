"""Claude agent: one Anthropic Messages API call per case, through ``models.anthropic``.

The task's fixed instructions go in the system prompt, marked for prompt caching, and the case
content (the Bundle) is the user turn. The call, its retries, failure classes, usage and prices
are the model layer's (``groundeval.models.anthropic.AnthropicModel``); this agent only names
the model (``--groundeval-model``, default ``DEFAULT_MODEL``) and the advice its messages give.

The ``anthropic`` SDK (the ``claude`` extra) is imported on first use, never at collection time.
"""

from __future__ import annotations

import os
from typing import Any

from groundeval.agents._single_call import SingleCallAgent
from groundeval.agents.base import AgentConfig, offline_hint
from groundeval.errors import ConfigError
from groundeval.extras import require_extra
from groundeval.models.anthropic import DEFAULT_MODEL, KEY_ENV, TRUNCATED, anthropic_usage
from groundeval.scoring import Metric

__all__ = ["DEFAULT_MODEL", "NO_KEY_HINT", "REJECTED_KEY_HINT", "TRUNCATED", "ClaudeAgent"]

NO_KEY_HINT = f"ANTHROPIC_API_KEY is not set: the agent 'claude' needs it. Set the key, or {offline_hint()}."
"""The one-line error without a key: names every built-in task's offline agent (``registry``)."""
REJECTED_KEY_HINT = f"set a valid ANTHROPIC_API_KEY, or {offline_hint()}"
"""The advice of a rejected key (401), for every agent that calls Claude."""


class ClaudeAgent(SingleCallAgent):
    """Asks Claude for the answer with the task's system prompt and the case as the user turn.

    ``run`` sends one Messages API request (retried on infrastructure errors) and returns the
    text blocks joined, with ``meta["stop_reason"]`` the Messages API ``stop_reason``. It raises
    what ``AnthropicModel.generate`` raises: ``AuthError`` for a rejected key (401) or a refused
    account or model (402/403), ``InfraError`` for 429, 5xx, 529, timeout or connection error
    after the allowed retries, ``TruncatedError`` at ``max_tokens`` or the context window,
    ``RefusalError`` for ``stop_reason`` ``refusal``, ``CaseTooLargeError`` for a case too large
    for the model, and ``RunStopError`` for an unknown model (404) or any other invalid request.

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

    name = "claude"
    provider = "anthropic"

    @classmethod
    def hints(cls) -> dict[str, str]:
        """The missing and rejected key's advice: set the key, or use a built-in offline agent."""
        return {"no_key": NO_KEY_HINT, "rejected_key": REJECTED_KEY_HINT}

    @classmethod
    def check_agent_config(cls, config: AgentConfig) -> None:
        """Refuse a run without the SDK or the key, before any case.

        Raises:
            ConfigError: The ``claude`` extra is missing or ``ANTHROPIC_API_KEY`` is not set.
        """
        require_extra("claude", "anthropic", f"the agent {cls.name!r}")
        if not os.environ.get(KEY_ENV):
            raise ConfigError(NO_KEY_HINT)

    @staticmethod
    def usage(model: str | None, usage: Any) -> dict[str, Metric]:
        """Token counts and list price of an Anthropic ``Usage`` (``models.anthropic.anthropic_usage``)."""
        return anthropic_usage(model, usage)
