"""The reconcile task's counterfactual twins (``--groundeval-counterfactual``).

Each perturbation changes the case's record (its Bundle, never the report), for one drug the
report and the record agree on (a ``matched`` entry), chosen among the entries it can change
(seeded from the case file's SHA-256):

* ``record-dose`` (replaces ``matched`` with ``dose_mismatch``): the dose per administration of the
  drug's latest active request is doubled (a request that states none gets two units);
* ``remove-reported`` (replaces ``matched`` with ``commission``): every MedicationRequest of the
  drug leaves the record, so the reported drug is nowhere in it. Only for a drug whose reported
  RxCUI is in the site catalog (the formulary the prompt shows): otherwise the code the truth
  accepts for the commission came from the removed request, and no agent could name it.

The twin's truth is the task's truth (``reconcile.truth.reconcile_truth``) over the changed
Bundle and the same report; a candidate counts only when that truth gives the entry the declared
status and leaves every other entry as it was (the report may state no dose, or the patient may
take another strength of the drug: then the next candidate is tried).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from groundeval.datasets import Case
from groundeval.fhir.bundle import BundleIndex, request_rxcuis
from groundeval.tasks.counterfactual import make_twin, seeded

__all__ = ["PERTURBATIONS", "counterfactual", "observe"]

PERTURBATIONS: tuple[str, ...] = ("record-dose", "remove-reported")
"""The reconcile task's perturbations, in the order their twins are collected."""

_TARGET = {"record-dose": "dose_mismatch", "remove-reported": "commission"}
JSON = dict[str, Any]
Truth = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def observe(probe: Mapping[str, Any], parsed: Any) -> dict[str, str | None]:
    """``{drug: the status the answer gives it}`` for each drug of ``probe["drugs"]``.

    Args:
        probe: A twin's probe: ``{"drugs": [[rxcui, ...], ...]}``, each drug the RxCUIs accepted for it.
        parsed: A parsed answer as the case record keeps it (a list of ``{"rxnorm_code", "status", ...}``),
            or None when there was none.

    Returns:
        Keyed by the drug's RxCUIs joined with ``|``: the status of the answer items naming any of
        them; several different statuses (a hedged answer) joined with ``/`` in sorted order, so
        that they never equal the one status the truth gives; None when no item names the drug.
    """
    items = [i for i in parsed if isinstance(i, dict)] if isinstance(parsed, list) else []
    out: dict[str, str | None] = {}
    for codes in probe.get("drugs", []):
        given = sorted({str(i.get("status")) for i in items if str(i.get("rxnorm_code")) in set(codes)})
        out["|".join(codes)] = "/".join(given) if given else None
    return out


def _double_dose(bundle: JSON, codes: frozenset[str]) -> str | None:
    """Double the dose of the latest active request of the drug; the change, or None when it has none."""
    index = BundleIndex.of(bundle)
    mine = [e["resource"] for e in bundle.get("entry") or [] if isinstance(e, dict)
            and isinstance(e.get("resource"), dict) and e["resource"].get("resourceType") == "MedicationRequest"
            and e["resource"].get("status") == "active" and request_rxcuis(e["resource"], index) & codes]
    if not mine:
        return None
    order = {id(r): i for i, r in enumerate(mine)}
    request = max(mine, key=lambda r: (str(r.get("authoredOn") or ""), order[id(r)]))
    instructions = request.setdefault("dosageInstruction", [])
    if not instructions:
        instructions.append({"sequence": 1})
    first = instructions[0]
    rates = first.setdefault("doseAndRate", [])
    quantity = next((r["doseQuantity"] for r in rates if isinstance(r, dict) and isinstance(r.get("doseQuantity"), dict)
                     and isinstance(r["doseQuantity"].get("value"), int | float)), None)
    if quantity is None:
        rates.insert(0, {"doseQuantity": {"value": 2.0}})
        return f"MedicationRequest/{request.get('id')}: dose (one unit, unstated) -> 2 units"
    before = quantity["value"]
    quantity["value"] = float(before) * 2
    unit = quantity.get("unit") or ""
    return f"MedicationRequest/{request.get('id')}: dose {before} -> {quantity['value']} {unit}".rstrip()


def _remove(bundle: JSON, codes: frozenset[str]) -> str | None:
    """Remove every MedicationRequest of the drug; the change, or None when it has none."""
    index = BundleIndex.of(bundle)
    gone = [e for e in bundle.get("entry") or [] if isinstance(e, dict) and isinstance(e.get("resource"), dict)
            and e["resource"].get("resourceType") == "MedicationRequest"
            and request_rxcuis(e["resource"], index) & codes]
    if not gone:
        return None
    bundle["entry"] = [e for e in bundle["entry"] if all(e is not g for g in gone)]
    ids = ", ".join(str(g["resource"].get("id")) for g in gone)
    return f"removed {len(gone)} MedicationRequest(s) of RxCUI {'/'.join(sorted(codes))} from the record ({ids})"


def counterfactual(case: Case, kind: str, truth: Truth, formulary: frozenset[str] = frozenset()) -> Case | None:
    """The twin of ``case`` made by perturbation ``kind`` (``PERTURBATIONS``), or None when no entry fits.

    Args:
        case: A loaded reconcile case (``data``: ``bundle``, ``report``, ``items``, ``bundle_file``).
        kind: One of ``PERTURBATIONS``.
        truth: The task's truth over a case's data (``{"entries": [...], ...}``).
        formulary: The RxCUIs of the site catalog (``remove-reported`` needs the commission's code among them).

    Raises:
        ValueError: ``kind`` is not one of ``PERTURBATIONS``.
    """
    if kind not in PERTURBATIONS:
        raise ValueError(f"unknown reconcile perturbation {kind!r}; known: {', '.join(PERTURBATIONS)}")
    before = truth(case.data)["entries"]
    matched = [e for e in before if e["status"] == "matched"]
    seeded(case, kind).shuffle(matched)
    for entry in matched:
        codes = frozenset(entry["codes"])
        bundle = copy.deepcopy(case.data["bundle"])
        change = _double_dose(bundle, codes) if kind == "record-dose" else _remove(bundle, codes)
        if change is None:
            continue
        data = {**case.data, "bundle": bundle}
        after = truth(data)["entries"]
        if not _moved(before, after, codes, _TARGET[kind]):
            continue
        if kind == "remove-reported" and not any(set(e["codes"]) & formulary for e in after if set(e["codes"]) & codes):
            continue
        key = "|".join(entry["codes"])
        return make_twin(
            case, kind, data, effect="replaces", change=f"{entry['display']}: {change}",
            probe={"drugs": [entry["codes"]]}, original={key: "matched"}, twin={key: _TARGET[kind]},
        )
    return None


def _moved(before: list[Any], after: list[Any], codes: frozenset[str], status: str) -> bool:
    """True when the entry of ``codes`` became ``status`` and every other entry is as it was."""
    def rest(entries: list[Any]) -> list[tuple[tuple[str, ...], str]]:
        return sorted((tuple(e["codes"]), e["status"]) for e in entries if not set(e["codes"]) & codes)

    changed = [e for e in after if set(e["codes"]) & codes]
    return len(changed) == 1 and changed[0]["status"] == status and rest(before) == rest(after)
