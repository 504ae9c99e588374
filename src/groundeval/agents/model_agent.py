"""The model agent: one model call per case, to the provider an alias names.

``claude`` and ``openai-compatible`` are one agent, ``ModelAgent``, under two aliases
(``ModelAlias``): an alias names the provider of its model spec, the extra that installs the
provider's SDK, what a run needs before its first case (a key, a base URL, a model name) and the
advice its messages give. Everything else is the same for both: the case's prompt becomes one
``ModelRequest``, the ``Model`` (``models.get_model``: ``models.policy.PolicyModel`` over the
provider) makes the call with the one pre-flight, spending, retry and classification policy, and
what the server says about itself (``models.served``, for a provider that asks) caps the calls in
flight. The alias classes live where their names always have (``agents.claude.ClaudeAgent``,
``agents.openai_compat.OpenAICompatibleAgent``), so every agent spec and option keeps working.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from groundeval.agents._single_call import SingleCallAgent
from groundeval.agents.base import AgentConfig
from groundeval.errors import ConfigError
from groundeval.extras import require_extra
from groundeval.models import get_model
from groundeval.models.served import ServedFacts

if TYPE_CHECKING:
    import httpx2

    from groundeval.models.policy import PolicyModel

__all__ = ["ModelAgent", "ModelAlias"]


@dataclass(frozen=True, slots=True)
class ModelAlias:
    """One name of the model agent: its provider and what a run with it needs.

    Attributes:
        name: The agent's name (``--groundeval-agent=claude``).
        provider: The model spec's provider (a key of ``models.providers.PROVIDERS``).
        extra: The extra that installs the provider's SDK (``claude``).
        module: The SDK's top-level module, looked up to tell whether the extra is installed.
        hints: Advice the model's messages give (see ``models.providers.base.Provider``).
        key_env: An environment variable the run cannot start without, or None.
        no_key: The message when ``key_env`` is not set.
        needs_url: The message when no base URL is given, or None when none is needed.
        needs_model: The message when no model is named, or None when the provider has a default.
        server_facts: Ask the server about itself before the first case (``models.served``).
    """

    name: str
    provider: str
    extra: str
    module: str
    hints: Mapping[str, str] = field(default_factory=dict)
    key_env: str | None = None
    no_key: str = ""
    needs_url: str | None = None
    needs_model: str | None = None
    server_facts: bool = False


class ModelAgent(SingleCallAgent):
    """Asks the model of its alias's provider, with the task's system prompt and the case as the user turn.

    ``run`` sends one request (retried on infrastructure errors) and returns the answer's text,
    with ``meta["stop_reason"]`` the provider's stop reason; it raises what
    ``PolicyModel.generate`` raises (``AuthError``, ``InfraError``, ``TruncatedError``,
    ``RefusalError``, ``CaseTooLargeError``, ``RunStopError``, ``AgentError``).

    Args:
        config: ``model`` (the alias's provider default when it has one); options
            ``max_tokens`` (tokens, default 4096), ``temperature`` (default: not sent),
            ``max_retries`` (default 2), ``timeout`` (seconds per case, default 600) and the
            provider's own (``base_url``).
        http_client: An ``httpx2.Client`` for the SDK (tests pass one with a ``MockTransport``).
        sleep: Replacement for ``time.sleep`` between retries (tests).

    Raises:
        ConfigError: The alias's extra is not installed, a key, base URL or model it needs is
            missing, or an option is out of range.
    """

    alias: ClassVar[ModelAlias]
    """The alias this class answers to (set by each alias class)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        alias = cls.__dict__.get("alias")
        if isinstance(alias, ModelAlias):
            cls.name, cls.provider = alias.name, alias.provider

    @classmethod
    def hints(cls) -> dict[str, str]:
        """The alias's advice for the model's messages."""
        return dict(cls.alias.hints)

    @classmethod
    def check_agent_config(cls, config: AgentConfig) -> None:
        """Refuse a run without the SDK, or the key, base URL or model name the alias needs, before any case.

        Raises:
            ConfigError: As the class says.
        """
        alias = cls.alias
        require_extra(alias.extra, alias.module, f"the agent {cls.name!r}")
        if alias.key_env is not None and not os.environ.get(alias.key_env):
            raise ConfigError(alias.no_key)
        if alias.needs_url is not None and not config.options.get("base_url"):
            raise ConfigError(alias.needs_url)
        if alias.needs_model is not None and not config.model:
            raise ConfigError(alias.needs_model)

    def _build_model(
        self, config: AgentConfig, *, http_client: httpx2.Client | None, sleep: Callable[[float], None] | None
    ) -> PolicyModel[Any]:
        """The model, told to ask the server about itself when the alias says (``models.served``)."""
        options = {**config.options, "server_facts": True} if self.alias.server_facts else config.options
        return get_model(
            f"{self.provider}/{config.model or ''}",
            "agent",
            options=options,
            owner=f"the agent {self.name!r}",
            hints=self.hints(),
            http_client=http_client,
            sleep=sleep,
        )

    @property
    def served(self) -> ServedFacts:
        """What the server said about itself (asked once); empty for a provider that does not ask."""
        served = getattr(self.provider_model.api, "served", None)
        return served() if callable(served) else ServedFacts()

    @property
    def max_concurrency(self) -> int | None:
        """The server's slots when it says (llama.cpp ``total_slots``): more calls in flight would only queue."""
        return self.served.total_slots

    @property
    def base_url(self) -> str:
        """The server's URL without credentials: what messages and metadata show (empty without one)."""
        url: str = getattr(self.provider_model.api, "base_url", "")
        return url
