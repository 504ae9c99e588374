"""Values per item: a number in a summary is checked against the values of the item it is stated for.

* **Which item.** A value stated with a unit belongs to the closest item named before it in its
  clause (a comma, ``+``, ``;`` or a sentence end cuts it), together with the names joined to that
  item by ``/``, ``-``, ``+``, ``and`` or ``with`` (a combination product: ``hydrocodone/APAP
  5/300 mg``): a drug (an ingredient or brand of any drug of the record) or a
  result (the Observation's names, with the abbreviations of ``synonyms``); a drug's brand
  (``synonyms.brands_of``: ``Toprol XL 100 mg``) names its drug's values. ``lisinopril 20 mg``
  is checked against lisinopril's values only, never against simvastatin's 20 mg. A value with no
  item named before it in its clause (``clopidogrel 75 mg + simva 20 mg``: an abbreviation the
  tables do not hold) is checked against every value of the record.
* **A result among results.** A value stated for a result may be the value of another result
  named in its sentence ("LDL/HDL 133/55 mg/dL", "lipids: LDL 133, HDL 55, total 214 mg/dL"): a
  result's pool holds its sentence's results. Never so for a drug: ``lisinopril 20 mg`` beside
  ``simvastatin 20 mg`` is still checked against lisinopril alone.
* **Equal.** The stated number equals a value of its item rounded to the stated decimals, in the
  same unit, or after converting between UCUM units of one dimension (``terminology.ucum.convert``:
  0.3 mg is 300 mcg). A drug's values include what its concentration makes of them
  (``record.record_values``: 0.3 mg for 0.3 mL of 1 mg/mL, 1 % for 10 mg/mL).
* **As clinicians write them.** Every number of a combination's series (``5/325 mg``,
  ``2 mg/0.5 mg``) is compared with its product's strengths; a dash series of a single-ingredient
  product or a result is a range, no value; ``2.5 mg/3 mL`` is the concentration times the volume; a
  mass dose of a solution the record gives no volume of is not checked (``_solution_without_volume``);
  a combination may be named by its strengths' total (``Augmentin 375 mg`` for 250 mg/125 mg);
  a drug's strength is exact, a result's value rounds (``numbers.rounds_to``); dates and bounds are
  no values (``numbers``); a temperature's ``F``/``C`` after its number converts.
* **A result without a unit.** A number right after a result's name (``LDL 162``, ``A1c: 6.3``,
  ``BP 132/85``; a date is skipped) is that result's value: ``lab_verdict`` compares it with the
  criterion's values, and ``check_values`` with the result's record values, so a wrong number
  fails whether or not it carries a unit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from groundeval.tasks.summary.numbers import bound_before, mask_dates, rounds_to
from groundeval.tasks.summary.reading import read
from groundeval.tasks.summary.synonyms import brands_of, drug_words, spelling, variants
from groundeval.tasks.summary.text import UNIT_ALIASES, stated_values

__all__ = ["UCUM_OF", "check_values", "lab_verdict", "negated_here", "same_value", "wrong_values"]

UCUM_OF: dict[str, str] = {
    "mg": "mg", "mcg": "ug", "g": "g", "kg": "kg", "ml": "mL", "mg/ml": "mg/mL", "mg/g": "mg/g", "unt/ml": "[U]/mL",
    "mg/dl": "mg/dL", "mmol/l": "mmol/L", "g/dl": "g/dL", "%": "%", "mm[hg]": "mm[Hg]", "kg/m2": "kg/m2",
    "cm": "cm", "/min": "/min", "pg/ml": "pg/mL", "ng/ml": "ng/mL", "mg/actuat": "mg/{actuat}", "meq": "meq",
    "ml/min/{1.73_m2}": "mL/min/{1.73_m2}", "mcg/h": "ug/h", "mg/h": "mg/h", "mg/d": "mg/d", "mcg/d": "ug/d",
    "cel": "Cel", "[degf]": "[degF]", "mg/mg": "mg/mg", "g/l": "g/L", "umol/l": "umol/L", "mmol/mol": "mmol/mol",
}
"""The units ``text.stated_values`` reads (its keys) -> UCUM codes, for conversion."""

_AFTER_NAME = re.compile(
    r"^(?:[^0-9\n;.]|\.{2,}){0,24}?(?<![\w<>\u2264\u2265-])(\d+(?:\.\d+)?)(?!\.?\d)(?![+\u2013-])(?!(?:st|nd|rd|th)(?![a-z]))"
    r"(?:\s*/\s*(\d+(?:\.\d+)?)(?!\.?\d))?")
"""A result's number right after its name (dates masked: ``numbers.mask_dates``); a bound is no
value (``BMI 30+``, the name of SNOMED CT 162864005 "Body mass index 30+ - obesity"; ``eGFR >90``),
nor is a range (``A1c 5.7-6.4``), nor an ordinal (``BP, add a 2nd agent``)."""
_DEGREES = re.compile(r"\s*°?\s*([CF])(?![A-Za-z])")
"""A temperature's scale right after its number (``Oral temperature 101.1 F``)."""
_PER_PERIOD = {"mg/h": "mg", "mcg/h": "mcg", "mg/d": "mg", "mcg/d": "mcg", "mg/actuat": "mg"}
"""A strength per hour, per day or per actuation (keys of ``UNIT_ALIASES``) -> the amount of one
period: a patch is named by what it delivers in an hour (``fentanyl 25 mcg`` for 25 mcg/h), a
vaginal ring by a day's, a spray by one actuation's (``nitroglycerin 0.4 mg``)."""
_MASSES = frozenset({"mg", "mcg", "g"})


def _ucum(unit: str) -> str | None:
    return UCUM_OF.get(_key(unit))


def same_value(stated: float, decimals: int, unit: str, value: float, value_unit: str, *, exact: bool = False,
               molar_mass_g_per_mol: float | None = None) -> bool:
    """True when ``value`` (in ``value_unit``) rounds to ``stated`` (``decimals`` places) in ``unit``.

    Units are compared as read (``UNIT_ALIASES``) or converted through UCUM (same dimension only);
    a mass is compared with a strength per hour, day or actuation as one period's amount
    (``_PER_PERIOD``). Rounding: ``numbers.rounds_to``; with ``exact`` (a drug's strength: a
    product is made in its strength, ``amlodipine 3 mg`` is not the 2.5 mg tablet) no rounding,
    only a conversion's floating-point error (relative 1e-9). ``molar_mass_g_per_mol`` (g/mol) lets
    a substance concentration and a mass concentration convert (``glucose 3.7 mmol/L`` is 67 mg/dL).
    """
    key, value_key = _key(unit), _key(value_unit)
    if key in _MASSES and value_key in _PER_PERIOD:  # a patch's 25 mcg is its 25 mcg/h (_PER_PERIOD)
        value_unit = value_key = _PER_PERIOD[value_key]
    source, target = _ucum(value_unit), _ucum(unit)
    if key != value_key:
        if source is None or target is None:
            return False
        from groundeval.terminology.ucum import convert

        converted = convert(value, source, target, molar_mass_g_per_mol=molar_mass_g_per_mol)
        if converted is None:
            return False
        value = converted
    if exact:
        return abs(value - stated) <= 1e-9 * max(1.0, abs(stated))
    return rounds_to(value, stated, decimals)


def _key(unit: str) -> str:
    return UNIT_ALIASES.get(" ".join(unit.lower().split()), unit.lower())


def _item_phrases(record: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    """Phrase -> indexes of the record values it names."""
    out: dict[str, list[int]] = {}
    for i, item in enumerate(record):
        for name in item.get("names") or [item.get("what", "")]:
            drug = item.get("kind") == "drug"
            phrases = variants(str(name), drug=drug) if name else []
            if drug:
                phrases.append(drug_words(str(name)))
            for p in dict.fromkeys(phrases):
                if len(p) > 1:
                    out.setdefault(p, []).append(i)
    products: dict[str, list[int]] = {}
    for i, item in enumerate(record):
        if item.get("kind") == "drug" and item.get("names"):
            products.setdefault(str(item.get("what")), []).append(i)
    for members in products.values():  # a brand names its product's values too (Toprol XL 100 mg, Augmentin)
        names = list(dict.fromkeys(str(n) for i in members for n in record[i]["names"]))
        for brand in dict.fromkeys([*brands_of(names), *(b for n in names for b in brands_of([n]))]):
            held = out.setdefault(brand, [])
            held += [i for i in members if i not in held]
    return out


_RIGHT_AFTER = re.compile(r"[ \t]*(?:of[ \t]+)?\Z", re.IGNORECASE)


def _named_after(summary: str, end: int, mentions: Sequence[Any]) -> list[Any]:
    """The item named right after a value on its line, or ``[]``.

    ``a 0.3 mL epinephrine auto-injector``, ``5 mg of warfarin``: a value written before its name
    is that item's.
    """
    after = [m for m in mentions if m.start >= end and _RIGHT_AFTER.match(summary[end:m.start])]
    return after[:1]


_CLAUSE_CUT = re.compile(r"[.;](\s|$)|,|\+|\n")
_JOINED = re.compile(r"^\s*(?:[/+-]|and|with|&)?\s*$", re.IGNORECASE)


def _owners(summary: str, at: int, mentions: Sequence[Any]) -> list[Any]:
    """The item a value at ``at`` is stated for, as the mentions that name it.

    The last mention before it in its clause, with the names joined to it (``hydrocodone/APAP
    5/300 mg``, ``hydrocodone-acetaminophen 5 mg-300 mg``: a combination product's strengths are
    its ingredients' together); ``[]`` when no item is named
    before the value in its clause (a comma, ``+``, ``;`` or a sentence end cuts it:
    ``clopidogrel 75 mg + simva 20 mg`` does not give 20 mg to clopidogrel).
    """
    before = sorted((m for m in mentions if m.end <= at and not _CLAUSE_CUT.search(summary[m.end:at])),
                    key=lambda m: m.start)
    if not before:
        return []
    chain = [before[-1]]
    for m in reversed(before[:-1]):
        if m.end <= chain[-1].start and _JOINED.match(summary[m.end:chain[-1].start]):
            chain.append(m)
        elif m.start < chain[-1].start:
            break
    return chain


def check_values(summary: str, record: Sequence[Mapping[str, Any]]) -> list[str]:
    """The values ``summary`` states that its item (or, with no item, the record) does not hold.

    Args:
        summary: The summary text.
        record: ``record.record_values`` entries (``value``, ``unit``, ``what``, ``names``).

    Returns:
        The text of each wrong value (``"20 mg"``, ``"LDL 162"``), in text order.
    """
    return [text for text, _ in wrong_values(summary, record)]


def wrong_values(summary: str, record: Sequence[Mapping[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    """``check_values`` with, for each wrong value, the phrases of the item it was stated for.

    Returns:
        ``(text, phrases)`` pairs in text order; ``phrases`` is empty for a value stated for no item.
    """
    index = _item_phrases(record)
    every = read(summary, index)
    # the longest name read at a place names the item ("levothyroxine sodium 75 mcg" is the drug's,
    # not a sodium result's; "LDL cholesterol 133" is LDL's, not total cholesterol's)
    mentions = [m for m in every if not negated_here(summary, m) and not any(
        o.start <= m.start and m.end <= o.end and o.end - o.start > m.end - m.start for o in every)]
    wrong = []
    taken: list[tuple[int, int]] = []
    for stated in stated_values(summary):
        start = int(stated["start"])
        taken.append((start, int(stated["end"])))
        owners = _named_after(summary, int(stated["end"]), mentions) or _owners(summary, start, mentions)
        if owners and not _could_be(stated["unit"], [record[i] for m in owners for i in index[m.phrase]]):
            owners = []  # "creatinine 0.9 mg/dL (eGFR 109 mL/min/1.73m2)", "EpiPen Jr, weight 11 kg": another's
        pool = [record[i] for m in owners for i in index[m.phrase]] if owners else list(record)
        drug = bool(owners) and all(r.get("kind") == "drug" for r in pool)
        if pool and all(r.get("kind") != "drug" for r in pool):  # a result: its sentence's other results too
            pool += [record[i] for m in mentions if m.sentence_start == owners[0].sentence_start
                     for i in index[m.phrase] if record[i].get("kind") != "drug"] if owners else []
        if stated["series"]:
            product = _products(pool, record) if drug else []
            if stated["series"] == "-" and len({r["names"][0] for r in product if r.get("names")}) < 2:
                continue  # a range (A1c 5.7-6.4 %, prednisone 5-10 mg), not a combination's strengths
            pool += product  # a combination's strengths: its product's (oxycodone 5/325 mg)
        if stated["per"] is not None:
            held = any(_per_volume(stated, r) for r in pool)
        else:
            held = any(same_value(stated["value"], stated["decimals"], stated["unit"], float(r["value"]),
                                  str(r["unit"]), exact=r.get("kind") == "drug",
                                  molar_mass_g_per_mol=r.get("molar_mass_g_per_mol")) for r in pool)
            if not held and drug and stated["unit"] in _MASSES and _solution_without_volume(pool, record):
                continue  # a dose of a solution the record gives no volume of: nothing to convert it with
            if not held and drug:  # a combination named by its total ("Augmentin 375 mg")
                held = any(same_value(stated["value"], stated["decimals"], stated["unit"], total, unit, exact=True)
                           for unit, total in _totals(_products(pool, record)))
        if not held and not owners:  # a combination's total named by no item ("insulin 70/30, 100 units/mL")
            held = any(same_value(stated["value"], stated["decimals"], stated["unit"], total, unit, exact=True)
                       for unit, total in _totals([r for r in record if r.get("kind") == "drug"]))
        if not held:
            wrong.append((stated["text"], tuple(m.phrase for m in owners)))
    masked = mask_dates(summary)
    for m in mentions:  # a drug's strength written without a unit ("HCTZ12.5", "metoprolol succ ER50")
        values = [record[i] for i in index[m.phrase]]
        if not values or not all(r.get("kind") == "drug" for r in values):
            continue
        bare = _BARE_STRENGTH.match(masked, m.end)
        if bare is None or any(a <= bare.start(1) < b for a, b in taken) or bound_before(masked, bare.start(1)):
            continue
        product = _products(values, record)
        numbers = [n for n in bare.groups() if n]
        if not all(any(_bare_equal(float(n), r) for r in product) for n in numbers):
            wrong.append((summary[m.start:bare.end()].strip(), (m.phrase,)))
    for m in mentions:  # a result's number written without a unit
        values = [record[i] for i in index[m.phrase]]
        if not values or any(r.get("kind") == "drug" for r in values):
            continue
        found = _number_after(masked, m.end)
        if found is None:
            continue
        at = m.end + found.start(1)
        if any(a <= at < b for a, b in taken):
            continue
        values = values + [record[i] for o in mentions if o.sentence_start == m.sentence_start
                           for i in index[o.phrase] if record[i].get("kind") != "drug"]
        degrees = _DEGREES.match(masked, m.end + found.end())  # a temperature's scale: converted
        numbers = [n for n in found.groups() if n]
        if not all(any(same_value(float(n), len(n.partition(".")[2]), _SCALES[degrees[1]] if degrees
                                  else str(r["unit"]), float(r["value"]), str(r["unit"])) for r in values)
                   for n in numbers):
            wrong.append((summary[m.start:m.end + found.end()].strip(), (m.phrase,)))
    return wrong


_SCALES = {"C": "cel", "F": "[degf]"}
_BARE_STRENGTH = re.compile(
    r"[ \t]*(?:(?:succ\w*|tart\w*|er|xl|sr|cr|la|xr|ir|hcl|sl|po|tab|tabs|oral)\.?[ \t]*){0,2}"
    r"(\d+(?:\.\d+)?)(?:[ \t]*/[ \t]*(\d+(?:\.\d+)?))?(?![\d.]*\d)(?![\w%/\u00b5-])"
    r"(?![ \t]*(?:[a-z\u00b5%]+/|mg|mcg|ug|g|ml|units?|iu|meq|mmol|%|tabs?|tablets?|caps?|capsules?|puffs?|sprays?"
    r"|drops?|x|times|days?|weeks?|wks?|months?|years?|yrs?|hours?|hrs?|h|min|mins|minutes|doses?|mmhg)(?![a-z]))",
    re.IGNORECASE)
"""A number right after a drug's name (glued, ``HCTZ12.5``, or after form words, ``metoprolol succ
ER50``; ``hydrocodone/APAP 5/300``) with no unit after it: the strength in clinical shorthand,
compared with the product's strengths as recorded (exactly). A count, a duration or a number with a
unit is not one (``stated_values`` reads the last)."""


def _bare_equal(number: float, value: Mapping[str, Any]) -> bool:
    """True when a strength written without a unit is ``value``'s, in its unit or the next mass unit.

    ``levothyroxine 75`` is the 0.075 mg tablet (75 mcg), ``digoxin 125`` the 0.125 mg one: a
    clinician writes a strength in the unit it is prescribed in, which for a mass may be the
    record's unit times or over 1,000.
    """
    recorded = float(value["value"])
    scales = (1.0, 1e3, 1e-3) if _key(str(value["unit"])).split("/")[0] in _MASSES else (1.0,)
    return any(abs(number - recorded * k) <= 1e-9 * max(1.0, number) for k in scales)
_NEGATION = re.compile(r"(?<![a-z])(?:no|not|nil|without|denies|denied|negative\s+for|never)(?![a-z])", re.IGNORECASE)
_CLAUSE_START = re.compile(r"[,;.:\n(][^,;.:\n(]*$")


def negated_here(summary: str, mention: Any) -> bool:
    """True when ``mention`` is negated in its own clause (a negation word before it since the last comma).

    ConText's negation reaches across a sentence's commas, as a negated list needs ("Not on A, B
    or C"); but an item whose own clause states its value after a negated one ("BP not controlled
    on HCTZ, and BMI 27.2 kg/m2"; "above goal without an HTN dx, and BMI 28.4") is stated, and its
    number is its value.
    """
    if mention.status != "negated":
        return False
    before = summary[mention.sentence_start:mention.start]
    cut = _CLAUSE_START.search(before)
    own = before[cut.start() + 1:] if cut else before
    return bool(_NEGATION.search(own)) or not _AFTER_NAME.match(mask_dates(summary)[mention.end:])


_ABOUT_ELSE = re.compile(r"(?<![a-z])(?:despite|than|after|before|with|for|over|under|since|in|within|per|every|"
                         r"x|times|across|between|from|to|stage|grade|class|type|step|category|tier"
                         r"|on(?=\s+(?!(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
                         r"|(?:the|this|that|these|those|a|an|his|her|their|its|same|admission|arrival|review|visit"
                         r"|presentation|discharge|recheck|repeat|last|latest|file|record|chart)\b)[a-z]))(?![a-z])")
"""Words between a result's name and a number that make the number another thing's ("BP uncontrolled
despite 3 antihypertensives", "BP higher than 140", "BP - stage 2", "LDL above goal on simva 20": "on" and a word
that is no month, determiner or occasion, "on the same date" dates the value, "BP on file was 142/85" places
it): a count, a bound, a period or a drug's strength, not the value."""


def _number_after(masked: str, end: int) -> re.Match[str] | None:
    """The number right after a result's name ending at ``end`` (``_AFTER_NAME``), or None.

    None for a bound, and for a number the words before it make another thing's (``_ABOUT_ELSE``).
    """
    found = _AFTER_NAME.match(masked[end:])
    if found is None or bound_before(masked, end + found.start(1)):
        return None
    if _ABOUT_ELSE.search(found.string[:found.start(1)].lower()):
        return None
    return found


def _products(pool: Sequence[Mapping[str, Any]], record: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Every value of the drug products ``pool``'s values belong to (all of a combination's ingredients)."""
    products = {r.get("what") for r in pool}
    return [r for r in record if r.get("kind") == "drug" and r.get("what") in products]


_BODY_UNITS = frozenset({"kg", "cm", "kg/m2", "mm[hg]", "/min", "cel", "[degf]", "ml/min/{1.73_m2}"})
"""Units of a measurement of the body (weight, height, BMI, pressure, rate, temperature, eGFR): never a drug's."""


def _could_be(unit: str, values: Sequence[Mapping[str, Any]]) -> bool:
    """True when a value in ``unit`` could be one of ``values``' (the same unit, or one UCUM converts it to).

    A value its item could not hold in any unit is another item's, stated beside it: a result in a
    unit of another dimension, a body measurement beside a drug. A mass may be a dose of a strength
    per volume, period or actuation (``memantine 10 mg`` of 2 mg/mL).
    """
    if all(v.get("kind") == "drug" for v in values) and unit in _BODY_UNITS:
        return False
    target = _ucum(unit)
    if target is None:
        return True  # a unit outside UCUM_OF: nothing to tell by
    from groundeval.terminology.ucum import convert

    for v in values:
        source = _ucum(str(v["unit"]))
        if (source is None or _key(str(v["unit"])) == _key(unit)
                or (_key(unit) in _MASSES and (_key(str(v["unit"])) in _PER_PERIOD or "/" in _key(str(v["unit"]))))
                or convert(1.0, source, target, molar_mass_g_per_mol=v.get("molar_mass_g_per_mol")) is not None):
            return True
    return False


def _totals(product: Sequence[Mapping[str, Any]]) -> list[tuple[str, float]]:
    """``(unit, sum)`` of each combination product's strengths that share a unit (two or more)."""
    sums: dict[tuple[Any, str], dict[str, float]] = {}
    for r in product:  # one strength per ingredient
        ingredient = " ".join(map(str, r.get("names") or []))
        sums.setdefault((r.get("what"), str(r["unit"])), {})[ingredient] = float(r["value"])
    return [(unit, sum(values.values())) for (_, unit), values in sums.items() if len(values) > 1]


def _per_volume(stated: Mapping[str, Any], value: Mapping[str, Any]) -> bool:
    """True when ``value`` (a concentration) holds ``stated``'s amount in its volume (``2.5 mg/3 mL``: 0.83 mg/mL)."""
    source, target = _ucum(str(value["unit"])), _ucum(str(stated["unit"]))
    if source is None or target is None or "/" not in source:
        return False
    from groundeval.terminology.ucum import convert

    concentration = convert(float(value["value"]), source, f"{target}/mL")
    return concentration is not None and rounds_to(concentration * float(stated["per"]), float(stated["value"]),
                                                   int(stated["decimals"]))


def _solution_without_volume(pool: Sequence[Mapping[str, Any]], record: Sequence[Mapping[str, Any]]) -> bool:
    """True when a product of ``pool`` is a concentration (``2 MG/ML``) the record gives no package volume of."""
    product = _products(pool, record)
    return (any(_key(str(r["unit"])).endswith("/ml") for r in product)
            and not any(_key(str(r["unit"])) == "ml" for r in product))


def lab_verdict(criterion: Mapping[str, Any], summary: str, *, strict: bool) -> tuple[bool | None, str]:
    """``(met, evidence)`` for a result criterion: the number(s) right after its name are its values.

    True when a mention of the result's name (``strict``: as written; else with its abbreviations)
    is followed by numbers that round to every criterion value (a stated unit must be the value's,
    or convert to it through UCUM, or be that of one of the value's ``equivalents``: an NGSP HbA1c's
    IFCC mmol/mol); False when numbers follow it but differ; None when no number follows any
    mention (the judge decides).
    """
    names = [str(n) for n in criterion["names"]]
    phrases = [spelling(n) for n in names] if strict else [v for n in names for v in variants(n, drug=False)]
    wanted = [[(float(e["value"]), str(e["unit"]), e.get("molar_mass_g_per_mol"))
               for e in (v, *v.get("equivalents", ()))] for v in criterion["values"]]
    seen_wrong = None
    masked = mask_dates(summary)
    for m in read(summary, phrases):
        if negated_here(summary, m) or (m.status == "hedged" and not m.collective):
            continue  # a list qualified as a whole gives no status, but a result's number is still its value
        found = _number_after(masked, m.end)
        if found is None:
            continue
        numbers = [n for n in found.groups() if n]
        unit_text = summary[m.end + found.end():m.end + found.end() + 16]
        unit = next((s["unit"] for s in stated_values(numbers[-1] + unit_text)[:1] if s["start"] == 0),
                    None)  # a unit is its number's only when it follows it ("BMI 28.4, BP 142/85 mmHg")
        ok = len(numbers) >= len(wanted) and all(
            any(same_value(float(n), len(n.partition(".")[2]), unit or u, v, u, molar_mass_g_per_mol=mass)
                for n in numbers for v, u, mass in ways)
            for ways in wanted)
        if ok:
            return True, m.sentence
        seen_wrong = seen_wrong or m.sentence
    return (False, seen_wrong) if seen_wrong else (None, "")
