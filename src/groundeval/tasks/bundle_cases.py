"""Reading and checking the labs task's case files: one patient's FHIR Bundle each.

``read_case`` is what collection needs (the JSON, a Bundle, exactly one Patient: cheap, it runs
in every process for every file); ``check_bundle`` is the costly check run just before a case
(the whole Bundle as FHIR R4B with ``fhir.resources``, and ``Observation.status`` against the R4
value set, a required binding the models do not enforce).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundeval.datasets import Case, load_json
from groundeval.errors import DatasetError

__all__ = ["OBSERVATION_STATUSES", "case_id_from_stem", "check_bundle", "has_observations", "read_case"]

OBSERVATION_STATUSES = frozenset(
    {"registered", "preliminary", "final", "amended", "corrected", "cancelled", "entered-in-error", "unknown"}
)
"""Observation.status, a required binding (https://hl7.org/fhir/R4/valueset-observation-status.html)."""

_UUID_TAIL = re.compile(r"^(?P<head>.*?)(?P<uuid>[0-9a-fA-F]{8})(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


def case_id_from_stem(stem: str) -> str:
    """The case id: the file stem with a trailing UUID cut to its first 8 characters.

    ``Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2`` -> ``Liz_Conn_27c911c6``, as the other
    built-in tasks name their cases; characters outside ``[A-Za-z0-9_.-]`` become ``_``.
    """
    match = _UUID_TAIL.match(stem)
    short = f"{match['head']}{match['uuid']}" if match else stem
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", short).strip("_") or "case"


def _resources(bundle: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [e["resource"] for e in bundle.get("entry") or []
            if isinstance(e, Mapping) and isinstance(e.get("resource"), Mapping)]


def has_observations(data: Mapping[str, Any]) -> bool:
    """True for a FHIR Bundle holding at least one Observation entry."""
    return data.get("resourceType") == "Bundle" and isinstance(data.get("entry"), list) and any(
        r.get("resourceType") == "Observation" for r in _resources(data))


def read_case(path: Path) -> Case:
    """Read one case file: a Bundle with exactly one Patient.

    Raises:
        DatasetError: Not JSON, not a Bundle, or not exactly one Patient; the message names the
            file and the fix.
    """
    bundle, digest = load_json(path)
    if bundle.get("resourceType") != "Bundle" or not isinstance(bundle.get("entry", []), list):
        raise DatasetError(str(path), f"not a FHIR Bundle (resourceType {bundle.get('resourceType')!r}); a labs case "
                           "is one patient's Bundle with its Patient and Observations")
    patients = [r for r in _resources(bundle) if r.get("resourceType") == "Patient"]
    if len(patients) != 1:
        raise DatasetError(str(path), f"the Bundle holds {len(patients)} Patient resources; a labs case holds "
                           "exactly one patient's record")
    observations = sum(r.get("resourceType") == "Observation" for r in _resources(bundle))
    meta = {"patient_id": str(patients[0].get("id") or ""), "observations": observations}
    return Case(case_id=case_id_from_stem(path.stem), source=path, sha256=digest, data=bundle, meta=meta)


def _where(error: Mapping[str, Any], entries: list[Any]) -> str:
    loc = list(error.get("loc") or ())
    prefix = ""
    if len(loc) > 1 and loc[0] == "entry" and isinstance(loc[1], int) and loc[1] < len(entries):
        resource = entries[loc[1]].get("resource") if isinstance(entries[loc[1]], Mapping) else None
        if isinstance(resource, Mapping):
            prefix = f"{resource.get('resourceType')}/{resource.get('id')} "
        loc = [p for p in loc[2:] if p != "resource"]
    return f"{prefix}{'.'.join(str(p) for p in loc) or '(file)'}: {error.get('msg')}"


def check_bundle(bundle: Mapping[str, Any], path: Path) -> None:
    """The whole Bundle must be valid FHIR R4B, and every Observation's status an R4 ObservationStatus code.

    Raises:
        DatasetError: The first problems, located as ``<resourceType>/<id> <path>``, with the fix.
    """
    from fhir.resources.R4B.bundle import Bundle
    from pydantic import ValidationError

    entries = list(bundle.get("entry") or [])
    try:
        Bundle.model_validate(bundle)
    except KeyError as exc:  # fhir.resources' lookup of an unknown resourceType
        raise DatasetError(str(path), f"not valid FHIR R4B: unknown resource type {exc}; fix it") from None
    except ValidationError as exc:
        shown = "; ".join(_where(e, entries) for e in exc.errors()[:3])
        more = f" (+{exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        raise DatasetError(str(path), f"not valid FHIR R4B: {shown}{more}") from None
    for resource in _resources(bundle):
        if resource.get("resourceType") == "Observation" and resource.get("status") not in OBSERVATION_STATUSES:
            raise DatasetError(
                str(path), f"Observation/{resource.get('id')} status {resource.get('status')!r} is not an "
                f"ObservationStatus code (one of: {', '.join(sorted(OBSERVATION_STATUSES))}; codes are lower-case)",
            )
