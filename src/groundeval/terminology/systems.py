"""Code system URIs: which ``Coding.system`` values name which terminology.

Kept apart from the catalog and the FHIR readers so that both can use them: the FHIR readers
(``groundeval.fhir.bundle``) read codings by system, and the catalog files codes under them.
"""

from __future__ import annotations

import re

__all__ = ["RXCUI_PATTERN", "RXNORM_SYSTEM", "RXNORM_SYSTEMS", "is_rxcui"]

RXNORM_SYSTEM = "http://www.nlm.nih.gov/research/umls/rxnorm"
"""The RxNorm code system URI (https://terminology.hl7.org/CodeSystem-v3-rxNorm.html)."""

RXNORM_SYSTEMS = frozenset({RXNORM_SYSTEM, "urn:oid:2.16.840.1.113883.6.88"})
"""System values accepted as RxNorm: the canonical URI and its HL7 OID (same terminology page).

Any other system (NDC, SNOMED CT, a local system) is never read as RxNorm, whatever its position
in ``CodeableConcept.coding``.
"""

RXCUI_PATTERN = re.compile(r"[1-9][0-9]{0,7}")
"""The form of an RxCUI: a positive whole number in ASCII digits, no leading zero, at most 8
digits (RxNorm Technical Documentation, section 12.5, RXNCONSO.RRF: ``RXCUI`` is the concept's
numeric identifier, a ``varchar(8)``; https://www.nlm.nih.gov/research/umls/rxnorm/docs/techdoc.html)."""


def is_rxcui(code: object) -> bool:
    """True when ``code`` is a string of the form of an RxCUI (``RXCUI_PATTERN``).

    Form only: ``"9999999"`` has the form and may name no concept; telling that needs RxNorm
    itself. ``"310965"`` is one; ``"RX310965"``, ``"0310965"``, ``"310965.0"``, ``310965`` (a
    number, not a string) and ``""`` are not.
    """
    return isinstance(code, str) and RXCUI_PATTERN.fullmatch(code) is not None
