"""Maximum adult daily doses (mg/day) by ingredient and route, each row with its source.

The table lives in ``fixtures/terminology/max_daily_doses.json``; every row cites the FDA label
(DailyMed SPL, section 2 "Dosage and Administration") or an FDA OTC monograph. Drugs without a
defensible single ceiling (titrated to a lab value, opioids, indication-dependent) have
``mg_per_day: null`` and a ``reason``; what a scorer does with those is its own documented rule.
Each row names the products it applies to by ``release`` (``immediate``, ``extended`` or ``any``),
because labels differ by form (memantine: 20 mg/day immediate-release, 28 mg/day extended-release);
``row_applies`` checks a row against a catalog product's own release.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundeval.datasets import default_data_dir, load_json
from groundeval.errors import DatasetError

__all__ = ["MAX_DOSE_FILE", "RELEASES", "MaxDoseRow", "find_max_dose", "load_max_daily_doses", "product_release",
           "row_applies"]

MAX_DOSE_FILE = "max_daily_doses.json"
RELEASES = ("immediate", "extended", "any")
"""What a row's ``release`` may say."""


@dataclass(frozen=True, slots=True)
class MaxDoseRow:
    """One ceiling.

    Attributes:
        ingredient: Ingredient name, lower case, as the catalog writes it (salt included:
            ``"metoprolol tartrate"``, ``"naproxen sodium"``).
        route: ``"oral"``, ``"inhalation"``, ``"injection"``... (see ``terminology.route_of``).
        release: The products the ceiling holds for: ``"immediate"``, ``"extended"`` or ``"any"``.
        mg_per_day: Maximum adult dose in mg per 24 hours, or ``None`` when there is no single
            defensible ceiling.
        reason: Why ``mg_per_day`` is ``None``; ``None`` otherwise.
        source: The label (product name, DailyMed SPL section) or monograph the value comes from.
        note: Scope of the value (indication, dosage form), when it matters.
    """

    ingredient: str
    route: str
    release: str
    mg_per_day: float | None
    reason: str | None
    source: str
    note: str | None = None


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def load_max_daily_doses(path: Path | None = None) -> dict[tuple[str, str], MaxDoseRow]:
    """Read the maximum-daily-dose table.

    Args:
        path: The JSON file; default ``max_daily_doses.json`` in the packaged ``terminology``
            fixtures.

    Returns:
        Rows keyed by ``(ingredient lower case, route)``.

    Raises:
        DatasetError: The file is unreadable; a row lacks ``ingredient``/``route``/``source``;
            ``release`` is not one of ``RELEASES``; ``mg_per_day`` is not a positive number or
            null; a null row has no ``reason``; or a key repeats.
    """
    path = path or default_data_dir("terminology") / MAX_DOSE_FILE
    data, _ = load_json(path)
    rows = data.get("rows")
    if not isinstance(rows, list):
        raise DatasetError(str(path), "no 'rows' list")
    table: dict[tuple[str, str], MaxDoseRow] = {}
    for n, raw in enumerate(rows):
        where = f"rows[{n}]"
        if not isinstance(raw, dict):
            raise DatasetError(str(path), f"{where} is not an object")
        ingredient, route, source = raw.get("ingredient"), raw.get("route"), raw.get("source")
        if not (_text(ingredient) and _text(route) and _text(source)):
            raise DatasetError(str(path), f"{where} needs non-empty ingredient, route and source")
        assert isinstance(ingredient, str)
        assert isinstance(route, str)
        assert isinstance(source, str)
        release = raw.get("release")
        if release not in RELEASES:
            raise DatasetError(str(path), f"{where} ({ingredient}): release {release!r} is not one of "
                               f"{', '.join(RELEASES)}; name the products the label's ceiling is for")
        mg = raw.get("mg_per_day")
        reason = raw.get("reason")
        if mg is None:
            if not isinstance(reason, str) or not reason.strip():
                raise DatasetError(
                    str(path), f"{where} ({ingredient}): null mg_per_day needs a reason"
                )
        elif isinstance(mg, bool) or not isinstance(mg, int | float) or mg <= 0:
            raise DatasetError(str(path), f"{where} ({ingredient}): mg_per_day {mg!r} is not > 0")
        key = (ingredient.strip().lower(), route.strip().lower())
        if key in table:
            raise DatasetError(str(path), f"{where}: duplicate row for {key}")
        note = raw.get("note")
        table[key] = MaxDoseRow(
            ingredient=key[0],
            route=key[1],
            release=str(release),
            mg_per_day=None if mg is None else float(mg),
            reason=reason if mg is None else None,
            source=source,
            note=note if isinstance(note, str) else None,
        )
    return table


def find_max_dose(
    table: dict[tuple[str, str], MaxDoseRow], ingredient: str, route: str | None
) -> MaxDoseRow | None:
    """Find the row for an ingredient and route.

    Args:
        table: From :func:`load_max_daily_doses`.
        ingredient: Ingredient name (any case).
        route: Route, or ``None`` when the dose form names none ("Hydrochlorothiazide 25 MG").

    Returns:
        The exact ``(ingredient, route)`` row; when ``route`` is ``None``, the ingredient's only
        row if it has exactly one; otherwise ``None``.
    """
    name = ingredient.strip().lower()
    if route is not None:
        return table.get((name, route.strip().lower()))
    rows = [row for (ing, _), row in table.items() if ing == name]
    return rows[0] if len(rows) == 1 else None


def product_release(entry: Any) -> str:
    """The release of a catalog product (``entry``: a ``terminology.CatalogEntry``).

    Returns:
        ``"extended"`` for a release modifier other than delayed (``24 HR``, ``ER``), ``"delayed"``
        for ``DR``, else ``"immediate"``.
    """
    release = getattr(entry, "release", None)
    return "immediate" if release is None else "delayed" if release == "DR" else "extended"


def row_applies(row: MaxDoseRow, entry: Any) -> str | None:
    """Whether a ceiling row holds for a catalog product.

    Args:
        row: The row found for the product's ingredient and route.
        entry: The product (``terminology.CatalogEntry``).

    Returns:
        None when it does (``release`` ``any``, or the product's own release), else why not
        (``"the row for memantine hydrochloride is for extended-release products; 996740 ... is
        immediate-release"``).
    """
    mine = product_release(entry)
    if row.release in ("any", mine):
        return None
    return (f"the row for {row.ingredient} ({row.route}) is for {row.release}-release products; "
            f"{entry.rxcui} {entry.display!r} is {mine}-release")
