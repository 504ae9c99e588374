"""Rule-based labs agents (no model): ``baseline-labs``, the honest floor, and ``naive-labs``, a negative control.

Both read only what any agent gets: the Bundle JSON in the user prompt. They read it, and the
packaged threshold table (``lab_thresholds.json``: reference data every reader of the guidelines
shares, like the site catalog), with their own code, never the task's truth, loader or UCUM
helpers (``groundeval.tasks``, ``groundeval.terminology``; a test keeps that wall), implementing
the rules the prompt states:

* results: Observations with the test's LOINC code (system ``http://loinc.org``) and status
  ``final``, ``amended`` or ``corrected``, with a numeric value and no ``comparator`` (a bound is
  not a value); blood pressure from a 85354-9 panel or from separate 8480-6/8462-4 Observations
  taken at the same instant, and a reading with one component only when that component alone is
  beyond its critical limit (it then decides the category and the crisis);
* order: the effective instant (``effectiveDateTime``/``effectiveInstant``/``effectivePeriod.start``
  with its UTC offset; a date alone is the start of that day in UTC and comes before a time at
  that instant), then ``issued``, then position in the Bundle;
* units: the few conversions the table's units need, written out here (mmol/L <-> mg/dL through the
  table's molar mass, meq/L = mmol/L, mL/min = mL/min/{1.73_m2});
* category: the Observation's own referenceRange first (low/normal/high, inclusive), else
  ``not_applicable`` before the table's adult age, else the table's band ``[low, high)``; blood
  pressure the higher of its components' categories;
* direction against the previous result with the table's tolerance; critical by the table's limits.

``baseline-labs`` should pass every packaged case; where it does not, it or the truth has a bug
worth a look. ``naive-labs`` does the same but reports each test's *earliest* counted result (and
the direction from it to the next one): it passes only patients with at most one result per test.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.agents.baselines import no_model_calls
from groundeval.datasets import default_data_dir
from groundeval.errors import AgentError

__all__ = ["BaselineLabsAgent", "NaiveLabsAgent", "labs_answer"]

_LOINC = "http://loinc.org"
_COUNTED = frozenset({"final", "amended", "corrected"})
_NORMAL_RANGE = ("http://terminology.hl7.org/CodeSystem/referencerange-meaning", "normal")
_SAME = frozenset({frozenset({"meq/L", "mmol/L"}), frozenset({"mL/min", "mL/min/{1.73_m2}"})})
JSON = dict[str, Any]


@functools.cache
def _table() -> JSON:
    """The packaged threshold table, read with ``json`` (not with the task's loader)."""
    path = default_data_dir("terminology") / "lab_thresholds.json"
    table: JSON = json.loads(path.read_text(encoding="utf-8"))
    return table


def _convert(value: float, unit: str, test: Mapping[str, Any]) -> float | None:
    target = test["unit"]
    if unit == target or frozenset({unit, target}) in _SAME:
        return value
    molar = test.get("molar_mass_g_per_mol")
    if molar and (unit, target) == ("mmol/L", "mg/dL"):
        return value * float(molar) / 10
    if molar and (unit, target) == ("mg/dL", "mmol/L"):
        return value * 10 / float(molar)
    return None


def _moment(text: object) -> tuple[float, int]:
    """``(seconds since 1970 UTC, 1 with a time else 0)``; a date alone is the start of its day (month, year) in UTC."""
    if not isinstance(text, str) or not text:
        return float("-inf"), 0
    padded = text if "T" in text else (text + "-01-01")[:10]
    try:
        when = datetime.fromisoformat(padded.replace("Z", "+00:00"))
    except ValueError:
        return float("-inf"), 0
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp(), int("T" in text)


def _has_code(concept: object, code: str) -> bool:
    return isinstance(concept, dict) and any(
        c.get("system") == _LOINC and c.get("code") == code for c in concept.get("coding") or []
    )


def _number(quantity: object) -> tuple[float, str] | None:
    if not isinstance(quantity, dict):
        return None
    value = quantity.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or quantity.get("comparator"):
        return None
    return float(value), str(quantity.get("code") or quantity.get("unit") or "")


def _parts(test: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """What is classified: the test itself, or its components."""
    return list(test.get("components") or [test])


def _when(res: Mapping[str, Any]) -> str | None:
    when = (
        res.get("effectiveDateTime") or res.get("effectiveInstant") or (res.get("effectivePeriod") or {}).get("start")
    )
    return when if isinstance(when, str) else None


def _reading(test: Mapping[str, Any], found: list[tuple[int, JSON, JSON]]) -> JSON | None:
    """One reading from ``(index, resource, values as recorded)`` parts, or None when it decides nothing."""
    values = {code: v for _, _, part in found for code, v in part.items()}
    units = {u for _, _, part in found for _, u in part.values()}
    if not values or len(units) != 1:
        return None
    unit = units.pop()
    converted = {code: _convert(v, unit, test) for code, (v, _) in values.items()}
    in_unit = {code: v for code, v in converted.items() if v is not None}
    if len(in_unit) != len(converted):
        return None
    parts = _parts(test)
    if len(values) < len(parts) and not any(
        _beyond(p.get("critical"), in_unit[p["loinc"]]) for p in parts if p["loinc"] in values
    ):
        return None  # one component alone decides the category and the crisis only beyond its critical limit
    when = str(_when(found[0][1]))
    issued = max(_moment(res.get("issued"))[0] for _, res, _ in found)
    return {
        "key": (*_moment(when), issued, min(i for i, _, _ in found)),
        "day": when[:10],
        "values": {c: v for c, (v, _) in values.items()},
        "unit": unit,
        "in_unit": in_unit,
        "resource": found[0][1],
    }


def _readings(bundle: Mapping[str, Any], test: Mapping[str, Any]) -> list[JSON]:
    """The test's counted results, oldest first: ``{"day", "values" (as recorded), "unit", "in_unit", "resource"}``."""
    found: list[JSON] = []
    separate: dict[tuple[float, int], list[tuple[int, JSON, JSON]]] = {}
    parts = _parts(test)
    for index, entry in enumerate(bundle.get("entry") or []):
        res = entry.get("resource") if isinstance(entry, dict) else None
        if not isinstance(res, dict) or res.get("resourceType") != "Observation" or res.get("status") not in _COUNTED:
            continue
        if _when(res) is None:
            continue
        if _has_code(res.get("code"), test["loinc"]):
            values = {}
            for part in parts:
                holder = (
                    res
                    if part is test
                    else next((c for c in res.get("component") or [] if _has_code(c.get("code"), part["loinc"])), {})
                )
                number = _number(holder.get("valueQuantity"))
                if number is not None:
                    values[part["loinc"]] = number
            reading = _reading(test, [(index, res, values)])
            if reading is not None:
                found.append(reading)
            continue
        for part in parts if _panel(test) else []:
            number = _number(res.get("valueQuantity"))
            if _has_code(res.get("code"), part["loinc"]) and number is not None:
                separate.setdefault(_moment(_when(res)), []).append((index, res, {part["loinc"]: number}))
    for group in separate.values():
        reading = _reading(test, group)
        if reading is not None:
            found.append(reading)
    return sorted(found, key=lambda r: r["key"])


def _panel(test: Mapping[str, Any]) -> bool:
    """True for a panel read from its components (blood pressure)."""
    return "components" in test


def _band(categories: list[Mapping[str, Any]], value: float) -> str:
    for band in categories:
        low, high = band.get("low"), band.get("high")
        if (low is None or value >= low) and (high is None or value < high):
            return str(band["name"])
    raise AgentError(f"the threshold table has no category for {value}")


def _beyond(limit: Mapping[str, Any] | None, value: float) -> bool:
    if not limit:
        return False
    return (
        (limit.get("below") is not None and value < limit["below"])
        or (limit.get("at_or_below") is not None and value <= limit["at_or_below"])
        or (limit.get("above") is not None and value > limit["above"])
        or (limit.get("at_or_above") is not None and value >= limit["at_or_above"])
    )


def _lab_range(res: Mapping[str, Any], test: Mapping[str, Any], value: float) -> str | None:
    for item in res.get("referenceRange") or []:
        kind = item.get("type")
        if kind is not None and not any(
            (c.get("system"), c.get("code")) == _NORMAL_RANGE for c in kind.get("coding") or []
        ):
            continue
        low, high = (_number(item.get(k)) for k in ("low", "high"))
        if low is None and high is None:
            continue
        lo = None if low is None else _convert(low[0], low[1], test)
        hi = None if high is None else _convert(high[0], high[1], test)
        return "low" if lo is not None and value < lo else "high" if hi is not None and value > hi else "normal"
    return None


def _adult(birth: object, day: str, years: int) -> bool:
    try:
        born, on = date.fromisoformat(str(birth)[:10]), date.fromisoformat(day[:10])
    except ValueError:
        return True
    return (on.year - born.year - ((on.month, on.day) < (born.month, born.day))) >= years


def _trend(latest: float, previous: float, tolerance: float) -> str:
    change = round(latest - previous, 9)
    return "up" if change >= tolerance else "down" if change <= -tolerance else "stable"


def _entry(test: Mapping[str, Any], readings: list[JSON], birth: object, adult_age: int) -> JSON:
    if not readings:
        return {
            "loinc": test["loinc"],
            "value": None,
            "unit": None,
            "date": None,
            "category": "no_result",
            "direction": None,
            "critical": False,
        }
    latest, previous = readings[-1], (readings[-2] if len(readings) > 1 else None)
    panel = "components" in test
    parts = _parts(test)
    adult = _adult(birth, latest["day"], adult_age)
    lab = None if panel else _lab_range(latest["resource"], test, latest["in_unit"][test["loinc"]])
    if lab is not None:
        category = lab
    elif not adult:
        category = "not_applicable"
    else:
        found = [
            _band(p["categories"], latest["in_unit"][p["loinc"]]) for p in parts if p["loinc"] in latest["in_unit"]
        ]
        category = max(found, key=test["category_order"].index) if panel else found[0]
    trends = (
        None
        if previous is None
        else {
            p["loinc"]: _trend(latest["in_unit"][p["loinc"]], previous["in_unit"][p["loinc"]], test["tolerance"])
            if p["loinc"] in previous["in_unit"]
            else None
            for p in parts
            if p["loinc"] in latest["in_unit"]
        }
    )
    critical = adult and any(
        _beyond(p.get("critical"), latest["in_unit"][p["loinc"]]) for p in parts if p["loinc"] in latest["in_unit"]
    )
    return {
        "loinc": test["loinc"],
        "value": dict(latest["values"]) if panel else latest["values"][test["loinc"]],
        "unit": latest["unit"],
        "date": latest["day"],
        "category": category,
        "direction": trends if panel or trends is None else trends[test["loinc"]],
        "critical": critical,
    }


def _bundle(request: AgentRequest) -> JSON:
    text = request.prompt.user
    start = text.find("{")
    if start == -1:
        raise AgentError(f"{request.case_id}: the prompt holds no JSON Bundle")
    try:
        bundle, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError as exc:
        raise AgentError(f"{request.case_id}: cannot read the Bundle in the prompt: {exc}") from exc
    if not isinstance(bundle, dict):
        raise AgentError(f"{request.case_id}: the prompt's JSON is not a Bundle")
    return bundle


def labs_answer(request: AgentRequest, *, earliest: bool = False) -> list[JSON]:
    """The answer list for one request (each test's earliest result when ``earliest``).

    Raises:
        AgentError: The user prompt holds no readable Bundle.
    """
    bundle = _bundle(request)
    table = _table()
    patient: JSON = next(
        (
            e["resource"]
            for e in bundle.get("entry") or []
            if isinstance(e, dict) and (e.get("resource") or {}).get("resourceType") == "Patient"
        ),
        {},
    )
    answer = []
    for test in table["tests"]:
        readings = _readings(bundle, test)
        if earliest:
            readings.reverse()
        answer.append(_entry(test, readings, patient.get("birthDate"), table["population"]["min_age_years"]))
    return answer


class BaselineLabsAgent:
    """Reads each test's latest result and interprets it with the rules the prompt states (no model)."""

    thread_safe = True
    """Safe to call from several threads at once."""

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    name = "baseline-labs"
    tasks: frozenset[str] = frozenset({"labs"})
    model: str | None = None
    earliest = False

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config  # nothing to configure

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the JSON answer; raises ``AgentError`` when the prompt holds no Bundle."""
        answer = labs_answer(request, earliest=self.earliest)
        return AgentResult(usage=no_model_calls(), text=json.dumps(answer, ensure_ascii=False))


class NaiveLabsAgent(BaselineLabsAgent):
    """Negative control: the baseline's reading, but each test's earliest result instead of its latest."""

    name = "naive-labs"
    earliest = True
