"""Whether a resource matches one search parameter value: token, reference and date searches.

The rules are those of the R4 spec's search.html: "token" (``[system]|[code]``, ``|[code]``,
``[system]|``, a bare ``[code]``), "reference" (``[id]``, ``[type]/[id]``, an absolute URL),
"date" with the prefixes ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge`` compared as ranges
(the implicit range of a value of partial precision, "Prefixes" and "date"), and comma-separated
values as OR, repeated parameters as AND ("Composite"/"OR"/"AND" under "Combining").
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from groundeval.fhir.sandbox.outcome import FhirHttpError
from groundeval.fhir.sandbox.params import SearchParam

__all__ = ["check_value", "date_range", "matches", "values_at"]

_PREFIXES = ("eq", "ne", "lt", "le", "gt", "ge")
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$")


def values_at(resource: dict[str, Any], path: str) -> list[Any]:
    """The values at a dotted element ``path`` of ``resource`` (lists flattened)."""
    current: list[Any] = [resource]
    for part in path.split("."):
        nxt: list[Any] = []
        for value in current:
            if isinstance(value, dict) and part in value:
                got = value[part]
                nxt.extend(got if isinstance(got, list) else [got])
        current = nxt
    return current


def date_range(text: str) -> tuple[datetime, datetime]:
    """The implicit range ``[start, end)`` of a FHIR date/dateTime/instant of any precision.

    A value without a time zone is taken as UTC (search.html "date": the server's time zone
    applies; the sandbox's is UTC).

    Raises:
        ValueError: ``text`` is not a FHIR date, dateTime or instant.
    """
    m = _DATE.match(text.strip())
    if not m:
        raise ValueError(f"not a FHIR date: {text!r}")
    year, month, day, hour, minute, second, frac, tz = m.groups()
    tzinfo: timezone = UTC
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        tzinfo = timezone(sign * timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6])))
    y = int(year)
    if month is None:
        return datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC)
    mo = int(month)
    if day is None:
        end = datetime(y + 1, 1, 1, tzinfo=UTC) if mo == 12 else datetime(y, mo + 1, 1, tzinfo=UTC)
        return datetime(y, mo, 1, tzinfo=UTC), end
    d = datetime(y, mo, int(day), tzinfo=UTC)
    if hour is None:
        return d, d + timedelta(days=1)
    start = datetime(
        y,
        mo,
        int(day),
        int(hour),
        int(minute),
        int(second or 0),
        int(float(frac) * 1_000_000) if frac else 0,
        tzinfo=tzinfo,
    )
    if second is None:
        return start, start + timedelta(minutes=1)
    if frac is None:
        return start, start + timedelta(seconds=1)
    return start, start + timedelta(microseconds=1)


def _target_ranges(resource: dict[str, Any], param: SearchParam) -> list[tuple[datetime, datetime]]:
    out: list[tuple[datetime, datetime]] = []
    for path in param.paths:
        for value in values_at(resource, path):
            try:
                if isinstance(value, str):
                    out.append(date_range(value))
                elif isinstance(value, dict):  # a Period: an open end is unbounded
                    lo = date_range(value["start"])[0] if value.get("start") else datetime.min.replace(tzinfo=UTC)
                    hi = date_range(value["end"])[1] if value.get("end") else datetime.max.replace(tzinfo=UTC)
                    out.append((lo, hi))
            except ValueError:
                continue
    return out


def _date_match(resource: dict[str, Any], param: SearchParam, raw: str) -> bool:
    prefix, text = (raw[:2], raw[2:]) if raw[:2] in _PREFIXES else ("eq", raw)
    try:
        lo, hi = date_range(text)
    except ValueError as exc:
        raise FhirHttpError(400, "invalid", f"Invalid date for search parameter {param.name!r}: {raw!r}") from exc
    for a, b in _target_ranges(resource, param):
        eq = lo <= a and b <= hi
        if (
            (prefix == "eq" and eq)
            or (prefix == "ne" and not eq)
            or (prefix == "lt" and a < lo)
            or (prefix == "gt" and b > hi)
            or (prefix == "le" and (a < lo or eq))
            or (prefix == "ge" and (b > hi or eq))
        ):
            return True
    return False


def _codings(value: Any) -> list[tuple[str | None, str | None]]:
    if isinstance(value, str):  # a primitive code (status, intent)
        return [(None, value)]
    if isinstance(value, dict) and "coding" in value:  # CodeableConcept
        return [(c.get("system"), c.get("code")) for c in value.get("coding") or []]
    if isinstance(value, dict) and ("code" in value or "system" in value):  # Coding
        return [(value.get("system"), value.get("code"))]
    return []


def _token_match(resource: dict[str, Any], param: SearchParam, raw: str, modifier: str | None) -> bool:
    if "|" in raw:
        system, code = raw.split("|", 1)
        want_system: str | None = system  # "" means: no system
    else:
        want_system, code = None, raw
    hit = False
    for path in param.paths:
        for value in values_at(resource, path):
            for sys_, cod in _codings(value):
                if want_system is not None and (sys_ or "") != want_system:
                    continue
                if code and cod != code:
                    continue
                hit = True
    return not hit if modifier == "not" else hit


def _reference_match(resource: dict[str, Any], param: SearchParam, raw: str) -> bool:
    want = raw.rstrip("/")
    if "/" in want:
        want = "/".join(want.split("/")[-2:])
    elif param.target:
        want = f"{param.target}/{want}"
    for path in param.paths:
        for value in values_at(resource, path):
            if isinstance(value, dict) and value.get("reference") == want:
                return True
    return False


def check_value(param: SearchParam, raw: str, modifier: str | None = None) -> None:
    """Refuse a malformed value or an unsupported modifier whatever the store holds.

    search.html: a server that cannot process a parameter's value returns 400, so a bad date is a
    400 on a type with no resource too, not an empty searchset.

    Raises:
        FhirHttpError: 400, as ``matches`` raises it.
    """
    if modifier not in (None, "not") or (modifier == "not" and param.type != "token"):
        raise FhirHttpError(400, "not-supported", f"Modifier :{modifier} is not supported on {param.name!r}")
    if param.type == "date":
        for alt in raw.split(","):
            text = alt[2:] if alt[:2] in _PREFIXES else alt
            try:
                date_range(text)
            except ValueError as exc:
                raise FhirHttpError(
                    400, "invalid", f"Invalid date for search parameter {param.name!r}: {alt!r}") from exc


def matches(resource: dict[str, Any], param: SearchParam, raw: str, modifier: str | None = None) -> bool:
    """Whether ``resource`` matches ``raw`` (one occurrence of the parameter; commas are OR).

    Raises:
        FhirHttpError: 400 for a malformed value or an unsupported modifier (search.html "Modifiers").
    """
    if modifier not in (None, "not") or (modifier == "not" and param.type != "token"):
        raise FhirHttpError(400, "not-supported", f"Modifier :{modifier} is not supported on {param.name!r}")
    alternatives = raw.split(",")
    if param.type == "token":
        if modifier == "not":
            return all(_token_match(resource, param, alt, "not") for alt in alternatives)
        return any(_token_match(resource, param, alt, None) for alt in alternatives)
    if param.type == "reference":
        return any(_reference_match(resource, param, alt) for alt in alternatives)
    return any(_date_match(resource, param, alt) for alt in alternatives)


def sort_key(resource: dict[str, Any], param: SearchParam) -> tuple[int, Any]:
    """A key that orders resources by ``param`` (missing values last), for ``_sort`` (search.html "Sorting")."""
    if param.type == "date":
        ranges = _target_ranges(resource, param)
        return (0, min(a for a, _ in ranges)) if ranges else (1, datetime.min.replace(tzinfo=UTC))
    for path in param.paths:
        for value in values_at(resource, path):
            codes = _codings(value)
            if codes and codes[0][1]:
                return (0, codes[0][1])
    return (1, "")
