"""High-alert medications: the ISMP acute-care list as RxNorm ingredient classes, in one table.

Source: Institute for Safe Medication Practices (ISMP), *ISMP List of High-Alert Medications in
Acute Care Settings*, 2024 edition (update published in ISMP Medication Safety Alert! Acute Care,
11 January 2024, volume 29, issue 1),
https://www.ismp.org/recommendations/high-alert-medications-acute-list. "High-alert medications
are drugs that bear a heightened risk of causing significant patient harm when they are used in
error." Admission reconciliation happens in acute care, hence the acute-care list (not the
community/ambulatory one).

The list names classes ("antithrombotic agents", "insulin, subcutaneous and IV", "opioids,
including IV, oral, transdermal") and specific drugs, with examples. Here each class is the set
of RxNorm ingredient names (lower case, as RxNorm writes them in clinical drug names) that the
class covers, optionally limited to a route: a class the list restricts to IV use matches only a
parenteral dose form that is not an auto-injector (an RxNorm dose form does not say IV versus IM,
so "Injection", "Injectable Solution" and "Prefilled Syringe" count as parenteral; "Auto-Injector"
is the IM/subcutaneous epinephrine pen and does not). Ingredient names come from the drug's RxNorm
display, parsed by ``terminology.rxnorm.parse_display``; an ingredient matches when its name is a
listed name or starts with one followed by a space (``"oxycodone hydrochloride"`` is
``oxycodone``, ``"insulin isophane, human"`` is ``insulin``).

What this means for the Synthea data: warfarin, alteplase (thrombolytic), Humulin (insulin),
oxycodone, hydrocodone (alone and with acetaminophen), fentanyl patches, tramadol and
buprenorphine (opioids) are high-alert; oral digoxin, oral metoprolol, clopidogrel, prasugrel
and aspirin are not (the list names digoxin and metoprolol only IV; oral P2Y12 and aspirin are
not on it); the epinephrine auto-injector is not (adrenergic agonists are listed IV only).
"""

from __future__ import annotations

from dataclasses import dataclass

from groundeval.terminology.rxnorm import parse_display

__all__ = ["HIGH_ALERT_CLASSES", "ISMP_SOURCE", "HighAlertClass", "high_alert_class"]

ISMP_SOURCE = (
    "ISMP List of High-Alert Medications in Acute Care Settings, 2024 edition (ISMP Medication Safety "
    "Alert! Acute Care, 11 January 2024), https://www.ismp.org/recommendations/high-alert-medications-acute-list"
)
"""The citation recorded with every high-alert verdict."""


@dataclass(frozen=True, slots=True)
class HighAlertClass:
    """One class (or specific drug) of the ISMP list.

    Attributes:
        name: The list's wording, e.g. ``"antithrombotic agents: anticoagulants"``.
        ingredients: RxNorm ingredient names (lower case) the class covers.
        parenteral_only: True when the list limits the class to IV use (see the module docstring).
    """

    name: str
    ingredients: frozenset[str]
    parenteral_only: bool = False


def _c(name: str, ingredients: str, *, parenteral_only: bool = False) -> HighAlertClass:
    return HighAlertClass(name, frozenset(i.strip() for i in ingredients.split(",")), parenteral_only)


HIGH_ALERT_CLASSES: tuple[HighAlertClass, ...] = (
    _c("antithrombotic agents: anticoagulants", "warfarin, heparin, enoxaparin, dalteparin, tinzaparin"),
    _c("antithrombotic agents: direct oral anticoagulants and factor Xa inhibitors",
       "dabigatran, rivaroxaban, apixaban, edoxaban, betrixaban, fondaparinux"),
    _c("antithrombotic agents: direct thrombin inhibitors", "argatroban, bivalirudin, dabigatran"),
    _c("antithrombotic agents: glycoprotein IIb/IIIa inhibitors", "eptifibatide, tirofiban, abciximab"),
    _c("antithrombotic agents: thrombolytics", "alteplase, reteplase, tenecteplase"),
    _c("insulin, subcutaneous and IV", "insulin"),
    _c("opioids, IV, oral and transdermal",
       "morphine, hydromorphone, oxycodone, oxymorphone, hydrocodone, fentanyl, sufentanil, remifentanil, "
       "methadone, meperidine, codeine, tramadol, tapentadol, buprenorphine, levorphanol, opium"),
    _c("sulfonylurea hypoglycemics, oral", "chlorpropamide, glimepiride, glyburide, glipizide, tolbutamide"),
    _c("methotrexate, oral, nononcologic use", "methotrexate"),
    _c("adrenergic agonists, IV", "epinephrine, phenylephrine, norepinephrine", parenteral_only=True),
    _c("adrenergic antagonists, IV", "propranolol, metoprolol, labetalol, esmolol", parenteral_only=True),
    _c("antiarrhythmics, IV", "lidocaine, amiodarone", parenteral_only=True),
    _c("inotropic medications, IV", "digoxin, milrinone", parenteral_only=True),
    _c("moderate sedation agents, IV", "dexmedetomidine, midazolam, lorazepam", parenteral_only=True),
    _c("magnesium sulfate injection", "magnesium sulfate", parenteral_only=True),
    _c("potassium chloride for injection concentrate", "potassium chloride", parenteral_only=True),
)
"""The classes used; chemotherapy, anaesthetics, neuromuscular blockers and solutions (dialysis,
parenteral nutrition, hypertonic saline or dextrose) are on the list too but never occur in
admission medication reports of this data, so they are not spelled out."""

_PARENTERAL_WORDS = ("injection", "injectable", "syringe", "intravenous")


def _is_parenteral(dose_form: str | None) -> bool:
    form = (dose_form or "").lower()
    return "auto-injector" not in form and any(w in form for w in _PARENTERAL_WORDS)


def _names_ingredient(ingredient: str, listed: frozenset[str]) -> bool:
    return any(ingredient == name or ingredient.startswith(f"{name} ") or ingredient.startswith(f"{name},")
               for name in listed)


def high_alert_class(display: str | None) -> str | None:
    """The ISMP class of a drug named by its RxNorm display, or None when it is not high-alert.

    Args:
        display: An RxNorm clinical or branded drug name ("Warfarin Sodium 5 MG Oral Tablet").

    Returns:
        The first matching ``HighAlertClass.name`` (e.g. ``"antithrombotic agents: anticoagulants"``),
        or None. Never raises.
    """
    if not display:
        return None
    entry = parse_display(display)
    names = [i.name.lower() for i in entry.ingredients]
    parenteral = _is_parenteral(entry.dose_form) or _is_parenteral(display)
    for cls in HIGH_ALERT_CLASSES:
        if cls.parenteral_only and not parenteral:
            continue
        if any(_names_ingredient(name, cls.ingredients) for name in names):
            return cls.name
    return None
