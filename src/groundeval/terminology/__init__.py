"""Site terminology: the RxNorm catalog, maximum daily doses and UCUM helpers.

``Catalog`` (a HealthChain ``TerminologyLookup``), ``parse_display`` for RxNorm names,
``load_max_daily_doses`` for the dose-ceiling table, ``to_mg``/``ucum_problem``/``count_form``
for units (UCUM by its grammar, through ``ucumvert``). No module here imports HealthChain or
ucumvert at import time.
"""

from __future__ import annotations

from groundeval.terminology.catalog import CATALOG_FILE, Catalog, Match
from groundeval.terminology.doses import (
    MAX_DOSE_FILE,
    MaxDoseRow,
    find_max_dose,
    load_max_daily_doses,
)
from groundeval.terminology.rxnorm import (
    BRAND_INGREDIENTS,
    CatalogEntry,
    Ingredient,
    format_strength,
    parse_display,
    route_of,
)
from groundeval.terminology.ucum import (
    ORDERABLE_DRUG_FORM_SYSTEM,
    UCUM_SYSTEM,
    count_form,
    rxnorm_unit_to_ucum,
    to_mg,
    ucum_problem,
)

__all__ = [
    "BRAND_INGREDIENTS",
    "CATALOG_FILE",
    "MAX_DOSE_FILE",
    "ORDERABLE_DRUG_FORM_SYSTEM",
    "UCUM_SYSTEM",
    "Catalog",
    "CatalogEntry",
    "Ingredient",
    "Match",
    "MaxDoseRow",
    "count_form",
    "find_max_dose",
    "format_strength",
    "load_max_daily_doses",
    "parse_display",
    "route_of",
    "rxnorm_unit_to_ucum",
    "to_mg",
    "ucum_problem",
]
