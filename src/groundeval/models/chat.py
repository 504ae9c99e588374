"""The LangChain chat model a tool-using agent drives, made from the same model spec as a ``Model``.

A LangGraph agent needs a LangChain ``BaseChatModel`` (its loop binds tools and reads tool calls
in LangChain's terms), not a ``Model``; this is where that chat model is made, so the provider's
settings come from the one place: the spec's model id, ``max_tokens`` (tokens), ``temperature``,
``timeout`` (seconds) and ``max_retries=0`` (``models.retry`` is the one retry layer: the agent
wraps each model turn in it, with ``models.classify`` classing the failures).

Supported providers: ``anthropic`` (``langchain_anthropic.ChatAnthropic``, the ``write`` extra),
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groundeval.errors import ConfigError
from groundeval.models import parse_spec
from groundeval.models.retry import CallSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["CHAT_PROVIDERS", "api_errors", "chat_model", "import_provider"]

CHAT_PROVIDERS = ("anthropic",)
"""Spec providers a LangChain chat model can be made for."""


def chat_model(spec: str, settings: CallSettings) -> BaseChatModel:
    """The LangChain chat model for ``spec`` with the call settings every model shares.

    Args:
        spec: ``anthropic/<model id>``.
        settings: ``max_tokens`` (tokens), ``temperature`` (None: not sent) and the retry policy
            (its ``timeout_s``, seconds, is the HTTP timeout of one turn).

    Raises:
        ConfigError: The spec names a provider with no chat model here.
    """
    parsed = parse_spec(spec)
    if parsed.provider not in CHAT_PROVIDERS:
        raise ConfigError(
            f"model spec {spec!r}: a tool-using agent needs a chat model; providers with one: "
            f"{', '.join(CHAT_PROVIDERS)}"
        )
    from langchain_anthropic import ChatAnthropic

    from groundeval.models.providers.anthropic import DEFAULT_MODEL

    kwargs: dict[str, Any] = {
        "model": parsed.name or DEFAULT_MODEL, "max_tokens": settings.max_tokens, "max_retries": 0,
        "timeout": settings.retry.timeout_s,
    }
    if settings.temperature is not None:
        kwargs["temperature"] = settings.temperature
    model: BaseChatModel = ChatAnthropic(**kwargs)
    return model


def import_provider(provider: str) -> None:
    """Import a provider's LangChain package (a tool-using agent's ``warmup``, before timing)."""
    if provider == "anthropic":
        import langchain_anthropic  # noqa: F401


def api_errors(chat: Any) -> tuple[type[BaseException], ...]:
    """The SDK exception types a chat model's turn raises as attempt failures (for ``models.retry``).

    Returns:
        ``(anthropic.APIError,)`` for ``ChatAnthropic``; none for another chat model (a scripted one).
    """
    if type(chat).__module__.startswith("langchain_anthropic"):
        import anthropic

        return (anthropic.APIError,)
    return ()
