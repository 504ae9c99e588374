"""Rule-based labs agents (no model): ``baseline-labs``, the honest floor, and ``naive-labs``, a negative control.

Both read only what any agent gets: the Bundle JSON in the user prompt. They read it, and the
packaged threshold table (``lab_thresholds.json``: reference data every reader of the guidelines
shares, like the site catalog), with their own code, never the task's truth, loader or UCUM
helpers (``groundeval.tasks``, ``groundeval.terminology``; a test keeps that wall), implementing
the rules the prompt states:

* results: Observations with the test's LOINC code (system ``http://loinc.org``) and status
  ``final``, ``amended`` or ``corrected``, with a numeric value (both components for blood pressure);
* order: effective date (``effectiveDateTime``/``effectiveInstant``/``effectivePeriod.start``), then
  time of day (a date alone first), then ``issued``, then position in the Bundle;
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


def _moment(text: object) -> float:
    if not isinstance(text, str) or "T" not in text:
        return float("-inf")
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return float("-inf")
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _has_code(concept: object, code: str) -> bool:
    return isinstance(concept, dict) and any(
        c.get("system") == _LOINC and c.get("code") == code for c in concept.get("coding") or [])


def _number(quantity: object) -> tuple[float, str] | None:
    if not isinstance(quantity, dict):
        return None
    value = quantity.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value), str(quantity.get("code") or quantity.get("unit") or "")


def _parts(test: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """What is classified: the test itself, or its components."""
    return list(test.get("components") or [test])


def _readings(bundle: Mapping[str, Any], test: Mapping[str, Any]) -> list[JSON]:
    """The test's counted results, oldest first: ``{"day", "values" (as recorded), "unit", "in_unit", "resource"}``."""
    found = []
    for index, entry in enumerate(bundle.get("entry") or []):
        res = entry.get("resource") if isinstance(entry, dict) else None
        if not isinstance(res, dict) or res.get("resourceType") != "Observation":
            continue
        if not _has_code(res.get("code"), test["loinc"]) or res.get("status") not in _COUNTED:
            continue
        when = res.get("effectiveDateTime") or res.get("effectiveInstant") or (res.get("effectivePeriod") or {}).get(
            "start")
        if not isinstance(when, str):
            continue
        values, units = {}, set()
        for part in _parts(test):
            holder = res if part is test else next(
                (c for c in res.get("component") or [] if _has_code(c.get("code"), part["loinc"])), {})
            number = _number(holder.get("valueQuantity"))
            if number is None:
                break
            values[part["loinc"]] = number[0]
            units.add(number[1])
        if len(values) != len(_parts(test)) or len(units) != 1:
            continue
        unit = units.pop()
        in_unit = {code: _convert(v, unit, test) for code, v in values.items()}
        if any(v is None for v in in_unit.values()):
            continue
        key = (when[:10], _moment(when), _moment(res.get("issued")), index)
        found.append({"key": key, "day": when[:10], "values": values, "unit": unit, "in_unit": in_unit,
                      "resource": res})
    return sorted(found, key=lambda r: r["key"])


def _band(categories: list[Mapping[str, Any]], value: float) -> str:
    for band in categories:
        low, high = band.get("low"), band.get("high")
        if (low is None or value >= low) and (high is None or value < high):
            return str(band["name"])
    raise AgentError(f"the threshold table has no category for {value}")


def _beyond(limit: Mapping[str, Any] | None, value: float) -> bool:
    if not limit:
        return False
    return ((limit.get("below") is not None and value < limit["below"])
            or (limit.get("at_or_below") is not None and value <= limit["at_or_below"])
            or (limit.get("above") is not None and value > limit["above"])
            or (limit.get("at_or_above") is not None and value >= limit["at_or_above"]))


def _lab_range(res: Mapping[str, Any], test: Mapping[str, Any], value: float) -> str | None:
    for item in res.get("referenceRange") or []:
        kind = item.get("type")
        if kind is not None and not any((c.get("system"), c.get("code")) == _NORMAL_RANGE
                                        for c in kind.get("coding") or []):
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
        return {"loinc": test["loinc"], "value": None, "unit": None, "date": None, "category": "no_result",
                "direction": None, "critical": False}
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
        found = [_band(p["categories"], latest["in_unit"][p["loinc"]]) for p in parts]
        category = max(found, key=test["category_order"].index) if panel else found[0]
    trends = None if previous is None else {
        p["loinc"]: _trend(latest["in_unit"][p["loinc"]], previous["in_unit"][p["loinc"]], test["tolerance"])
        for p in parts}
    critical = adult and any(_beyond(p.get("critical"), latest["in_unit"][p["loinc"]]) for p in parts)
    return {
        "loinc": test["loinc"],
        "value": dict(latest["values"]) if panel else latest["values"][test["loinc"]],
        "unit": latest["unit"], "date": latest["day"], "category": category,
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
    patient: JSON = next((e["resource"] for e in bundle.get("entry") or []
                    if isinstance(e, dict) and (e.get("resource") or {}).get("resourceType") == "Patient"), {})
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

    name = "baseline-labs"
    tasks: frozenset[str] = frozenset({"labs"})
    model: str | None = None
    earliest = False

    def __init__(self, config: AgentConfig | None = None) -> None:
        del config  # nothing to configure

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the JSON answer; raises ``AgentError`` when the prompt holds no Bundle."""
        return AgentResult(text=json.dumps(labs_answer(request, earliest=self.earliest), ensure_ascii=False))


class NaiveLabsAgent(BaselineLabsAgent):
    """Negative control: the baseline's reading, but each test's earliest result instead of its latest."""

    name = "naive-labs"
    earliest = True
