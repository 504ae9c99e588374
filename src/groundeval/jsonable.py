"""Values made JSON- and execnet-safe: every leaf a str, int, float, bool or None."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, time as time_
from typing import Any

from groundeval.scoring import Metric

__all__ = ["jsonable"]


def _primitive(value: object) -> Metric:
    """Coerce a value to str/int/float/bool/None (execnet and junit safe; pytest-dev/pytest-xdist#552).

    Decimal and numeric scalars become float, dates and datetimes ISO-8601 strings, anything else
    ``str(value)``.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, date | datetime | time_):
        return value.isoformat()
    try:
        return float(value)  # type: ignore[arg-type]  # Decimal and numpy scalars
    except (TypeError, ValueError):
        return str(value)


_LEAVES = (str, int, float, bool, type(None))


def jsonable(value: Any) -> Any:
    """Return ``value`` with every leaf made JSON- and execnet-safe (see ``_primitive``)."""
    kind = type(value)
    if kind in _LEAVES:  # exact types first: ``isinstance`` against an ABC costs more than the rest
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): jsonable(v) for k, v in value.items()}
    if kind is list:
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump(mode="json"))
    return _primitive(value)
