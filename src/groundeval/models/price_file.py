"""Prices a user gives (``--groundeval-prices FILE``): any model priced, the list prices' rules kept.

The file is TOML (``.toml``) or JSON (any other name), one table per model id, USD per million
tokens (MTok)::

    [models."my-org/llama-3.3-70b"]
    input = 0.60          # uncached input tokens, USD/MTok (required)
    output = 0.80         # output tokens, USD/MTok (required)
    cached_input = 0.15   # input tokens read from a prompt cache (default: the input price)
    batch_discount = 0.5  # batch price as a fraction of the standard one (default: pricing.BATCH_DISCOUNT)

A user price wins over the packaged list price of the same model id (matched exactly, case
folded). Cache writes are priced as input. Every error names the file, the model and the field,
and says what to write instead.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundeval.models.pricing import ModelPrice, Price

__all__ = ["FIELDS", "PriceFileError", "load_price_file", "parse_prices"]

FIELDS = {"input": True, "output": True, "cached_input": False, "batch_discount": False}
"""The fields of one model's entry, and whether each is required."""

EXAMPLE = '[models."MODEL-ID"]\ninput = 0.60\noutput = 0.80'


class PriceFileError(ValueError):
    """A price file that cannot be read or has a wrong entry (the message names file, model, field and fix)."""


def _number(path: Path, model: str, field: str, value: object, fraction: bool = False) -> float:
    where = f"{path}: model {model!r}, field {field!r}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return _fail(
            f"{where} is {value!r}; give a number >= 0 (USD per million tokens)"
            if not fraction
            else f"{where} is {value!r}; give a fraction of the standard price, 0 < x <= 1 (e.g. 0.5)"
        )
    if fraction and not 0 < value <= 1:
        return _fail(f"{where} is {value!r}; give a fraction of the standard price, 0 < x <= 1 (e.g. 0.5)")
    return float(value)


def _fail(message: str) -> float:
    raise PriceFileError(message)


def parse_prices(path: Path, data: object) -> dict[str, ModelPrice]:
    """Check a price file's parsed content and build each model's prices.

    Args:
        path: The file (named in every error).
        data: Its parsed content: ``{"models": {model id: {field: number}}}``.

    Returns:
        Model id (lower case) -> prices.

    Raises:
        PriceFileError: A missing or unknown field, a value that is not a number >= 0, or a
            batch discount outside (0, 1].
    """
    models = data.get("models") if isinstance(data, Mapping) else None
    if not isinstance(models, Mapping) or not models:
        raise PriceFileError(f"{path}: no 'models' table; write one entry per model, e.g.\n{EXAMPLE}")
    out: dict[str, ModelPrice] = {}
    for model, entry in models.items():
        if not isinstance(entry, Mapping):
            raise PriceFileError(f"{path}: model {model!r} is {entry!r}, not a table of prices; e.g.\n{EXAMPLE}")
        unknown = sorted(set(entry) - set(FIELDS))
        if unknown:
            raise PriceFileError(
                f"{path}: model {model!r} has unknown field(s) {', '.join(map(repr, unknown))}; "
                f"the fields are {', '.join(FIELDS)}"
            )
        missing = [k for k, required in FIELDS.items() if required and k not in entry]
        if missing:
            raise PriceFileError(
                f"{path}: model {model!r} is missing {', '.join(map(repr, missing))}; give "
                "input and output in USD per million tokens"
            )
        inp = _number(path, model, "input", entry["input"])
        out_price = _number(path, model, "output", entry["output"])
        cached = _number(path, model, "cached_input", entry.get("cached_input", inp))
        discount = entry.get("batch_discount")
        batch = None if discount is None else _number(path, model, "batch_discount", discount, fraction=True)
        out[str(model).strip().lower()] = ModelPrice(
            f"{model} (prices from {path.name})",
            Price(input=inp, output=out_price, cache_write_5m=inp, cache_write_1h=inp, cache_read=cached),
            batch_discount=batch,
            source=f"prices from {path.name}",
        )
    return out


def load_price_file(path: str | Path) -> dict[str, ModelPrice]:
    """Read and check a price file (TOML for ``.toml``, else JSON); see the module docstring.

    Raises:
        PriceFileError: The file is missing, unreadable or malformed, or an entry is wrong.
    """
    path = Path(path).expanduser()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PriceFileError(
            f"{path}: cannot read the price file ({exc.strerror or exc}); give "
            "--groundeval-prices an existing TOML or JSON file"
        ) from None
    data: Any
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON (name the file .toml for TOML)"
        raise PriceFileError(f"{path}: not valid {kind}: {exc}") from None
    return parse_prices(path, data)
