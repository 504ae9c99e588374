"""RxNorm display names, parsed: ingredients, strengths, dose form, release modifier, brand.

RxNorm clinical and branded drug names follow the pattern ``[quantity] [duration] ingredient
strength unit [/ ingredient strength unit ...] dose form [brand]``
(RxNorm technical documentation, "Normalized names":
https://www.nlm.nih.gov/research/umls/rxnorm/docs/techdoc.html). Synthea writes these names as
``display`` values, plus a few shortened brand-first names ("Lasix 40mg", "Errin 28 Day Pack");
those are read with the small :data:`BRAND_INGREDIENTS` table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from groundeval.terminology.ucum import rxnorm_unit_to_ucum

__all__ = [
    "BRAND_INGREDIENTS",
    "CatalogEntry",
    "Ingredient",
    "format_strength",
    "parse_display",
    "route_of",
]

#: Brand names that Synthea writes *before* the strength with no ingredient named, mapped to the
#: ingredient(s) of the product (lower case), from each product's FDA label title.
BRAND_INGREDIENTS: dict[str, tuple[str, ...]] = {
    "Errin": ("norethindrone",),
    "Jolivette": ("norethindrone",),
    "Kyleena": ("levonorgestrel",),
    "Lasix": ("furosemide",),
    "Levora": ("levonorgestrel", "ethinyl estradiol"),
    "Liletta": ("levonorgestrel",),
    "Mirena": ("levonorgestrel",),
    "NuvaRing": ("etonogestrel", "ethinyl estradiol"),
    "Seasonique": ("levonorgestrel", "ethinyl estradiol"),
    "Yaz": ("drospirenone", "ethinyl estradiol"),
}

#: Dose form words -> route (lower case), longest match first. Source: RxNorm dose forms
#: (https://www.nlm.nih.gov/research/umls/rxnorm/docs/appendix2.html).
_ROUTES: tuple[tuple[str, str], ...] = (
    ("sublingual", "sublingual"),
    ("inhalation", "inhalation"),
    ("inhaler", "inhalation"),
    ("transdermal", "transdermal"),
    ("topical", "topical"),
    ("vaginal", "vaginal"),
    ("intrauterine", "intrauterine"),
    ("mucosal", "oromucosal"),
    ("injection", "injection"),
    ("injectable", "injection"),
    ("syringe", "injection"),
    ("auto-injector", "injection"),
    ("oral", "oral"),
    ("chewable", "oral"),
    ("pack", "oral"),
    ("tablet", "oral"),
    ("capsule", "oral"),
)

_NUM = r"\d+(?:\.\d+)?"
_UNIT = r"(?:MG|MCG|G|ML|UNT|MEQ|MMOL)(?:/(?:ML|MG|HR|ACTUAT|24HR))?"
_BRAND_RE = re.compile(r"^(?P<rest>.*?)\s*\[(?P<brand>[^\]]+)\]$")
_QUALIFIER_RE = re.compile(r"^(?P<q>Abuse-Deterrent|NDA\d+) ")
_PREFIX_RE = re.compile(rf"^(?P<n>{_NUM}) (?P<u>HR|ML|MG|ACTUAT) ")
_LAST_RE = re.compile(rf"^(?P<name>.+?) (?P<s>{_NUM}) (?P<u>{_UNIT})(?: (?P<form>.+))?$")
_PART_RE = re.compile(rf"^(?P<name>.+?) (?P<s>{_NUM}) (?P<u>{_UNIT})$")
_BRAND_FIRST_RE = re.compile(
    r"^(?P<brand>[A-Z][A-Za-z]+)"
    r"(?: (?P<s>\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)*)(?! Day)"
    r"(?: ?(?P<u>MG|mg|MCG)(?: per (?P<per>\d+HR))?)?)?"
    r"(?: (?P<form>\D.*|\d+ Day .*))?$"
)


@dataclass(frozen=True, slots=True)
class Ingredient:
    """One active ingredient of a catalog drug.

    Attributes:
        name: Ingredient name, lower case, salt included as RxNorm names it
            (``"metoprolol succinate"``, ``"naproxen sodium"``, ``"levothyroxine sodium"``).
        strength: The number in the display (``100`` for "100 MG"), or ``None`` when the display
            gives none.
        unit: The strength unit as RxNorm writes it (``"MG"``, ``"MCG"``, ``"MG/ML"``,
            ``"UNT/ML"``, ``"MG/HR"``), or ``None``.
    """

    name: str
    strength: float | None
    unit: str | None

    @property
    def ucum_unit(self) -> str | None:
        """The strength unit in UCUM (``MG`` -> ``mg``, ``MCG`` -> ``ug``, ``MG/ML`` -> ``mg/mL``).

        ``None`` when the unit is unknown or absent.
        """
        return rxnorm_unit_to_ucum(self.unit)


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One RxNorm concept of the site catalog.

    Attributes:
        rxcui: The RxNorm concept id (digits).
        display: The RxNorm name as the source data writes it.
        ingredients: Active ingredients in display order; empty only if the display names none.
        dose_form: RxNorm dose form (``"Oral Tablet"``, ``"Extended Release Oral Tablet"``,
            ``"Injection"``, ``"28 Day Pack"``), or ``None`` when the display has none.
        release: Release modifier: the duration prefix (``"12 HR"``, ``"24 HR"``, ``"72 HR"``),
            else ``"ER"``/``"DR"`` when the dose form says Extended/Delayed Release, else ``None``.
        brand: Brand name (``"Tylenol"`` from "... [Tylenol]", or a brand-first display's
            leading name), or ``None`` for a generic.
        quantity: Package quantity prefix (``"1 ML"``, ``"0.3 ML"``), or ``None``.
        qualifier: Leading qualifier (``"Abuse-Deterrent"``, ``"NDA020800"``), or ``None``.
        aliases: Other spellings of ``display`` seen in the source data (case variants).
    """

    rxcui: str
    display: str
    ingredients: tuple[Ingredient, ...]
    dose_form: str | None
    release: str | None
    brand: str | None
    quantity: str | None = None
    qualifier: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def unit_form(self) -> str | None:
        """The unit a count of this product counts: ``"tablet"``, ``"capsule"`` or ``None``.

        From the dose form words (``Oral Tablet``, ``Extended Release Oral Capsule``).
        """
        words = (self.dose_form or "").lower().split()
        return "tablet" if "tablet" in words else ("capsule" if "capsule" in words else None)

    @property
    def unit_strength_mg(self) -> float | None:
        """Mg of active ingredient in one tablet or capsule, for converting a count to mg.

        ``None`` unless the product is a tablet or capsule (``unit_form``) of exactly one
        ingredient whose strength is a mass (``MG``, ``MCG``, ``G``): a combination product has
        no single strength to multiply.
        """
        if self.unit_form is None or len(self.ingredients) != 1:
            return None
        ing = self.ingredients[0]
        if ing.strength is None or ing.unit not in ("MG", "MCG", "G"):
            return None
        return ing.strength * {"MG": 1.0, "MCG": 1e-3, "G": 1e3}[ing.unit]

    @property
    def route(self) -> str | None:
        """Route implied by the dose form (``"oral"``, ``"injection"``, ``"inhalation"``...)."""
        return route_of(self.dose_form)

    def render(self) -> str:
        """Rebuild an RxNorm-style name from the parsed parts (the inverse of ``parse_display``).

        For standard RxNorm names this equals ``display`` up to letter case; brand-first Synthea
        names ("Lasix 40mg") render in the standard order instead.
        """
        parts = [p for p in (self.qualifier, self.quantity) if p]
        if self.release and self.release not in ("ER", "DR"):
            parts.append(self.release)
        parts.append(" / ".join(_render_ingredient(i) for i in self.ingredients))
        if self.dose_form:
            parts.append(self.dose_form)
        text = " ".join(p for p in parts if p)
        return f"{text} [{self.brand}]" if self.brand else text


def format_strength(value: float) -> str:
    """Write a strength as RxNorm does: ``100.0`` -> ``"100"``, ``0.075`` -> ``"0.075"``."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _render_ingredient(ing: Ingredient) -> str:
    if ing.strength is None:
        return ing.name
    return f"{ing.name} {format_strength(ing.strength)} {ing.unit}"


def route_of(dose_form: str | None) -> str | None:
    """Map an RxNorm dose form to a route (lower case), or ``None`` when it names none."""
    if not dose_form:
        return None
    words = dose_form.lower().split()
    for key, route in _ROUTES:
        if key in words:
            return route
    return None


def _release_of(duration: str | None, dose_form: str | None) -> str | None:
    if duration:
        return duration
    form = (dose_form or "").lower()
    if "extended release" in form:
        return "ER"
    if "delayed release" in form:
        return "DR"
    return None


def _ingredient(name: str, strength: str | None, unit: str | None) -> Ingredient:
    return Ingredient(
        name=name.strip().lower(),
        strength=float(strength) if strength is not None else None,
        unit=unit.upper() if unit else None,
    )


def _parse_brand_first(rxcui: str, display: str, ingredients: tuple[str, ...]) -> CatalogEntry:
    match = _BRAND_FIRST_RE.match(display)
    if match is None:
        return CatalogEntry(rxcui, display, tuple(Ingredient(n, None, None) for n in ingredients),
                            None, None, display.split()[0])
    strengths = match["s"].split("/") if match["s"] else []
    unit = match["u"]
    if unit and match["per"]:
        unit = f"{unit}/{match['per']}"
    if unit and len(strengths) == len(ingredients):
        parts = tuple(_ingredient(n, s, unit) for n, s in zip(ingredients, strengths, strict=True))
    else:  # "Levora 0.15/30": the unit of each number is not written; do not guess it
        parts = tuple(Ingredient(n, None, None) for n in ingredients)
    form = match["form"]
    return CatalogEntry(rxcui, display, parts, form, _release_of(None, form), match["brand"])


def parse_display(display: str, rxcui: str = "") -> CatalogEntry:
    """Parse an RxNorm display name as Synthea writes it.

    Examples:
        ``"24 HR metoprolol succinate 100 MG Extended Release Oral Tablet [Toprol]"`` gives
        ingredient ``metoprolol succinate`` 100 ``MG``, dose form ``Extended Release Oral
        Tablet``, release ``24 HR``, brand ``Toprol``. ``"1 ML Epinephrine 1 MG/ML Injection"``
        gives quantity ``1 ML`` and ingredient ``epinephrine`` 1 ``MG/ML``.
        ``"Aspirin"`` gives ingredient ``aspirin`` with no strength.

    Args:
        display: The name.
        rxcui: The concept id to store in the entry (parsing does not use it).

    Returns:
        The parsed entry (``aliases`` empty). Never raises: a name that fits no pattern becomes
        one ingredient named by the whole text (minus any ``[brand]``), with no strength.
    """
    text = " ".join(display.split())
    first = text.split(" ", 1)[0]
    if first in BRAND_INGREDIENTS and "[" not in text:
        return _parse_brand_first(rxcui, display, BRAND_INGREDIENTS[first])
    brand = None
    if (m := _BRAND_RE.match(text)) is not None:
        text, brand = m["rest"], m["brand"].strip()
    qualifier = quantity = duration = None
    if (m := _QUALIFIER_RE.match(text)) is not None:
        qualifier, text = m["q"], text[m.end():]
    while (m := _PREFIX_RE.match(text)) is not None:
        value = f"{m['n']} {m['u']}"
        if m["u"] == "HR":
            duration = value
        else:
            quantity = value
        text = text[m.end():]
    *heads, last = text.split(" / ")
    parts: list[Ingredient] = []
    for head in heads:
        if (m := _PART_RE.match(head)) is None:
            parts.append(_ingredient(head, None, None))
        else:
            parts.append(_ingredient(m["name"], m["s"], m["u"]))
    form = None
    if (m := _LAST_RE.match(last)) is not None:
        parts.append(_ingredient(m["name"], m["s"], m["u"]))
        form = m["form"]
    else:
        parts.append(_ingredient(last, None, None))
    return CatalogEntry(
        rxcui=rxcui,
        display=display,
        ingredients=tuple(parts),
        dose_form=form,
        release=_release_of(duration, form),
        brand=brand,
        quantity=quantity,
        qualifier=qualifier,
    )
