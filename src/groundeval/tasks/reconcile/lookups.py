"""What a tool-using agent's trace is checked for on a reconcile case (``scorers.grounding``).

* Answered: each RxCUI of the answer must have come back from a tool call (the record through the
  read tools, or the catalog through ``lookup_code``).
* Required: every brand name the report uses was looked up with ``lookup_code`` (a query that
  contains it): a brand is not the record's generic name, and only the catalog says which drug it
  is. A brand name is the first word of a report item's name when the case file's provenance
  (``transformations`` of kind ``brand_name``/``brand_rxcui``) says the item was said by its brand
  ("Zocor"), and any word of an item's name that is a brand of the site catalog or of
  ``terminology.BRAND_INGREDIENTS`` ("Toprol", "Tylenol").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from groundeval.scorers.grounding import Lookup, LookupPlan

__all__ = ["brand_names", "lookup_plan"]

_WORD = re.compile(r"[A-Za-z][A-Za-z-]+")


@functools.cache
def brand_names() -> frozenset[str]:
    """The brand names known to the site catalog and ``BRAND_INGREDIENTS``, lower case."""
    from groundeval.terminology import BRAND_INGREDIENTS, Catalog

    return frozenset({b.lower() for b in BRAND_INGREDIENTS} | {e.brand.lower() for e in Catalog.load() if e.brand})


def lookup_plan(items: Sequence[Mapping[str, Any]], answer: Any, branded: Sequence[str] = ()) -> LookupPlan:
    """The ``LookupPlan`` of a reconcile case.

    Args:
        items: The report's structured items (``{"name", "rxnorm_code", ...}``).
        answer: A parsed answer (a list of ``{"rxnorm_code", "display", "status"}``).
        branded: Names of the items the case file says were said by a brand name.
    """
    entries = [i for i in answer if isinstance(i, dict) and i.get("rxnorm_code")] if isinstance(answer, list) else []
    answered = [(f"{i['rxnorm_code']} {i.get('display') or ''}".strip(), str(i["rxnorm_code"])) for i in entries]
    said = [words[0] for name in branded if (words := _WORD.findall(str(name)))]
    known = [w for item in items for w in _WORD.findall(str(item.get("name") or "")) if w.lower() in brand_names()]
    brands = dict.fromkeys(w.casefold() for w in [*said, *known])
    required = [Lookup(f"look up the brand name {b!r} (lookup_code)", "lookup_code", args_contain={"query": b})
                for b in brands]
    return LookupPlan(answered=answered, required=required)
