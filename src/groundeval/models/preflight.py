"""The context pre-flight of a model call: does the request fit, and how many tokens may it answer.

``ContextCheck`` is the pre-flight ``models.policy.PolicyModel`` runs before every call (and the
single-call agents before a case): with the provider's server context known
(``Provider.context_tokens``), the request is fitted to it, its prompt counted by the server's
tokenizer (``Provider.count_tokens``, remembered per text) or estimated; otherwise the price
table's context window (``pricing.context_window``) bounds a rough estimate.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from typing import Any

from groundeval.errors import CaseTooLargeError
from groundeval.models.base import ModelRequest
from groundeval.models.pricing import CHARS_PER_TOKEN, context_window, estimate_tokens
from groundeval.models.providers.base import Provider
from groundeval.models.served import output_budget

__all__ = ["COUNTS_KEPT", "ContextCheck"]

COUNTS_KEPT = 64
"""Prompt token counts remembered per model (a case is counted by its pre-flight and again by its call)."""


class ContextCheck:
    """The pre-flight of one model's calls.

    Args:
        api: The model's provider (its model id, context, tokenizer and advice).
    """

    def __init__(self, api: Provider[Any]) -> None:
        self.api = api
        self._counts: dict[str, tuple[int | None, str]] = {}
        self._counts_lock = threading.Lock()

    def _counted(self, text: str) -> tuple[int | None, str]:
        """The provider's token count of ``text``, remembered (a case is counted by its pre-flight and its call)."""
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        with self._counts_lock:
            if key in self._counts:
                return self._counts[key]
        found = (self.api.count_tokens(text), "the server's tokenizer")
        with self._counts_lock:
            if len(self._counts) >= COUNTS_KEPT:
                self._counts.pop(next(iter(self._counts)))
            self._counts[key] = found
        return found

    def fit(self, request: ModelRequest, max_tokens: int) -> ModelRequest:
        """``request`` with the output limit (of ``max_tokens`` tokens) its prompt leaves in the server's context.

        When the provider knows its context (``Provider.context_tokens``), the prompt is counted by
        the server's tokenizer (else estimated as characters / ``CHARS_PER_TOKEN``) plus the
        provider's ``template_tokens``, and the answer gets ``min(max_tokens, context - prompt)``
        tokens (``models.served.output_budget``). Otherwise ``request`` is returned as it is.

        Raises:
            CaseTooLargeError: Fewer than ``min(max_tokens, MIN_OUTPUT_TOKENS)`` tokens are left.
        """
        n_ctx = self.api.context_tokens()
        if n_ctx is None:
            return request
        parts = [request.system, *(str(m.get("content", "")) for m in request.messages)]
        counted, how = self._counted("\n\n".join(part for part in parts if part))
        if counted is None:
            counted, how = estimate_tokens(*parts), f"characters / {CHARS_PER_TOKEN}"
        wanted = max_tokens
        budget = output_budget(
            label=request.label, model=str(self.api.model), prompt_tokens=counted + self.api.template_tokens,
            max_tokens=wanted, n_ctx=n_ctx, counted_by=how, details=self.api.server_meta(),
            fix=self.api.too_large_fix(),
        )
        return request if budget == request.max_tokens else dataclasses.replace(request, max_tokens=budget)

    def check(self, request: ModelRequest, max_tokens: int) -> None:
        """Refuse a request that clearly cannot fit the model's context window with ``max_tokens``, before paying.

        With the server's context known, the request must fit it (``fit``). Otherwise the
        estimate is the request's characters / ``CHARS_PER_TOKEN`` (which undercounts JSON) plus
        its ``max_tokens``, against ``pricing.context_window(model)``; models of unknown context
        are not checked.

        Raises:
            CaseTooLargeError: The request does not fit; ``details`` hold the numbers.
        """
        if self.api.context_tokens() is not None:
            self.fit(request, max_tokens)
            return
        window = context_window(self.api.model)
        if window is None:
            return
        estimate = -(-request.chars // CHARS_PER_TOKEN)  # as pricing.estimate_tokens: rounded up
        if estimate + max_tokens > window:
            raise CaseTooLargeError(
                f"{request.label}: the case is too large for the model {self.api.model}: about {estimate:,} "
                f"prompt tokens (characters / {CHARS_PER_TOKEN}) plus max_tokens={max_tokens} exceed its "
                f"{window:,}-token context window; no call was made. Use a smaller case or a model with a "
                "larger window",
                attempts=0,
                details={"estimated_tokens": estimate, "context_tokens": window, "max_tokens": max_tokens},
            )
