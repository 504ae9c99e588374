"""Published prices of any provider's models, from a maintained catalogue: Pydantic's genai-prices.

genai-prices (https://github.com/pydantic/genai-prices, MIT) ships a snapshot of the providers'
published prices in each release (OpenAI, Anthropic, Google, Mistral, Groq, DeepSeek, Together,
OpenRouter, ... with each provider's pricing page as source). groundeval uses the snapshot of the
locked release only: never its ``UpdatePrices`` (which downloads newer data at run time), so a run
is priced the same on every machine and offline. The data's date is the locked release's date
(``RELEASE_DATES``); ``source()`` names the package, version and that date, and every call priced
from here records it as ``usage.price_source``.

Order of precedence (``groundeval.models.pricing.price_for`` / ``cost_usd``): a user's price file
(``--groundeval-prices``) first, then groundeval's own Claude list, then this catalogue. A model
that none of them prices costs ``None`` ("unknown"), never 0. The package is optional (the
``prices`` extra, also in ``claude``, ``openai`` and ``all``): without it only the first two apply.

Token semantics: genai-prices counts ``input_tokens`` as every prompt token, cache reads and
writes included, with ``cache_write_1h_tokens`` a part of ``cache_write_tokens``; groundeval's
usage counts uncached input apart (Anthropic's terms), so ``cost`` adds them back.
"""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

__all__ = ["PACKAGE", "RELEASE_DATES", "cost", "source"]

PACKAGE = "genai-prices"
RELEASE_DATES = {"0.2.5": "2026-11-19"}
"""genai-prices version -> the date its release (and so its price data) was published (PyPI upload
time, as ``uv.lock`` records it). A version not listed is named without a date."""


@functools.cache
def _version() -> str | None:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def source() -> str | None:
    """The catalogue as a record names it (``"genai-prices 0.2.5 (data of 2026-11-19)"``); None when not installed."""
    version = _version()
    if version is None:
        return None
    date = RELEASE_DATES.get(version)
    return f"{PACKAGE} {version} (data of {date})" if date else f"{PACKAGE} {version} (data date not recorded)"


def _calc(model: str, **usage: int) -> Any | None:
    if _version() is None or not model.strip():
        return None
    from genai_prices import Usage, calc_price

    try:
        return calc_price(Usage(**usage), model.strip())
    except (LookupError, ValueError):  # no provider or model matches; usage the model's prices cannot take
        return None


def cost(
    model: str | None,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_creation_input_tokens: int = 0,
    cache_read_input_tokens: int = 0,
    cache_write_1h_tokens: int = 0,
) -> float | None:
    """Price one call from the catalogue.

    Args:
        model: The model id as the API reported it (e.g. ``"gpt-4o-mini-2024-07-18"``).
        input_tokens: Uncached input tokens.
        output_tokens: Output tokens.
        cache_creation_input_tokens: Tokens written to a prompt cache (all TTLs).
        cache_read_input_tokens: Tokens read from a prompt cache.
        cache_write_1h_tokens: The part of the writes with a 1-hour TTL.

    Returns:
        USD rounded to 1e-8, or None when the catalogue is not installed or does not price the model.
    """
    written = max(cache_creation_input_tokens, 0)
    usage = {
        "input_tokens": input_tokens + written + cache_read_input_tokens,
        "output_tokens": output_tokens,
    }
    if cache_read_input_tokens:
        usage["cache_read_tokens"] = cache_read_input_tokens
    if written:
        usage["cache_write_tokens"] = written
        if cache_write_1h_tokens:
            usage["cache_write_1h_tokens"] = min(cache_write_1h_tokens, written)
    calc = _calc(model or "", **usage)
    return None if calc is None else round(float(calc.total_price), 8)
