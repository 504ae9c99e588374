"""How ``make_reconcile.py`` writes a report's text from its structured items (fixed templates).

A drug is named as a patient would: its RxNorm ingredient names without salts, "ER" for an extended
release product and a form word (spray, patch, cream, ...); a brand-first record display ("Lasix
40mg") by its brand. Doses are said with unit words (mg, micrograms, mg an hour), schedules as
"once a day", "every 6 hours", and as-needed use as "when needed"/"as needed". The case index picks
the opening, in the patient's or a carer's voice, so the output is deterministic.
"""

from __future__ import annotations

from typing import Any

from groundeval.terminology import format_strength, parse_display

JSON = dict[str, Any]

_SALTS = {"hydrochloride", "hydrocholoride", "bitartrate", "calcium", "maleate", "sodium", "potassium"}
_FORM_WORDS = (("spray", "spray"), ("transdermal", "patch"), ("inhalation", "nebuliser"), ("cream", "cream"),
               ("injection", "injection"), ("injectable", "injection"), ("auto-injector", "pen"),
               ("gel", "gel"), ("pack", "pill"), ("solution", "liquid"), ("vaginal", "ring"))
OPENINGS = (("I take", "I'm also still taking", "I also take"), ("I'm on", "I'm also still taking", "I also take"),
            ("My medicines are", "I'm also still taking", "I also take"),
            ("She takes", "She's also still taking", "She also takes"),
            ("He takes", "He's also still taking", "He also takes"))
"""(opening, lead of a still-taken drug, lead of an added drug): patient or carer voice, by case index."""
PRN = ("when needed", "as needed")


def drug_name(display: str) -> str:
    """A patient's name for a drug: ingredient names without salts, 'ER' for extended release."""
    entry = parse_display(display)
    if entry.brand and display.split()[0] == entry.brand:
        return entry.brand  # "Lasix 40mg": the record itself names the brand
    names = [" ".join(w for w in i.name.split() if w not in _SALTS).strip(" ,") for i in entry.ingredients]
    name = " and ".join(n for n in names if n) or display
    if entry.brand == "Humulin":
        name = "Humulin 70/30 insulin"
    if entry.release:
        name += " ER"
    form = (entry.dose_form or "").lower()
    word = next((w for key, w in _FORM_WORDS if key in form), None)
    return f"{name} {word}" if word and word != "pill" else name


_COUNTS = {1: "one", 2: "two", 3: "three", 4: "four"}


def dose_text(dose: JSON | None) -> str:
    if not dose:
        return ""
    value, unit = format_strength(float(dose["value"])), dose["unit"]
    if unit in ("{tablet}", "{capsule}"):
        n = float(dose["value"])
        word = _COUNTS.get(int(n), value) if n.is_integer() else value
        return f"{word} {unit[1:-1]}{'' if n == 1 else 's'}"
    words = {"mg": "mg", "ug": "micrograms", "g": "g", "mg/h": "mg an hour", "ug/h": "micrograms an hour"}
    said = f"{value} {words.get(unit, unit)}"
    return f"with {said} of {dose['ingredient']}" if dose.get("ingredient") else said


def freq_text(freq: JSON | None) -> str:
    if not freq:
        return ""
    n, period, unit = freq["frequency"], float(freq["period"]), freq["period_unit"]
    times = {1: "once", 2: "twice", 3: "three times", 4: "four times"}
    if period == 1 and unit == "d":
        return f"{times.get(n, f'{n} times')} a day"
    span = {"h": "hours", "d": "days", "wk": "weeks"}.get(unit, unit)
    every = f"every {format_strength(period)} {span}"
    return every if n == 1 else f"{times.get(n, f'{n} times')} {every}"


def _phrase(item: JSON, index: int) -> str:
    parts = [item["name"], dose_text(item["dose"]), freq_text(item["frequency"])]
    if item["as_needed"]:
        parts.append(PRN[index % 2])
    return " ".join(p for p in parts if p)


def report_text(items: list[JSON], extra: list[JSON], index: int) -> str:
    if not items and not extra:
        return "I don't take any medicines at the moment."
    opening, still, also = OPENINGS[index % len(OPENINGS)]
    phrases = [_phrase(i, n) for n, i in enumerate(items)]
    text = f"{opening} " + (", ".join(phrases[:-1]) + " and " + phrases[-1] if len(phrases) > 1 else "".join(phrases))
    if not items:
        text = ""
    for n, item in enumerate(extra):
        lead = still if item["_kind"] == "stopped_reported" else also
        if not items and n == 0:
            lead = "I'm still taking" if item["_kind"] == "stopped_reported" else "I take"
        text = (text + ". " if text else "") + f"{lead} {_phrase(item, n)}"
    return text.strip() + "."
