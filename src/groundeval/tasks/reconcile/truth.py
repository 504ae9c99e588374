"""Ground truth of the reconcile task: each medication's status, from the record and the report.

The record side is the extraction task's truth (``clinical.medication_list.medication_truth``: the active
MedicationRequests, RxNorm by system, branded and generic codes of one concept as one drug), so
"active in the record" means exactly what it means there. The report side is the case file's
structured ``report.items`` (``tasks.reconcile.cases.ReportItem``). Statuses:

* ``matched``: active in the record and reported, with no dose, frequency or as-needed difference
  that both sides state;
* ``dose_mismatch``: active and reported, but the dose per administration, the number of
  administrations per day, or as-needed versus scheduled use differ, where both sides state it
  (doses per ingredient, through UCUM: ``tasks.reconcile.doses``). What only one side states is
  not a discrepancy;
* ``omission``: active in the record, not reported;
* ``stopped_but_taken``: reported, not active, but the record holds a ``stopped``, ``completed`` or
  ``on-hold`` request for it that passes the filters an active request passes (an order intent, no
  ``doNotPerform``, the patient as subject: ``clinical.medication_list.medications_with_status``), its RxNorm
  codes one drug as an active request's are (a generic and a brand RxCUI on one request);
* ``commission``: reported, and nowhere in the record (a drug held only by a cancelled, draft,
  entered-in-error or non-order request, a prohibition or another patient's request, of any
  status, counts as not in the record).

**Pairing by clinical concept** (what the prompt tells the agent, whatever RxCUI the case author
wrote for the report item). A report item is the record drug that, first that applies:

1. carries the item's RxCUI (any code of the record concept);
2. is the same *clinical drug* as the item's RxCUI: the same ingredients with the same strengths
   and dose form, brand aside ("Acetaminophen 325 MG Oral Tablet [Tylenol]", RxCUI 209387, is the
   record's "Acetaminophen 325 MG Oral Tablet", 313782): a brand name is not a discrepancy;
3. has the same ingredients and dose form at another strength (lisinopril 5 mg, 311354, for the
   record's lisinopril 10 mg, 314076): the same drug, so a different dose is one
   ``dose_mismatch``, never an omission plus a commission. An item that gives no dose then states
   one unit of its own product (its RxCUI names the strength), as a record request without a
   ``dosageInstruction`` does.

Ingredients are RxNorm's names, salt included ("metoprolol succinate" is not "metoprolol
tartrate"), from the displays (``terminology.rxnorm.parse_display``; the item's display comes from
the patient's Bundle, else the site catalog); a dose form compares only when both displays state
one (rule 1 of the prompt: compare only what both sides state; a display without a form cannot
contradict one with it).
The record drug is looked for among the active drugs first, then, by the same three steps, among
the stopped/completed/on-hold ones (``stopped_but_taken``); an item that pairs with nothing is a
``commission``. An item that could be two record drugs at one step, or two items that are one
record drug, make the case file ambiguous: a ``DatasetError`` (``invalid_case``) naming both.
Every problem of a case file (ambiguities and the dose rules of ``tasks.reconcile.doses``) is
gathered and named in one error, numbered, so one edit fixes the file. A
paired entry accepts the record's RxCUIs and the item's (``codes``).

When one drug has several active requests, the latest ``authoredOn`` (then the last in bundle
order) gives its dosage.

Uncoded and unresolved record medications have no RxCUI to pair on and are left out (listed under
``not_scored``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from groundeval.clinical.medication_list import medication_truth, medications_with_status
from groundeval.errors import DatasetError
from groundeval.fhir.bundle import BundleIndex, entry_resources, rxnorm_codings
from groundeval.tasks.reconcile.doses import (
    Dosage,
    Product,
    compare,
    describe_dosage,
    product,
    record_dosage,
    reported_dosage,
    same_amount,
    unit_amounts,
)
from groundeval.terminology.high_alert import high_alert_class

__all__ = [
    "DISCREPANCIES",
    "STATUSES",
    "Dosage",
    "TruthEntry",
    "describe_dosage",
    "reconcile_truth",
    "record_dosage",
    "request_displays",
    "same_amount",
]

STATUSES = ("matched", "omission", "commission", "dose_mismatch", "stopped_but_taken")
"""Every status an entry can have, in report order."""

DISCREPANCIES = STATUSES[1:]
"""The statuses that are discrepancies (scored by precision/recall/F1)."""

_STOPPED = frozenset({"stopped", "completed", "on-hold"})
PAIRINGS = ("rxcui", "clinical drug", "ingredients")
"""How a report item was paired with a record drug, in the order the steps are tried."""


class TruthEntry(TypedDict):
    """One medication of the case, on either side.

    Keys:
        rxnorm_code: The RxCUI to report (the record's first code; the report's for a commission).
        codes: Every RxCUI accepted for it (branded and generic codes of one record concept, and
            the RxCUI the report item names).
        display: The record's display, else the catalog's or the patient's name for it.
        status: One of ``STATUSES``.
        record: The record's ``Dosage`` (None when not active in the record).
        reported: The report's ``Dosage`` (None when not reported).
        why: Why a ``dose_mismatch`` (``"dose 5 mg vs 7.5 mg"``), else ``""``.
        high_alert: The ISMP class (``terminology.high_alert``), or None.
        pairing: How the report item was paired (one of ``PAIRINGS``), None when not reported or a
            commission.
    """

    rxnorm_code: str
    codes: list[str]
    display: str
    status: str
    record: Dosage | None
    reported: Dosage | None
    why: str
    high_alert: str | None
    pairing: str | None


def request_displays(bundle: Mapping[str, Any]) -> dict[str, str]:
    """RxCUI -> the first display any MedicationRequest (or its Medication) gives it."""
    index = BundleIndex.of(bundle)
    out: dict[str, str] = {}
    for request in entry_resources(bundle, "MedicationRequest"):
        concept = request.get("medicationCodeableConcept")
        if not isinstance(concept, Mapping):
            ref = (request.get("medicationReference") or {}).get("reference")
            target = index.resolve(ref, parent=request) if isinstance(ref, str) else None
            concept = (target or {}).get("code") if target else None
        for coding in rxnorm_codings(concept if isinstance(concept, Mapping) else None):
            if coding.display:
                out.setdefault(coding.code, coding.display)
    return out


def _latest(requests: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    order = {id(r): i for i, r in enumerate(requests)}
    return max(requests, key=lambda r: (str(r.get("authoredOn") or ""), order[id(r)]))


def _same_clinical_drug(a: Product, b: Product) -> bool:
    return _same_drug(a, b) and a.strengths is not None and sorted(a.strengths) == sorted(b.strengths or ())


def _same_drug(a: Product, b: Product) -> bool:
    forms = (a.dose_form or "").casefold(), (b.dose_form or "").casefold()
    return bool(a.ingredients) and set(a.ingredients) == set(b.ingredients) and (
        not all(forms) or forms[0] == forms[1])


def _find(code: str, prod: Product | None, drugs: Sequence[tuple[list[str], str]]) -> tuple[list[int], str] | None:
    """Indices of the drugs (``(codes, display)``) the item is, by the first pairing step that finds any."""
    exact = [i for i, (codes, _) in enumerate(drugs) if code in codes]
    if exact:
        return exact, "rxcui"
    if prod is None:
        return None
    for how, same in (("clinical drug", _same_clinical_drug), ("ingredients", _same_drug)):
        hits = [i for i, (_, display) in enumerate(drugs) if same(prod, product(display))]
        if hits:
            return hits, how
    return None


def _ambiguous(where: str, side: str, names: Sequence[str]) -> str:
    return f"{where} could be any of the {side} drugs {', '.join(names)}: give the RxCUI of the one the patient means"


def _record_display(med: Mapping[str, Any], displays: Mapping[str, str], catalog: Mapping[str, str]) -> str:
    """A medication's display: its requests' own, else any request's, else the catalog's, else its RxCUI."""
    codes: list[str] = list(med["codes"])
    own = [str(d) for c in codes for d in med["displays"].get(c, [])]
    other = [d for c in codes for d in (displays.get(c), catalog.get(c)) if d]
    return (own or other or codes)[0]


class _Problems:
    """Every problem of one case file, gathered so that one refusal names them all."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def dosage(self, item: Mapping[str, Any], prod: Product | None, source: str, where: str) -> Dosage | None:
        """``reported_dosage``, or None with its problem noted."""
        try:
            return reported_dosage(item, prod, source, where)
        except DatasetError as exc:
            self.found.append(exc.problem)
            return None

    def error(self, source: str) -> DatasetError | None:
        if not self.found:
            return None
        if len(self.found) == 1:
            return DatasetError(source, self.found[0])
        listed = "; ".join(f"({n}) {problem}" for n, problem in enumerate(self.found, 1))
        return DatasetError(source, f"{len(self.found)} problems, each to fix: {listed}")


def reconcile_truth(
    bundle: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    catalog_displays: Mapping[str, str] | None = None,
    source: str = "bundle",
) -> dict[str, Any]:
    """Derive every medication's status (see the module docstring for the rule).

    Args:
        bundle: The patient's Bundle (one Patient).
        items: ``report.items`` as dicts (``name``, ``rxnorm_code``, ``dose``, ``frequency``, ``as_needed``).
        catalog_displays: RxCUI -> site catalog display, for drugs the record does not name.
        source: File name for error messages.

    Returns:
        ``{"entries": [TruthEntry...], "not_scored": [{"text", "kind"}...]}``: record medications
        in the extraction truth's order, then report-only ones in report order.

    Raises:
        DatasetError: The bundle does not hold exactly one Patient; or the report breaks a rule: a
            dose breaks a unit rule (``tasks.reconcile.doses``), or the pairing is ambiguous. Every
            problem of the report is named in the one error, numbered.
    """
    active, _ = medication_truth(bundle, source)
    requests = {str(r.get("id") or ""): r for r in entry_resources(bundle, "MedicationRequest")}
    displays = request_displays(bundle)
    catalog = catalog_displays or {}
    record: list[tuple[list[str], str, Dosage]] = []
    not_scored = []
    for med in active:
        if med["kind"] != "coded":
            not_scored.append({"text": med["text"], "kind": med["kind"]})
            continue
        display = next((d for c in med["codes"] for d in med["displays"].get(c, [])), med["codes"][0])
        mine = [requests[r] for r in med["requests"] if r in requests]
        dosage = record_dosage(_latest(mine), display) if mine else Dosage(
            dose=None, amounts=None, frequency=None, as_needed=None)
        record.append((list(med["codes"]), display, dosage))
    stopped = [(list(med["codes"]), _record_display(med, displays, catalog))
               for med in medications_with_status(bundle, _STOPPED, source)
               if med["kind"] == "coded" and not any(c in codes for c in med["codes"] for codes, _, _ in record)]
    problems = _Problems()
    paired: dict[int, tuple[int, str]] = {}  # record drug -> (item, pairing)
    report_only: list[TruthEntry] = []
    taken: dict[str, int] = {}  # stopped RxCUI -> item
    for n, item in enumerate(items):
        code = str(item["rxnorm_code"])
        where = f"report.items[{n}] ({item['name']}, RxCUI {code})"
        own = displays.get(code) or catalog.get(code)
        prod = product(own) if own else None
        hit = _find(code, prod, [(codes, display) for codes, display, _ in record])
        if hit is not None:
            found, how = hit
            if len(found) > 1:
                problems.found.append(_ambiguous(where, "active", [record[i][1] for i in found]))
            elif found[0] in paired:
                first = paired[found[0]][0]
                problems.found.append(f"{where} and report.items[{first}] ({items[first]['name']}) are both the "
                                      f"record's {record[found[0]][1]}: one item per medication")
            else:
                paired[found[0]] = (n, how)
            continue
        said = problems.dosage(item, prod, source, where)
        hit = _find(code, prod, stopped)
        if hit is None:
            display = catalog.get(code) or str(item["name"])
            report_only.append(TruthEntry(
                rxnorm_code=code, codes=[code], display=display, status="commission", record=None, reported=said,
                why="", high_alert=high_alert_class(display), pairing=None))
            continue
        found, how = hit
        if len(found) > 1:
            problems.found.append(_ambiguous(where, "stopped", [stopped[i][1] for i in found]))
            continue
        codes = list(stopped[found[0]][0])
        if (clash := next((taken[c] for c in codes if c in taken), None)) is not None:
            problems.found.append(f"{where} and report.items[{clash}] ({items[clash]['name']}) are both the "
                                  f"record's stopped {stopped[found[0]][1]}: one item per medication")
            continue
        taken.update(dict.fromkeys(codes, n))
        display = stopped[found[0]][1]
        report_only.append(TruthEntry(
            rxnorm_code=codes[0], codes=list(dict.fromkeys([*codes, code])), display=display,
            status="stopped_but_taken", record=None, reported=said, why="", high_alert=high_alert_class(display),
            pairing=how))
    entries: list[TruthEntry] = []
    for i, (codes, display, dosage) in enumerate(record):
        if i not in paired:
            entries.append(TruthEntry(rxnorm_code=codes[0], codes=codes, display=display, status="omission",
                                      record=dosage, reported=None, why="", high_alert=high_alert_class(display),
                                      pairing=None))
            continue
        n, how = paired[i]
        item = items[n]
        code = str(item["rxnorm_code"])
        own = displays.get(code) or catalog.get(code)
        where = f"report.items[{n}] ({item['name']}, RxCUI {code})"
        prod = product(own) if own else product(display)
        reported = problems.dosage(item, prod, source, where)
        if reported is None:
            continue
        if how == "ingredients" and not item.get("dose"):  # another strength, no dose said: one unit of it
            reported["amounts"] = unit_amounts(1.0, prod)
        why = compare(dosage, reported)
        entries.append(TruthEntry(
            rxnorm_code=codes[0], codes=list(dict.fromkeys([*codes, code])), display=display,
            status="dose_mismatch" if why else "matched", record=dosage, reported=reported, why=why,
            high_alert=high_alert_class(display), pairing=how))
    if (error := problems.error(source)) is not None:
        raise error
    return {"entries": entries + report_only, "not_scored": not_scored}
