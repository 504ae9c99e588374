"""Code system URIs: which ``Coding.system`` values name which terminology.

Kept apart from the catalog and the FHIR readers so that both can use them: the FHIR readers
(``groundeval.fhir.bundle``) read codings by system, and the catalog files codes under them.
"""

from __future__ import annotations

__all__ = ["RXNORM_SYSTEM", "RXNORM_SYSTEMS"]

RXNORM_SYSTEM = "http://www.nlm.nih.gov/research/umls/rxnorm"
"""The RxNorm code system URI (https://terminology.hl7.org/CodeSystem-v3-rxNorm.html)."""

RXNORM_SYSTEMS = frozenset({RXNORM_SYSTEM, "urn:oid:2.16.840.1.113883.6.88"})
"""System values accepted as RxNorm: the canonical URI and its HL7 OID (same terminology page).

Any other system (NDC, SNOMED CT, a local system) is never read as RxNorm, whatever its position
in ``CodeableConcept.coding``.
"""
