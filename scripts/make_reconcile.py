"""Derive the reconcile task's cases from the packaged extraction fixtures by named transformations.

Usage::

    uv run python scripts/make_reconcile.py [--source DIR] [--out DIR] [--refused DIR] [--check]

``--source`` (default ``fixtures/extraction``: the trimmed Synthea patients and their variants) holds
the Bundles; ``--out`` (default ``fixtures/reconcile``) receives one ``<case id>.json`` per case in
``CASES`` plus ``MANIFEST.json`` (case id, fixture, its SHA-256, transformations). A case file
*references* its Bundle (``fixture.file`` + ``fixture.sha256``), so the extraction fixture stays the
one source of truth; the task refuses a case whose fixture bytes changed. ``--refused`` (default
``fixtures/reconcile_refused``) receives the cases in ``REFUSED``: case files the task must refuse
(``invalid_case``), one per unit and pairing rule, with a ``MANIFEST.json`` giving, per case, the
words its refusal must contain; the build checks that the truth code raises exactly that.

How a report is made: the *faithful* report lists every active coded medication of the record (the
extraction truth, ``clinical.medication_list``) with the record's dosage (``tasks.reconcile_truth.record_dosage``:
count x RxNorm display strength, ``timing.repeat``, ``asNeededBoolean``), stating a frequency only
when the record has one, and "when I need it" when the record says as needed. Then each named
transformation of the case changes it:

* ``omission`` (RxCUI): the medication is left out;
* ``commission`` (catalog RxCUI): a site-catalog drug the record does not hold is added, with its
  strength and a frequency;
* ``dose_change`` (RxCUI, factor): the dose is multiplied (needs a known record dose);
* ``frequency_change`` (RxCUI, frequency): another schedule (needs a known record frequency);
* ``unit_equivalent`` (RxCUI): a dose under 1 mg is said in micrograms (0.125 mg as 125 micrograms;
  0.025 mg/h as 25 micrograms an hour): *not* a discrepancy;
* ``stopped_reported`` (RxCUI of a stopped/completed request): reported as still taken;
* ``brand_name`` (RxCUI, brand): the patient names the brand (``BRANDS``): *not* a discrepancy;
* ``as_needed_flip`` (RxCUI): as-needed use said as regular, or regular as "when needed";
* ``unit_equivalent`` with ``"g"`` (RxCUI): the dose said in grams (220 mg as 0.22 g), and with
  ``"count"``: as a count of tablets (10 mg as one ``{tablet}`` of the 10 mg tablet): *not* a
  discrepancy;
* ``brand_rxcui`` (RxCUI, (RxCUI, name)): the item carries the RxCUI of the same clinical drug under
  another name (the brand's for the record's generic, or the generic's for the record's brand),
  checked to have the same ingredients, strengths and dose form: *not* a discrepancy;
* ``other_strength`` (RxCUI, RxCUI): the item carries the RxCUI of another strength of the record
  drug (same ingredients and dose form) and one unit of it as its dose: one ``dose_mismatch``;
* ``combination_dose`` (RxCUI, ``{"ingredient", "factor"}`` or ``{"count"}``): on a combination
  product, one ingredient's amount multiplied (10 mg of oxycodone against a 5 mg / 325 mg tablet),
  or a count of tablets: a ``dose_mismatch``;
* ``excluded_reported`` (RxCUI of a stopped request that ``Spec.edit`` made a ``plan``, a
  ``doNotPerform`` or another patient's): reported as still taken; a stopped request passes the
  same filters as an active one, so this is a ``commission``;
* ``dose_as_written`` (RxCUI, dose) and ``second_item`` (RxCUI, (RxCUI, name)): the dose exactly as
  given, or a second item for the same record drug (only in ``REFUSED`` cases);
* ``exact``: nothing changes.

The text is written from the structured items by fixed templates (``scripts/reconcile_text.py``;
a case's index picks the opening), so output is deterministic. The expected status of each
transformation (``EFFECT``) is checked against the truth code,
``tasks.reconcile_truth.reconcile_truth``, and the build stops on any disagreement; the case
files hold no statuses (the task derives them at truth time).

``--check`` writes nothing: it rebuilds every case and the manifest in memory, compares them byte
for byte with the committed files, lists stray ``*.json`` files, prints what it checked, and exits 1
on any difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconcile_text import drug_name, freq_text, report_text

from groundeval.clinical.medication_list import medication_truth
from groundeval.errors import DatasetError
from groundeval.tasks.extraction.task import case_id_from_stem
from groundeval.tasks.reconcile.truth import reconcile_truth, record_dosage, request_displays
from groundeval.terminology import Catalog, format_strength, parse_display

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT / "fixtures" / "extraction"
DEFAULT_OUT = ROOT / "fixtures" / "reconcile"
DEFAULT_REFUSED = ROOT / "fixtures" / "reconcile_refused"
MANIFEST = "MANIFEST.json"
JSON = dict[str, Any]

EFFECT = {
    "omission": "omission", "commission": "commission", "dose_change": "dose_mismatch",
    "frequency_change": "dose_mismatch", "unit_equivalent": "matched", "stopped_reported": "stopped_but_taken",
    "brand_name": "matched", "as_needed_flip": "dose_mismatch", "brand_rxcui": "matched",
    "other_strength": "dose_mismatch", "combination_dose": "dose_mismatch", "excluded_reported": "commission",
}
"""Transformation -> the status the truth code must give its target."""

BRANDS: dict[str, str] = {
    "Toprol XL": "metoprolol succinate", "Zocor": "simvastatin", "Zestril": "lisinopril", "Lipitor": "atorvastatin",
    "Prozac": "fluoxetine", "Benadryl": "diphenhydramine", "Allegra": "fexofenadine", "Coumadin": "warfarin",
    "Lanoxin": "digoxin", "Norvasc": "amlodipine", "Plavix": "clopidogrel", "Synthroid": "levothyroxine",
    "Crestor": "rosuvastatin", "Tenormin": "atenolol", "Aleve": "naproxen", "Ultram": "tramadol",
}
"""Brand -> the generic ingredient it names (each brand's US FDA label title, Drugs@FDA /
DailyMed). The brand_name transformation checks that the record drug's ingredient starts with it."""



@dataclass(frozen=True)
class Spec:
    """One case: its id stem, source fixture, transformations ``(kind, rxcui, arg)`` and summary.

    ``refused`` (``REFUSED`` cases only): words the task's refusal of the case must contain.
    ``edit`` (a key of ``EDITS``): a change to the Bundle's stopped requests of the first step's
    RxCUI; the case then carries the changed Bundle inline (``"bundle"``) instead of a reference.
    """

    name: str
    fixture: str
    steps: tuple[tuple[str, str | None, Any], ...]
    summary: str
    refused: str | None = None
    edit: str | None = None


def _t(kind: str, code: str | None = None, arg: Any = None) -> tuple[str, str | None, Any]:
    return (kind, code, arg)


DAILY = {"frequency": 1, "period": 1.0, "period_unit": "d"}
TWICE = {"frequency": 2, "period": 1.0, "period_unit": "d"}
Q4H = {"frequency": 1, "period": 4.0, "period_unit": "h"}

CASES: tuple[Spec, ...] = (
    Spec("exact", "Liz_Conn_", (_t("exact"),), "One medication, reported exactly as the record holds it."),
    Spec("exact", "Jacquelyn628_", (_t("exact"),), "Five medications, reported exactly."),
    Spec("exact", "variant-medref-urn-uuid--Max_Kris", (_t("exact"),), "Exact report; a drug in a bundled Medication."),
    Spec("exact", "variant-branded-and-generic--Ellena683", (_t("exact"),),
         "Exact report; one drug coded branded and generic at once."),
    Spec("no-medication", "Clemente_Kreiger_", (_t("exact"),), "No medication on either side: the answer is []."),
    Spec("no-medication-commission", "Theodore876_", (_t("commission", "310965", "prn"),),
         "No record medication; the patient reports ibuprofen."),
    Spec("no-active-stopped", "Tarra676_", (_t("stopped_reported", "308192", "tid"),),
         "No active medication; a completed amoxicillin course reported as still taken."),
    Spec("no-active-stopped", "Johnie961_", (_t("stopped_reported", "1535362"),),
         "No active medication; a completed fluoride gel reported as still used."),
    Spec("omission-high-alert", "Max_Kris_", (_t("omission", "855332"),), "Warfarin (high-alert) left out."),
    Spec("dose-high-alert", "Trey_Berge_", (_t("dose_change", "855332", 1.5),),
         "Warfarin 7.5 mg reported, 5 mg recorded."),
    Spec("unit-equivalent", "variant-medref-contained--Trey_Berge", (
        _t("unit_equivalent", "197604"), _t("unit_equivalent", "966222")),
        "Digoxin and levothyroxine said in micrograms: no discrepancy."),
    Spec("commission-high-alert", "Beatrice_Aufderhar_", (_t("commission", "855332", "daily"),),
         "Warfarin (high-alert) reported, not in the record."),
    Spec("generic-for-brand", "variant-subject-relative--Beatrice", (_t("brand_name", "315971", "furosemide"),),
         "The record's brand Lasix said as furosemide: matched."),
    Spec("stopped-high-alert", "Moises22_", (_t("stopped_reported", "857005", "prn"),),
         "A completed hydrocodone/acetaminophen (high-alert) reported as still taken."),
    Spec("brand-name", "Delores12_", (_t("brand_name", "866412", "Toprol XL"), _t("brand_name", "312961", "Zocor")),
         "Toprol XL and Zocor for the record's generics: matched."),
    Spec("mixed-brand-omission", "Janene3_", (
        _t("brand_name", "314076", "Zestril"), _t("brand_name", "617312", "Lipitor"), _t("omission", "243670")),
        "Two brand names (matched) and aspirin left out."),
    Spec("frequency-change", "Demarcus108_", (_t("frequency_change", "209387", TWICE),),
         "Tylenol twice a day reported, four times recorded."),
    Spec("mixed-high-alert", "Maximina916_", (
        _t("unit_equivalent", "245134"), _t("dose_change", "1049504", 2.0), _t("commission", "310965", "prn"),
        _t("omission", "314076")),
        "Fentanyl in micrograms an hour (matched), oxycodone doubled, ibuprofen added, lisinopril left out."),
    Spec("mixed-insulin", "Travis723_", (_t("omission", "106892"), _t("stopped_reported", "313782", "prn")),
         "Insulin (high-alert) left out; a stopped acetaminophen reported."),
    Spec("as-needed-high-alert", "Herschel574_", (_t("as_needed_flip", "856987"),),
         "Scheduled hydrocodone/acetaminophen (high-alert) reported as taken when needed."),
    Spec("frequency-high-alert", "Jayson808_", (
        _t("frequency_change", "1049221", Q4H), _t("brand_name", "310385", "Prozac")),
        "Oxycodone/acetaminophen every 4 hours reported, every 6 recorded; Prozac for fluoxetine."),
    Spec("brand-commission", "Gordon377_", (_t("brand_name", "1049630", "Benadryl"), _t("commission", "849574", "prn")),
         "Benadryl for diphenhydramine (matched); naproxen added."),
    Spec("generic-stopped", "Garrett_Thompson_", (
        _t("brand_name", "1153378", "clonazepam"), _t("stopped_reported", "243670", "daily")),
        "Klonopin said as clonazepam (matched); a stopped aspirin reported."),
    Spec("omission-dose", "Bobbie849_", (_t("omission", "141918"), _t("dose_change", "314231", 2.0)),
         "Terfenadine left out; simvastatin 20 mg reported, 10 mg recorded."),
    Spec("stopped-omission", "Emory494_", (_t("stopped_reported", "834102", "tid"), _t("omission", "197378")),
         "A completed penicillin reported; astemizole left out."),
    Spec("as-needed-flip", "Sandee884_", (_t("as_needed_flip", "997488"), _t("brand_name", "997488", "Allegra")),
         "Allegra taken every day, recorded as needed."),
    Spec("stopped-omission", "Stephen_McLaughlin_", (_t("stopped_reported", "313782", "prn"), _t("omission", "106258")),
         "A stopped acetaminophen reported; the hydrocortisone cream left out."),
    Spec("stopped-commission", "Tama137_", (_t("stopped_reported", "1367439"), _t("commission", "314076", "daily")),
         "A completed NuvaRing reported; lisinopril added."),
    Spec("mixed-dose-omission", "variant-medref-relative--Moises22", (
        _t("dose_change", "866924", 2.0), _t("omission", "310325"), _t("brand_name", "859747", "Crestor")),
        "Metoprolol tartrate doubled, ferrous sulfate left out, Crestor for rosuvastatin (matched)."),
    Spec("omission-high-alert", "Demarcus108_", (_t("omission", "351266"), _t("commission", "997501", "daily")),
         "Buprenorphine/naloxone (high-alert) left out; fexofenadine added."),
    Spec("as-needed-flip", "Ellena683_", (_t("as_needed_flip", "835603"), _t("omission", "351109")),
         "Tramadol (high-alert) as needed reported as every day; budesonide left out."),
    Spec("exact", "variant-ndc-first--Janene3", (_t("exact"),), "Exact report; the RxNorm coding is not listed first."),
    Spec("commission-high-alert", "Stephen_McLaughlin_", (_t("commission", "1049221", "prn"),),
         "Oxycodone/acetaminophen (high-alert) reported, not in the record."),
    Spec("unit-grams", "Ellena683_", (_t("unit_equivalent", "849574", "g"),),
         "Naproxen 220 mg said as 0.22 g: no discrepancy."),
    Spec("unit-tablets", "Janene3_", (_t("unit_equivalent", "314076", "count"),),
         "Lisinopril said as one tablet of the record's 10 mg tablet: no discrepancy."),
    Spec("brand-rxcui", "Delores12_", (_t("brand_rxcui", "866412", ("866414", "Toprol XL")),),
         "Toprol XL with the brand's own RxCUI for the record's generic metoprolol succinate: matched."),
    Spec("generic-rxcui", "Demarcus108_", (_t("brand_rxcui", "209387", ("313782", "acetaminophen")),),
         "Acetaminophen with the generic's own RxCUI for the record's Tylenol: matched."),
    Spec("other-strength", "Janene3_", (_t("other_strength", "314076", "311354"),),
         "Lisinopril 5 mg with its own RxCUI for the record's 10 mg: one dose_mismatch, not an omission plus a "
         "commission."),
    Spec("combination-opioid-doubled", "Jayson808_", (
        _t("combination_dose", "1049221", {"ingredient": "oxycodone", "factor": 2}),),
        "Oxycodone 10 mg reported against the record's oxycodone 5 mg / acetaminophen 325 mg tablet: a high-alert "
        "dose_mismatch."),
    Spec("combination-two-tablets", "Herschel574_", (_t("combination_dose", "856987", {"count": 2}),),
         "Two hydrocodone/acetaminophen tablets reported, one recorded: a high-alert dose_mismatch."),
    Spec("refill-latest-dose", "variant-duplicate-refill--Delores12", (_t("exact"),),
         "Two active ferrous sulfate requests; the later one (two tablets) gives the dose, reported as is: matched."),
    Spec("refill-earlier-dose", "variant-duplicate-refill--Delores12", (_t("dose_change", "310325", 0.5),),
         "Two active ferrous sulfate requests; the earlier one's dose reported, the later one rules: dose_mismatch."),
    Spec("stopped-plan", "Tarra676_", (_t("excluded_reported", "308192", "tid"),),
         "A completed amoxicillin request that is only a plan (intent plan), reported as taken: a commission, "
         "since a plan is not an order, stopped or active.", edit="intent-plan"),
    Spec("stopped-do-not-perform", "Moises22_", (_t("excluded_reported", "857005", "prn"),),
         "A completed hydrocodone/acetaminophen request with doNotPerform, reported as taken: a high-alert "
         "commission, since a prohibition never puts a drug in the record.", edit="do-not-perform"),
    Spec("stopped-other-server", "Emory494_", (_t("excluded_reported", "834102", "tid"),),
         "A completed penicillin request whose subject is a patient on another server, reported as taken: a "
         "commission.", edit="subject-other-server"),
    Spec("stopped-brand-and-generic", "Stephen_McLaughlin_", (_t("stopped_reported", "313782", "prn"),),
         "A stopped acetaminophen request coded with both the generic and the Tylenol RxCUI, reported as taken: "
         "one stopped_but_taken drug, either RxCUI right.", edit="brand-coding"),
)

REFUSED: tuple[Spec, ...] = (
    Spec("refused-mcg", "Trey_Berge_", (_t("dose_as_written", "197604", {"value": 125, "unit": "mcg"}),),
         "Digoxin 125 mcg: 'mcg' is not UCUM.", refused="dose 125 'mcg': 'mcg' is not a UCUM code; use 'ug'"),
    Spec("refused-uppercase-mg", "Trey_Berge_", (_t("dose_as_written", "855332", {"value": 5, "unit": "MG"}),),
         "Warfarin 5 MG: UCUM is case-sensitive, 'MG' is a megagauss.",
         refused="dose 5 'MG': 'MG' is legal UCUM, but for megagauss (a magnetic flux density)"),
    Spec("refused-mass-for-rate", "Maximina916_", (_t("dose_as_written", "245134", {"value": 25, "unit": "ug"}),),
         "A fentanyl patch said as 25 ug, a mass, against its 0.025 mg/h strength.",
         refused="is a mass ('ug'), but '72 HR Fentanyl 0.025 MG/HR Transdermal System' is dosed as a mass per time "
                 "(mg/h); say the rate: 'ug/h'"),
    Spec("refused-volume-for-mass", "Janene3_", (_t("dose_as_written", "314076", {"value": 5, "unit": "mL"}),),
         "Lisinopril tablets said as 5 mL.",
         refused="dose 5 'mL' is milliliter (a volume); 'lisinopril 10 MG Oral Tablet' is dosed as a mass (mg)"),
    Spec("refused-combination-without-ingredient", "Jayson808_", (
        _t("dose_as_written", "1049221", {"value": 10, "unit": "mg"}),),
        "10 mg of an oxycodone/acetaminophen tablet, naming neither ingredient.",
        refused="does not say which ingredient it is of; add \"ingredient\""),
    Spec("refused-count-without-strength", "Travis723_", (
        _t("dose_as_written", "106892", {"value": 1, "unit": "{tablet}"}),),
        "Insulin (units/mL) said as one tablet.", refused="counts tablets, but"),
    Spec("refused-capsules-for-tablet", "Janene3_", (
        _t("dose_as_written", "314076", {"value": 1, "unit": "{capsule}"}),),
        "Lisinopril tablets said as one capsule.",
        refused="dose 1 '{capsule}' counts capsules, but 'lisinopril 10 MG Oral Tablet' is a tablet"),
    Spec("refused-rate-for-mass", "Janene3_", (_t("dose_as_written", "314076", {"value": 10, "unit": "mg/d"}),),
         "Lisinopril tablets said as 10 mg a day, a mass per time, against a strength in mg.",
         refused="dose 10 'mg/d' is a mass per time ('mg/d'), but 'lisinopril 10 MG Oral Tablet' is dosed as a "
                 "mass (mg)"),
    Spec("refused-several-problems", "Trey_Berge_", (
        _t("dose_as_written", "855332", {"value": 5, "unit": "MG"}),
        _t("dose_as_written", "197604", {"value": 125, "unit": "mcg"})),
        "Warfarin 5 MG and digoxin 125 mcg: both refusals named at once.",
        refused="2 problems, each to fix: (1) "),
    Spec("refused-two-items-one-drug", "Delores12_", (_t("second_item", "866412", ("866414", "Toprol XL")),),
         "Metoprolol succinate listed twice, once as Toprol XL with the brand's RxCUI.",
         refused="one item per medication"),
)


OTHER_SERVER = "https://fhir.other-hospital.example.org/Patient/"


def _stopped_requests(bundle: JSON, code: str) -> list[JSON]:
    found = [e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == "MedicationRequest"
             and e["resource"].get("status") in ("stopped", "completed", "on-hold")
             and any(c.get("code") == code for c in (e["resource"].get("medicationCodeableConcept") or {}).get(
                 "coding") or [])]
    if not found:
        raise SystemExit(f"no stopped, completed or on-hold request codes RxCUI {code} in medicationCodeableConcept")
    return found


def _edit_intent(bundle: JSON, code: str) -> str:
    for request in _stopped_requests(bundle, code):
        request["intent"] = "plan"
    return f"intent plan on the stopped requests of {code}"


def _edit_do_not_perform(bundle: JSON, code: str) -> str:
    for request in _stopped_requests(bundle, code):
        request["doNotPerform"] = True
    return f"doNotPerform true on the stopped requests of {code}"


def _edit_subject(bundle: JSON, code: str) -> str:
    for request in _stopped_requests(bundle, code):
        ident = request["subject"]["reference"].rsplit(":", 1)[-1]
        request["subject"] = {"reference": OTHER_SERVER + ident}
    return f"subject {OTHER_SERVER}<id> (another server's patient) on the stopped requests of {code}"


def _edit_brand_coding(bundle: JSON, code: str) -> str:
    brand = {"313782": ("209387", "Acetaminophen 325 MG Oral Tablet [Tylenol]")}[code]
    for request in _stopped_requests(bundle, code):
        coding = request["medicationCodeableConcept"]["coding"]
        coding.append({"system": coding[0]["system"], "code": brand[0], "display": brand[1]})
    return f"the brand's RxCUI {brand[0]} ({brand[1]}) added beside {code} on its stopped requests"


EDITS = {"intent-plan": _edit_intent, "do-not-perform": _edit_do_not_perform,
         "subject-other-server": _edit_subject, "brand-coding": _edit_brand_coding}
"""Bundle edits of ``Spec.edit``: each changes the stopped requests of one RxCUI and says how."""


def _schedule(kind: str | None) -> tuple[JSON | None, bool | None]:
    return {"prn": (None, True), "daily": (dict(DAILY), False), "tid": (
        {"frequency": 3, "period": 1.0, "period_unit": "d"}, False), None: (None, None)}[kind]


def _strength_dose(display: str) -> JSON | None:
    entry = parse_display(display)
    if len(entry.ingredients) != 1 or entry.ingredients[0].strength is None or entry.ingredients[0].ucum_unit not in (
        "mg", "ug", "g", "mg/h"
    ):
        return None
    return {"value": entry.ingredients[0].strength, "unit": entry.ingredients[0].ucum_unit}


def _faithful(bundle: JSON) -> list[JSON]:
    active, _ = medication_truth(bundle)
    requests = {r["resource"].get("id"): r["resource"] for r in bundle["entry"]
                if r["resource"]["resourceType"] == "MedicationRequest"}
    items = []
    for med in active:
        if med["kind"] != "coded":
            continue
        code = med["codes"][0]
        display = next((d for c in med["codes"] for d in med["displays"].get(c, [])), code)
        mine = [requests[r] for r in med["requests"] if r in requests]
        latest = max(enumerate(mine), key=lambda p: (str(p[1].get("authoredOn") or ""), p[0]))[1]
        dosage = record_dosage(latest, display)
        freq = dosage["frequency"]
        as_needed = True if dosage["as_needed"] else (False if freq else None)
        items.append({"name": drug_name(display), "rxnorm_code": code, "dose": dosage["dose"], "frequency": freq,
                      "as_needed": as_needed, "_display": display})
    return items


def _inactive_display(bundle: JSON, code: str) -> str:
    display = request_displays(bundle).get(code)
    if display:
        return display
    raise SystemExit(f"RxCUI {code} is on no MedicationRequest of this bundle")


def _apply(spec: Spec, bundle: JSON, catalog: Catalog) -> tuple[list[JSON], list[JSON], list[JSON]]:
    items = _faithful(bundle)
    by_code = {i["rxnorm_code"]: i for i in items}
    extra: list[JSON] = []
    log: list[JSON] = []
    for kind, code, arg in spec.steps:
        note = ""
        item = by_code.get(code or "")
        if kind in ("omission", "dose_change", "frequency_change", "unit_equivalent", "brand_name", "as_needed_flip",
                    "brand_rxcui", "other_strength", "combination_dose", "dose_as_written", "second_item") \
                and item is None:
            raise SystemExit(f"{spec.name}/{spec.fixture}: {kind} needs active RxCUI {code} in the record")
        assert item is not None or kind in ("exact", "commission", "stopped_reported", "excluded_reported")
        if kind == "omission":
            items.remove(item)  # type: ignore[arg-type]
        elif kind == "dose_change":
            if not item["dose"]:
                raise SystemExit(f"{spec.name}: dose_change on {code}, whose record dose is unknown")
            old = item["dose"]["value"]
            item["dose"] = {"value": float(format_strength(old * arg)), "unit": item["dose"]["unit"]}
            note = f"{format_strength(old)} -> {format_strength(item['dose']['value'])} {item['dose']['unit']}"
        elif kind == "frequency_change":
            if not item["frequency"]:
                raise SystemExit(f"{spec.name}: frequency_change on {code}, whose record frequency is unknown")
            note = f"{freq_text(item['frequency'])} -> {freq_text(arg)}"
            item["frequency"] = dict(arg)
        elif kind == "unit_equivalent":
            note = _unit_equivalent(spec, item, code, arg)
        elif kind == "brand_name":
            generic = BRANDS.get(arg)
            ingredients = [i.name for i in parse_display(item["_display"]).ingredients]
            if generic is not None and not any(i.startswith(generic) for i in ingredients):
                raise SystemExit(f"{spec.name}: brand {arg} ({generic}) is not {item['_display']}")
            if generic is None and not any(i.startswith(arg.lower()) for i in ingredients):
                raise SystemExit(f"{spec.name}: {arg} is neither a known brand nor the generic of {item['_display']}")
            note = f"{item['name']} said as {arg}"
            item["name"] = arg
        elif kind == "brand_rxcui":
            note = _brand_rxcui(spec, item, arg, catalog)
        elif kind == "other_strength":
            note = _other_strength(spec, item, arg, catalog)
        elif kind == "combination_dose":
            note = _combination_dose(spec, item, arg)
        elif kind == "dose_as_written":
            item["dose"] = dict(arg)
            note = f"dose as written: {arg}"
        elif kind == "second_item":
            other, name = arg
            items.append({"name": name, "rxnorm_code": other, "dose": None, "frequency": None, "as_needed": None,
                          "_display": item["_display"]})
            note = f"{name} ({other}) listed beside {item['name']}"
        elif kind == "as_needed_flip":
            if item["as_needed"]:
                item["as_needed"], item["frequency"] = False, item["frequency"] or dict(DAILY)
                note = "as needed said as every day"
            else:
                item["as_needed"], item["frequency"] = True, None
                note = "scheduled said as when needed"
        elif kind in ("commission", "stopped_reported", "excluded_reported"):
            assert code is not None
            if kind == "commission":
                entry = catalog.get(code)
                if entry is None:
                    raise SystemExit(f"{spec.name}: commission RxCUI {code} is not in the site catalog")
                display = entry.display
            else:
                display = _inactive_display(bundle, code)
            freq, as_needed = _schedule(arg)
            extra.append({"name": drug_name(display), "rxnorm_code": code, "dose": _strength_dose(display),
                          "frequency": freq, "as_needed": as_needed, "_kind": kind})
            note = display
        log.append({"kind": kind, **({"rxnorm_code": code} if code else {}), **({"note": note} if note else {})})
    return items, extra, log


def _unit_equivalent(spec: Spec, item: JSON, code: str | None, arg: Any) -> str:
    """Say the dose in micrograms (``None``), grams (``"g"``) or as a count of tablets (``"count"``)."""
    dose = item["dose"]
    old = f"{format_strength(dose['value'])} {dose['unit']}" if dose else ""
    if arg == "g":
        if not dose or dose["unit"] != "mg":
            raise SystemExit(f"{spec.name}: unit_equivalent g on {code} needs a dose in mg")
        item["dose"] = {"value": float(format_strength(dose["value"] / 1000)), "unit": "g"}
    elif arg == "count":
        entry = parse_display(item["_display"])
        strength = _strength_dose(item["_display"])
        if not dose or strength is None or strength["unit"] != dose["unit"] or entry.unit_form != "tablet":
            raise SystemExit(f"{spec.name}: unit_equivalent count on {code} needs a single-strength tablet")
        item["dose"] = {"value": float(format_strength(dose["value"] / strength["value"])), "unit": "{tablet}"}
    else:
        if not dose or dose["unit"] not in ("mg", "mg/h") or dose["value"] >= 1:
            raise SystemExit(f"{spec.name}: unit_equivalent on {code} needs a dose under 1 mg (or 1 mg/h)")
        unit = "ug" if dose["unit"] == "mg" else "ug/h"
        item["dose"] = {"value": float(format_strength(dose["value"] * 1000)), "unit": unit}
    return f"{old} as {format_strength(item['dose']['value'])} {item['dose']['unit']}"


def _same(display: str, other: str, strengths: bool) -> bool:
    a, b = parse_display(display), parse_display(other)
    names = sorted(i.name for i in a.ingredients) == sorted(i.name for i in b.ingredients)
    same_strengths = sorted((i.name, i.strength, i.unit) for i in a.ingredients) == sorted(
        (i.name, i.strength, i.unit) for i in b.ingredients)
    return names and (a.dose_form or "").lower() == (b.dose_form or "").lower() and same_strengths == strengths


def _brand_rxcui(spec: Spec, item: JSON, arg: Any, catalog: Catalog) -> str:
    other, name = arg
    entry = catalog.get(other)
    if entry is None or not _same(item["_display"], entry.display, strengths=True):
        raise SystemExit(f"{spec.name}: {other} is not the same clinical drug as {item['_display']}")
    note = f"{item['name']} ({item['rxnorm_code']}) said as {name} with {other}"
    item["rxnorm_code"], item["name"] = other, name
    return note


def _other_strength(spec: Spec, item: JSON, other: str, catalog: Catalog) -> str:
    entry = catalog.get(other)
    if entry is None or not _same(item["_display"], entry.display, strengths=False):
        raise SystemExit(f"{spec.name}: {other} is not another strength of {item['_display']}")
    dose = _strength_dose(entry.display)
    if dose is None:
        raise SystemExit(f"{spec.name}: {entry.display} has no single strength to report")
    note = f"{item['rxnorm_code']} said as {other} ({entry.display}), one unit"
    item["rxnorm_code"], item["dose"] = other, dose
    return note


def _combination_dose(spec: Spec, item: JSON, arg: JSON) -> str:
    entry = parse_display(item["_display"])
    if len(entry.ingredients) < 2:
        raise SystemExit(f"{spec.name}: combination_dose needs a combination product, not {item['_display']}")
    if "count" in arg:
        item["dose"] = {"value": float(arg["count"]), "unit": "{tablet}"}
        return f"{arg['count']} tablets of {item['_display']}"
    ing = next((i for i in entry.ingredients if i.name.split()[0] == arg["ingredient"]), None)
    if ing is None or ing.strength is None or ing.ucum_unit != "mg":
        raise SystemExit(f"{spec.name}: {item['_display']} has no {arg['ingredient']} strength in mg")
    value = float(format_strength(ing.strength * arg["factor"]))
    item["dose"] = {"value": value, "unit": "mg", "ingredient": arg["ingredient"]}
    return f"{arg['ingredient']} {format_strength(ing.strength)} mg -> {format_strength(value)} mg"


def _check_effects(spec: Spec, bundle: JSON, items: list[JSON], catalog: Catalog) -> None:
    truth = reconcile_truth(bundle, items, {e.rxcui: e.display for e in catalog.entries})
    status = {c: e["status"] for e in truth["entries"] for c in e["codes"]}
    changed = set()
    for kind, code, _ in spec.steps:
        if kind == "exact":
            continue
        changed.add(code)
        want = EFFECT[kind]
        if kind == "brand_name" and any(k != "brand_name" and c == code for k, c, _ in spec.steps):
            continue  # a brand name on a drug another step changes: that step's effect rules
        if status.get(code or "") != want:
            raise SystemExit(f"{spec.name}/{spec.fixture}: {kind} on {code} should make it {want}, "
                             f"the truth code says {status.get(code or '')}")
    for entry in truth["entries"]:
        if not set(entry["codes"]) & changed and entry["status"] != "matched":
            raise SystemExit(f"{spec.name}: untouched {entry['rxnorm_code']} is {entry['status']}, expected matched")


def _refusal(spec: Spec, bundle: JSON, items: list[JSON], catalog: Catalog) -> str:
    """The truth code's refusal of a ``REFUSED`` case; stops the build unless it says ``spec.refused``."""
    try:
        reconcile_truth(bundle, items, {e.rxcui: e.display for e in catalog.entries}, f"{spec.name}.json")
    except DatasetError as exc:
        if spec.refused and spec.refused in exc.problem:
            return exc.problem
        raise SystemExit(f"{spec.name}: refused with {exc.problem!r}, which does not say {spec.refused!r}") from None
    raise SystemExit(f"{spec.name}: the truth code accepts this case; it must refuse it ({spec.refused!r})")


def build(source: Path, specs: tuple[Spec, ...] = CASES) -> dict[str, str]:
    """Every case file of ``specs`` (``CASES`` or ``REFUSED``) and its manifest, as file name -> text."""
    if not source.is_dir():
        raise SystemExit(f"--source {source}: the directory does not exist; give the extraction fixtures "
                         "(fixtures/extraction, made by make_fixtures.py and make_variants.py)")
    catalog = Catalog.load()
    files = sorted(p for p in source.glob("*.json") if not p.name.startswith("MANIFEST"))
    out: dict[str, str] = {}
    manifest = []
    for index, spec in enumerate(specs):
        matches = [p for p in files if p.name.startswith(spec.fixture)]
        if len(matches) != 1:
            raise SystemExit(f"--source {source}: {len(matches)} fixtures start with {spec.fixture!r}, need exactly 1")
        path = matches[0]
        raw = path.read_bytes()
        bundle = json.loads(raw)
        edited = EDITS[spec.edit](bundle, str(spec.steps[0][1])) if spec.edit else None
        items, extra, log = _apply(spec, bundle, catalog)
        text = report_text(items, extra, index)
        report_items = [{k: v for k, v in i.items() if not k.startswith("_")} for i in items + extra]
        refusal = _refusal(spec, bundle, report_items, catalog) if spec.refused else None
        if refusal is None:
            _check_effects(spec, bundle, report_items, catalog)
        case_id = f"{spec.name}--{case_id_from_stem(path.stem)}"
        source_ref = {"file": path.name, "sha256": hashlib.sha256(raw).hexdigest()}
        case = {
            "id": case_id, "summary": spec.summary,
            **({"bundle": bundle} if edited else {"fixture": source_ref}),
            "report": {"text": text, "items": report_items},
            "transformations": ([{"kind": "bundle_edit", "note": edited}] if edited else []) + log,
            "generator": "scripts/make_reconcile.py",
        }
        if f"{case_id}.json" in out:
            raise SystemExit(f"two cases are named {case_id}; rename one in CASES")
        out[f"{case_id}.json"] = json.dumps(case, ensure_ascii=False, indent=1) + "\n"
        manifest.append({"case": case_id, "fixture": path.name, "fixture_sha256": source_ref["sha256"],
                         **({"bundle": "inline, edited"} if edited else {}),
                         "transformations": [t["kind"] for t in case["transformations"]],
                         **({"refused": spec.refused} if spec.refused else {})})
    patients = len({m["fixture"].split("--")[-1][:12] for m in manifest})
    out[MANIFEST] = json.dumps({"generator": "scripts/make_reconcile.py", "cases": len(manifest),
                                "patients": patients, "entries": manifest}, indent=1) + "\n"
    return out


def _check(files: dict[str, str], out: Path, source: Path, what: str) -> list[str]:
    problems = []
    for name, text in files.items():
        path = out / name
        if not path.is_file():
            problems.append(f"missing: {path}")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"differs: {path}")
    stray = sorted(p.name for p in out.glob("*.json") if p.name not in files) if out.is_dir() else []
    problems += [f"stray (not made by this script): {out / s}" for s in stray]
    print(f"checked {len(files) - 1} {what} and {MANIFEST} in {out} against {source}: "
          f"{'OK' if not problems else f'{len(problems)} problem(s)'}")
    for problem in problems:
        print(f"  {problem}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Write (or, with --check, verify) the reconcile cases and the refused ones; returns the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="directory of extraction fixtures")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory for the reconcile cases")
    parser.add_argument("--refused", type=Path, default=DEFAULT_REFUSED,
                        help="directory for the cases the task must refuse")
    parser.add_argument("--check", action="store_true", help="verify the committed cases, write nothing")
    args = parser.parse_args(argv)
    outputs = ((build(args.source), args.out, "reconcile cases"),
               (build(args.source, REFUSED), args.refused, "refused reconcile cases (each refusal checked)"))
    if args.check:
        problems = [p for files, out, what in outputs for p in _check(files, out, args.source, what)]
        if problems:
            print("regenerate with: uv run python scripts/make_reconcile.py", file=sys.stderr)
        return 1 if problems else 0
    for files, out, what in outputs:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
        print(f"wrote {len(files) - 1} {what} and {MANIFEST} to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
