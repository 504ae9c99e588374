"""A cache of model responses, keyed by request, model settings and role (a judge's replies).

``--groundeval-cache`` keeps an agent's *results* (``agents.result_cache.CachingAgent``); a scorer that
asks a model (``scorers.model_graded``) keeps that model's *responses* here, in the same SQLite
store (``models.cache_store.ResultCache``: WAL, safe across threads and processes, redacted), as entries
of kind ``response``. The key is the SHA-256 of the model's settings (spec, role, model id,
temperature, max tokens: ``Model.settings``), whatever else pins the answer (a prompt hash) and
the full request (system prompt, every message, tools, output limit): a changed model, prompt or
text is asked again. The call's label (a case id) is left out: two cases asking the same question
share the answer.

A hit is a ``ModelResponse`` with ``cached`` in its ``meta`` and no usage: nothing was called or
paid for now.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from groundeval.models.base import ModelRequest, ModelResponse
from groundeval.models.cache_store import ResultCache

__all__ = ["ResponseCache", "response_key"]


def response_key(settings: Mapping[str, Any], request: ModelRequest) -> str:
    """Hex SHA-256 of ``settings`` (the model's, plus any prompt hash) and ``request`` (its label left out)."""
    facts = {
        "kind": "response", "settings": dict(settings), "system": request.system,
        "messages": [dict(m) for m in request.messages], "tools": [dict(t) for t in request.tools],
        "max_tokens": request.max_tokens,
    }
    text = json.dumps(facts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """Model responses in a ``ResultCache`` store, by ``response_key``.

    Args:
        store: The SQLite store (``ResultCache(directory)``).
    """

    def __init__(self, store: ResultCache) -> None:
        self.store = store

    def get(self, settings: Mapping[str, Any], request: ModelRequest) -> ModelResponse | None:
        """The stored response to ``request`` from a model of ``settings``, or None (a miss)."""
        entry = self.store.get(response_key(settings, request))
        if entry is None or entry.get("kind") != "response":
            return None
        model = entry.get("model")
        return ModelResponse(text=str(entry["text"]), model=model if isinstance(model, str) else None,
                             stop_reason=None, usage={}, attempts=0, meta={"cached": True})

    def put(self, settings: Mapping[str, Any], request: ModelRequest, response: ModelResponse) -> None:
        """Store ``response`` (redacted by the store) under the key of ``settings`` and ``request``."""
        entry = {"kind": "response", "text": response.text, "model": response.model, "usage": dict(response.usage)}
        self.store.put(response_key(settings, request), entry, agent=f"{settings.get('role') or 'model'}:"
                       f"{settings.get('spec')}", model=response.model)
