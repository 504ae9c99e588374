"""The model services groundeval calls, each a small ``Provider`` (``models.providers.base``).

* ``anthropic`` (with ``anthropic_batch``): Anthropic's Messages API and Message Batches.
* ``openai_compat`` (with ``openai_batch``): any server speaking OpenAI's chat-completions API,
  and OpenAI's Batch API.
* ``local``: a llama.cpp server groundeval starts on a GGUF model (the OpenAI-compatible
  provider over a managed server).

``PROVIDERS`` is the registration: a spec's provider prefix -> its provider class, imported on
use. Importing this package imports no provider module and no SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundeval.models.providers.base import Provider

__all__ = ["PROVIDERS", "provider_class"]

PROVIDERS: dict[str, str] = {
    "anthropic": "groundeval.models.providers.anthropic:AnthropicProvider",
    "openai-compatible": "groundeval.models.providers.openai_compat:OpenAICompatibleProvider",
    "local": "groundeval.models.providers.local:LocalProvider",
}
"""Provider prefix of a spec -> the ``module:class`` of its ``Provider`` (imported on use)."""


def provider_class(prefix: str) -> type[Provider[Any]]:
    """The ``Provider`` class of a spec's provider prefix (imports its module, not its SDK).

    Raises:
        KeyError: ``prefix`` is not a key of ``PROVIDERS`` (``models.parse_spec`` refuses it first).
    """
    module, _, attr = PROVIDERS[prefix].partition(":")
    cls: type[Provider[Any]] = getattr(importlib.import_module(module), attr)
    return cls
