"""List prices of Claude models, and the cost of one call from its token usage.

Prices are USD per million tokens (MTok), standard tier, for the Claude API, as published by
Anthropic and checked on 2026-11-29:

* the pricing page, https://platform.claude.com/docs/en/about-claude/pricing ("Model pricing":
  base input, 5-minute cache writes, 1-hour cache writes, cache hits and refreshes, output);
* the model overview pages, https://platform.claude.com/docs/en/models/<model>/overview
  (Opus 5.5, Opus 5, Opus 4.8, Sonnet 5.5, Sonnet 5, Haiku 5.5).

Where the sources disagreed or were incomplete:

* Sonnet 5.5 cache reads: the overview page lists $0.20/MTok, but price trackers that re-checked
  the live pricing page in October 2026 report a cut to $0.10/MTok from 2026-10-07. $0.10 is used.
* Haiku 5.5 has two rates by prompt length (input + cache writes + cache reads): up to 100,000
  tokens, and over 100,000 tokens, where the higher rate applies to every token of that request.
  Sonnet 4 and 4.5 charge a long-context rate above 200,000 input tokens ($6 / $22.50); their
  long-context cache rates are derived with the published multipliers (1.25x, 2x, 0.1x).
* Claude Fable 5.2 and Mythos 5.2 (known to the SDK) have no published price found: they, and
  any model id not matched below, are priced as ``None`` ("unknown"), never as 0.

Models not listed here are priced from a maintained catalogue of every provider's published
prices (``groundeval.models.price_catalog``: genai-prices, with its data's date) when the
``prices`` extra is installed; a user's ``--groundeval-prices`` file wins over both. Each priced
call records where its price came from (``usage.price_source``: ``price_source``).

Batch processing is priced by ``batch_usage``: ``BATCH_DISCOUNT`` of the standard price. Fast
mode, priority tier, US-only inference (``inference_geo``) and third-party clouds (Bedrock,
Vertex, Foundry) are priced differently and are not modelled: ``cost_usd`` is the
standard-tier list price.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from groundeval.scoring import Metric

__all__ = [
    "BATCH_DISCOUNT",
    "CHARS_PER_TOKEN",
    "CONTEXT_TOKENS",
    "PRICES",
    "ModelPrice",
    "Price",
    "batch_usage",
    "context_window",
    "cost_usd",
    "estimate_tokens",
    "price_for",
    "price_source",
    "priced",
    "total_cost",
    "use_prices",
]


@dataclass(frozen=True, slots=True)
class Price:
    """One rate card, USD per million tokens.

    Attributes:
        input: Uncached input tokens.
        output: Output tokens (thinking included).
        cache_write_5m: Input tokens written to the 5-minute prompt cache (the default TTL).
        cache_write_1h: Input tokens written to the 1-hour prompt cache.
        cache_read: Input tokens read from the prompt cache (hits and refreshes).
    """

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """Prices of one model family and version.

    Attributes:
        family: Human name, e.g. ``"Claude Opus 4.8"``.
        standard: Rates for ordinary requests.
        long_prompt: Rates for a request whose prompt is longer than ``long_prompt_over``
            tokens, or None when the model has a single rate.
        long_prompt_over: Prompt length (tokens) above which ``long_prompt`` applies.
        batch_discount: Batch price as a fraction of the standard one, or None for
            ``BATCH_DISCOUNT`` (a user price file may set it: ``groundeval.models.price_file``).
        source: Where the prices come from, as a record names it (``usage.price_source``).
    """

    family: str
    standard: Price
    long_prompt: Price | None = None
    long_prompt_over: int | None = None
    batch_discount: float | None = None
    source: str = "groundeval Claude list prices (checked 2026-11-29)"


def _card(inp: float, out: float, w5: float, w1: float, read: float) -> Price:
    return Price(input=inp, output=out, cache_write_5m=w5, cache_write_1h=w1, cache_read=read)


_OPUS_45 = _card(5.0, 25.0, 6.25, 10.0, 0.50)
_OPUS_4 = _card(15.0, 75.0, 18.75, 30.0, 1.50)
_SONNET_4 = _card(3.0, 15.0, 3.75, 6.0, 0.30)
_SONNET_4_LONG = _card(6.0, 22.50, 7.50, 12.0, 0.60)
_SONNET_5 = _card(2.0, 10.0, 2.50, 4.0, 0.20)
_FABLE_5 = _card(10.0, 50.0, 12.50, 20.0, 1.0)
_FABLE_51 = _card(10.0, 50.0, 12.50, 20.0, 0.25)

PRICES: dict[str, ModelPrice] = {
    "claude-fable-5-1": ModelPrice("Claude Fable 5.1", _FABLE_51),
    "claude-mythos-5-1": ModelPrice("Claude Mythos 5.1", _FABLE_51),
    "claude-fable-5": ModelPrice("Claude Fable 5", _FABLE_5),
    "claude-mythos-5": ModelPrice("Claude Mythos 5", _FABLE_5),
    "claude-opus-5-5": ModelPrice("Claude Opus 5.5", _card(4.0, 20.0, 5.0, 8.0, 0.20)),
    "claude-opus-5": ModelPrice("Claude Opus 5", _OPUS_45),
    "claude-opus-4-8": ModelPrice("Claude Opus 4.8", _OPUS_45),
    "claude-opus-4-7": ModelPrice("Claude Opus 4.7", _OPUS_45),
    "claude-opus-4-6": ModelPrice("Claude Opus 4.6", _OPUS_45),
    "claude-opus-4-5": ModelPrice("Claude Opus 4.5", _OPUS_45),
    "claude-opus-4-1": ModelPrice("Claude Opus 4.1", _OPUS_4),
    "claude-opus-4-0": ModelPrice("Claude Opus 4", _OPUS_4),
    "claude-opus-4": ModelPrice("Claude Opus 4", _OPUS_4),
    "claude-sonnet-5-5": ModelPrice("Claude Sonnet 5.5", _card(2.0, 10.0, 2.50, 4.0, 0.10)),
    "claude-sonnet-5": ModelPrice("Claude Sonnet 5", _SONNET_5),
    "claude-sonnet-4-6": ModelPrice("Claude Sonnet 4.6", _SONNET_4),
    "claude-sonnet-4-5": ModelPrice("Claude Sonnet 4.5", _SONNET_4, _SONNET_4_LONG, 200_000),
    "claude-sonnet-4-0": ModelPrice("Claude Sonnet 4", _SONNET_4, _SONNET_4_LONG, 200_000),
    "claude-sonnet-4": ModelPrice("Claude Sonnet 4", _SONNET_4, _SONNET_4_LONG, 200_000),
    "claude-3-7-sonnet": ModelPrice("Claude Sonnet 3.7", _SONNET_4),
    "claude-3-5-sonnet": ModelPrice("Claude Sonnet 3.5", _SONNET_4),
    "claude-haiku-5-5": ModelPrice(
        "Claude Haiku 5.5",
        _card(0.10, 0.50, 0.125, 0.20, 0.01),
        _card(0.50, 2.50, 0.625, 1.00, 0.05),
        100_000,
    ),
    "claude-haiku-4-5": ModelPrice("Claude Haiku 4.5", _card(1.0, 5.0, 1.25, 2.0, 0.10)),
    "claude-3-5-haiku": ModelPrice("Claude Haiku 3.5", _card(0.80, 4.0, 1.0, 1.6, 0.08)),
    "claude-3-haiku": ModelPrice("Claude Haiku 3", _card(0.25, 1.25, 0.30, 0.50, 0.03)),
    "claude-3-opus": ModelPrice("Claude Opus 3", _OPUS_4),
}
"""Model id stem -> prices. A model id matches a stem exactly or with a date/version suffix."""

_SUFFIX = r"(?:-\d{8})?(?:-latest)?(?:-v\d+(?::\d+)?)?(?:@\d{8})?"
_PREFIX = re.compile(r"^(?:(?:us|eu|apac|global)\.)?(?:anthropic\.)?")


USER_PRICES: dict[str, ModelPrice] = {}
"""Model id (lower case) -> prices from ``--groundeval-prices`` (``use_prices``); they win over ``PRICES``."""


def use_prices(prices: Mapping[str, ModelPrice]) -> None:
    """Set this process's user prices (``groundeval.models.price_file.load_price_file``), replacing any before."""
    USER_PRICES.clear()
    USER_PRICES.update(prices)


def price_for(model: str | None) -> ModelPrice | None:
    """Find the prices of a model id as the API reports it: a user price first, then the list.

    Args:
        model: E.g. ``"claude-opus-4-8"``, ``"claude-haiku-4-5-20251001"``,
            ``"claude-sonnet-5-5[1m]"``; Bedrock/Vertex spellings are recognised too.

    Returns:
        The model's prices, or None for an unknown or non-Claude model.
    """
    if not model:
        return None
    user = USER_PRICES.get(model.strip().lower())
    if user is not None:
        return user
    name = _PREFIX.sub("", model.strip().lower()).removesuffix("[1m]")
    for stem in sorted(PRICES, key=len, reverse=True):
        if re.fullmatch(re.escape(stem) + _SUFFIX, name):
            return PRICES[stem]
    return None


def cost_usd(
    model: str | None,
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_creation_input_tokens: int | None = 0,
    cache_read_input_tokens: int | None = 0,
    cache_write_1h_tokens: int | None = 0,
) -> float | None:
    """Price one model call at list price.

    Args:
        model: Model id as returned by the API.
        input_tokens: Uncached input tokens.
        output_tokens: Output tokens.
        cache_creation_input_tokens: Tokens written to the prompt cache (all TTLs).
        cache_read_input_tokens: Tokens read from the prompt cache.
        cache_write_1h_tokens: The part of ``cache_creation_input_tokens`` written with the
            1-hour TTL (the rest is priced as 5-minute writes).

    Returns:
        Cost in USD rounded to 1e-8, or None when the model's price is unknown or the token
        counts are missing (never 0 for "unknown").
    """
    if input_tokens is None or output_tokens is None:
        return None
    prices = price_for(model)
    if prices is None:
        from groundeval.models import price_catalog

        return price_catalog.cost(
            model, input_tokens=input_tokens, output_tokens=output_tokens,
            cache_creation_input_tokens=cache_creation_input_tokens or 0,
            cache_read_input_tokens=cache_read_input_tokens or 0, cache_write_1h_tokens=cache_write_1h_tokens or 0,
        )
    written = cache_creation_input_tokens or 0
    read = cache_read_input_tokens or 0
    written_1h = min(cache_write_1h_tokens or 0, written)
    rate = prices.standard
    prompt = input_tokens + written + read
    if prices.long_prompt is not None and prompt > (prices.long_prompt_over or 0):
        rate = prices.long_prompt
    total = (
        input_tokens * rate.input
        + output_tokens * rate.output
        + (written - written_1h) * rate.cache_write_5m
        + written_1h * rate.cache_write_1h
        + read * rate.cache_read
    )
    return round(total / 1_000_000, 8)


def price_source(model: str | None) -> str | None:
    """Where ``cost_usd`` takes the model's prices from, or None when it has none.

    Returns:
        The user price file (``"prices from FILE"``), groundeval's Claude list, or the catalogue
        with its version and data date (``price_catalog.source``).
    """
    prices = price_for(model)
    if prices is not None:
        return prices.source
    from groundeval.models import price_catalog

    if model and price_catalog.cost(model, input_tokens=1, output_tokens=1) is not None:
        return price_catalog.source()
    return None


def priced(model: str | None, usage: Mapping[str, Metric]) -> dict[str, Metric]:
    """``usage`` with ``price_source`` added when its ``cost_usd`` is a price (not None).

    Args:
        model: The model id the cost was computed for.
        usage: Token counts and ``cost_usd`` (USD or None).

    Returns:
        A copy; ``price_source`` names the price list, file or catalogue (``price_source``).
    """
    out = dict(usage)
    if out.get("cost_usd") is not None:
        source = price_source(model)
        if source is not None:
            out["price_source"] = source
    return out


def total_cost(costs: Iterable[Metric]) -> float | None:
    """Sum the costs of several calls or cases, USD.

    Args:
        costs: One cost per call or case, None where it is unpriced.

    Returns:
        The sum rounded to 1e-6, or None if any cost is None (a partly priced total would
        understate the spend).
    """
    costs = list(costs)
    if any(c is None for c in costs):
        return None
    return round(sum(float(c or 0.0) for c in costs), 6)


CONTEXT_TOKENS = 200_000
"""Context window of the Claude models priced here without the 1M-token option, tokens.

Anthropic's models overview (https://platform.claude.com/docs/en/about-claude/models/overview,
"Context window") gives 200K for these models; the 1M window is opt-in (``[1m]`` model ids or a
beta header, which groundeval does not send). The Sonnet 4/4.5 long-prompt rate above 200,000
input tokens above is that same boundary."""
LONG_CONTEXT_TOKENS = 1_000_000
"""Context window of a ``[1m]`` model id, tokens."""
CHARS_PER_TOKEN = 4
"""Characters per token of the pre-flight estimate. English prose runs about 4 characters per
token; FHIR JSON (ids, codes, punctuation) runs fewer, so ``chars / 4`` undercounts a Bundle and
the pre-flight refuses only cases that clearly do not fit."""


def context_window(model: str | None) -> int | None:
    """The model's context window in tokens, or None when it is not known (no pre-flight)."""
    if price_for(model) is None:
        return None
    return LONG_CONTEXT_TOKENS if str(model).strip().lower().endswith("[1m]") else CONTEXT_TOKENS


def estimate_tokens(*texts: str) -> int:
    """A cheap lower-bound-ish estimate of the tokens in ``texts``: characters / ``CHARS_PER_TOKEN``."""
    return -(-sum(len(t) for t in texts) // CHARS_PER_TOKEN)


BATCH_DISCOUNT = 0.5
"""Price of a request sent through a provider's batch API, as a fraction of its standard price.

Anthropic's pricing page (https://platform.claude.com/docs/en/about-claude/pricing, "Batch
processing": "50% discount on both input and output tokens"; prompt-cache multipliers stack on
the batch rate) and OpenAI's Batch API guide (https://platform.openai.com/docs/guides/batch:
"50% cost discount compared to synchronous APIs"), both checked on 2026-12-02. Every token class
is discounted alike, so the batch cost is the standard cost times this fraction."""


def batch_usage(usage: Mapping[str, Metric], model: str | None = None) -> dict[str, Metric]:
    """``usage`` priced at the batch rate, with what the same call costs at the standard rate.

    Args:
        usage: Token counts and ``cost_usd`` at the standard rate (USD, None when unknown).
        model: The model id; a user price's ``batch_discount`` replaces ``BATCH_DISCOUNT``.

    Returns:
        The same counts, ``cost_usd`` times ``BATCH_DISCOUNT`` (rounded to 1e-8) and
        ``standard_cost_usd`` (the standard-rate cost, USD; None when unknown). A ``usage``
        that already has ``standard_cost_usd`` is returned unchanged.
    """
    if "standard_cost_usd" in usage:
        return dict(usage)
    cost = usage.get("cost_usd")
    standard = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    prices = price_for(model)
    discount = prices.batch_discount if prices is not None and prices.batch_discount is not None else BATCH_DISCOUNT
    batch = None if standard is None else round(standard * discount, 8)
    return {**usage, "cost_usd": batch, "standard_cost_usd": standard}
