"""Claude agent: one Anthropic Messages API call per case.

The ``anthropic`` SDK is imported on first use, never at collection time.
"""

from __future__ import annotations

import os
import time
from typing import Any

from groundeval.agents.base import AgentConfig
from groundeval.errors import AgentError, ConfigError
from groundeval.records import AgentRequest, AgentResult

__all__ = ["DEFAULT_MODEL", "ClaudeAgent"]

DEFAULT_MODEL = "claude-opus-4-8"
"""Model used when ``--groundeval-model`` is not given."""

NO_KEY_HINT = (
    "ANTHROPIC_API_KEY is not set: the default agent 'claude' needs it. "
    "Set the key, or run offline with --groundeval-agent=baseline (CLI: --agent baseline)."
)


class ClaudeAgent:
    """Asks Claude for the answer with the task's system prompt and the case as the user turn.

    Args:
        config: ``model`` (default ``DEFAULT_MODEL``); options ``max_tokens`` (tokens, default
            4096), ``temperature`` (default 0.0).

    Raises:
        ConfigError: ``ANTHROPIC_API_KEY`` is not set.
    """

    name = "claude"

    def __init__(self, config: AgentConfig | None = None) -> None:
        config = config or AgentConfig()
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError(NO_KEY_HINT)
        self.model: str | None = config.model or DEFAULT_MODEL
        self.max_tokens = int(config.options.get("max_tokens") or 4096)
        self.temperature = float(config.options.get("temperature") or 0.0)
        self._client: Any = None

    def run(self, request: AgentRequest) -> AgentResult:
        """Send one Messages API request and return the text answer."""
        import anthropic

        if self._client is None:
            self._client = anthropic.Anthropic()
        start = time.perf_counter()
        try:
            message = self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                system=request.prompt.system,
                messages=[{"role": "user", "content": request.prompt.user}],
            )
        except anthropic.APIError as exc:
            raise AgentError(f"{request.case_id}: Anthropic API error: {exc}") from exc
        text = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
        return AgentResult(
            text=text,
            model=message.model,
            usage={"input_tokens": message.usage.input_tokens, "output_tokens": message.usage.output_tokens},
            attempts=1,
            meta={"stop_reason": message.stop_reason, "latency_s": time.perf_counter() - start},
        )
