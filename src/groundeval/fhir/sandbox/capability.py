"""The sandbox's CapabilityStatement (``GET [base]/metadata``), built from the parameter table.

capabilitystatement.html: ``kind = instance``, ``fhirVersion = 4.0.1``, ``format`` the mime
types served, and per resource its interactions, search parameters and ``searchInclude``; the
statement lists exactly what the sandbox supports and nothing more.
"""

from __future__ import annotations

from typing import Any

from groundeval.fhir.sandbox.params import COMMON, INCLUDES, PARAMS

__all__ = ["WRITABLE", "capability_statement"]

WRITABLE: frozenset[str] = frozenset(
    {"MedicationStatement", "MedicationRequest", "Condition", "AllergyIntolerance", "Observation", "Immunization"}
)
"""Types that accept ``create``, ``update`` and ``delete`` (the write task's MedicationStatement among them)."""


def capability_statement(base_url: str) -> dict[str, Any]:
    """The CapabilityStatement of a sandbox at ``base_url``."""
    resources: list[dict[str, Any]] = []
    for type_ in sorted({*PARAMS, *WRITABLE}):
        interactions = []
        if type_ in PARAMS:
            interactions += [{"code": "read"}, {"code": "search-type"}]
        if type_ in WRITABLE:
            interactions += [{"code": "create"}, {"code": "update"}, {"code": "delete"}]
        entry: dict[str, Any] = {"type": type_, "interaction": interactions}
        if type_ in PARAMS:
            entry["searchParam"] = [
                {"name": p.name, "definition": p.definition, "type": p.type}
                for p in [*COMMON.values(), *PARAMS[type_].values()]
            ]
            includes = [k for k, v in INCLUDES.items() if v[0] == type_]
            if includes:
                entry["searchInclude"] = includes
        if type_ in WRITABLE:
            entry["updateCreate"] = True
        if type_ == "Patient":
            entry["operation"] = [
                {"name": "everything", "definition": "http://hl7.org/fhir/OperationDefinition/Patient-everything"}
            ]
        resources.append(entry)
    return {
        "resourceType": "CapabilityStatement",
        "status": "active",
        "date": "2026-12-05",
        "kind": "instance",
        "software": {"name": "groundeval FHIR sandbox"},
        "implementation": {"description": "One case's record, served for one agent", "url": base_url},
        "fhirVersion": "4.0.1",
        "format": ["application/fhir+json", "json"],
        "rest": [
            {
                "mode": "server",
                "security": {
                    "service": [
                        {
                            "coding": [
                                {
                                    "system": "http://terminology.hl7.org/CodeSystem/restful-security-service",
                                    "code": "SMART-on-FHIR",
                                }
                            ]
                        }
                    ],
                    "description": "A bearer token per case (Authorization: Bearer TOKEN); "
                    "only the case's patient can be read.",
                },
                "resource": resources,
                "interaction": [],
                "searchParam": [
                    {"name": name, "type": "number" if name == "_count" else "string", "documentation": doc}
                    for name, doc in (
                        ("_count", "page size (at most 500)"),
                        ("_sort", "comma-separated parameters, - for descending"),
                        ("_include", "MedicationRequest:medication only"),
                    )
                ],
            }
        ],
    }
