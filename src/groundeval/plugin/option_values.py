"""Converters for option values: each turns the raw string into a value or raises ValueError with a reason.

The reason starts with "must ..." so that the plugin can show it after the option and the value
(``--groundeval-limit='0': must be 1 or more``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "KINDS",
    "bool_value",
    "non_negative_float",
    "non_negative_int",
    "positive_float",
    "positive_fraction",
    "positive_int",
    "progress_mode",
    "text",
    "unit_float",
]


def positive_int(value: str) -> int:
    """A whole number of at least 1."""
    number = int(value)
    if number < 1:
        raise ValueError("must be 1 or more")
    return number


def non_negative_int(value: str) -> int:
    """A whole number of at least 0."""
    number = int(value)
    if number < 0:
        raise ValueError("must be 0 or more")
    return number


def unit_float(value: str) -> float:
    """A number between 0 and 1 (inclusive)."""
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise ValueError("must be between 0 and 1")
    return number


def positive_fraction(value: str) -> float:
    """A number greater than 0 and at most 1 (a share of trials, ``--groundeval-min-pass-rate``)."""
    number = float(value)
    if not 0.0 < number <= 1.0:
        raise ValueError("must be greater than 0 and at most 1")
    return number


def positive_float(value: str) -> float:
    """A number greater than 0 (seconds, for timeouts)."""
    number = float(value)
    if not number > 0:
        raise ValueError("must be greater than 0")
    return number


def bool_value(value: str) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``)."""
    text = value.strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError("must be true or false")


def progress_mode(value: str) -> str:
    """``auto``, ``tty``, ``plain`` or ``off`` (``--groundeval-progress``)."""
    mode = value.strip().lower()
    if mode not in ("auto", "tty", "plain", "off"):
        raise ValueError("must be auto, tty, plain or off")
    return mode


def non_negative_float(value: str) -> float:
    """A number of at least 0 (seconds between progress lines)."""
    number = float(value)
    if not number >= 0:
        raise ValueError("must be 0 or more")
    return number


def text(value: str) -> str:
    """A non-empty string, stripped."""
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


KINDS: dict[Callable[[str], Any], str] = {
    positive_int: "a whole number", non_negative_int: "a whole number",
    unit_float: "a number", positive_float: "a number",
    non_negative_float: "a number", positive_fraction: "a number", float: "a number",
}
"""Converter -> what a value that does not even parse should have been (for the message)."""
