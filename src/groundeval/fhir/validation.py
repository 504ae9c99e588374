"""The one FHIR R4B check of a case's Bundle: its shape with ``fhir.resources``, and the codes a truth reads.

``check_bundle(bundle, path, bindings)`` is what every Bundle task runs before a case (the whole
Bundle, as the agent is shown the whole Bundle); ``validate_entries`` checks only the entries of
some types (a task author's lighter check); ``describe_validation_error`` turns pydantic's errors
into ``<resourceType>/<id> <path>: problem`` parts.

fhir.resources checks shape (types, required elements, unknown fields), not required code bindings
(STACK: "R4B pydantic models do not enforce required code bindings"), so a task names the codes its
truth reads as ``CodeBinding`` values (``MEDICATION_REQUEST_CODES`` for the medication truth,
``OBSERVATION_CODES`` for the labs and summary truths) and ``check_bundle`` checks them. fhir.resources
and pydantic are imported on first use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundeval.errors import DatasetError

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "MEDICATION_REQUEST_CODES",
    "OBSERVATION_CODES",
    "OBSERVATION_STATUSES",
    "REFERENCE_HINT",
    "REQUEST_INTENTS",
    "REQUEST_STATUSES",
    "CodeBinding",
    "check_bundle",
    "check_name",
    "describe_validation_error",
    "validate_entries",
]

REFERENCE_HINT = ' (e.g. a Reference {"reference": "Patient/<id>"})'
"""Shown when a FHIR field that must be an object was given a string or number."""

REQUEST_STATUSES = frozenset(
    {"active", "on-hold", "cancelled", "completed", "entered-in-error", "stopped", "draft", "unknown"}
)
"""MedicationRequest.status, a required binding (https://hl7.org/fhir/R4/valueset-medicationrequest-status.html)
that fhir.resources does not enforce: an unknown code would silently drop a drug from the truth."""

REQUEST_INTENTS = frozenset(
    {"proposal", "plan", "order", "original-order", "reflex-order", "filler-order", "instance-order", "option"}
)
"""MedicationRequest.intent, a required binding (https://hl7.org/fhir/R4/valueset-medicationrequest-intent.html),
checked for the same reason: the truth keeps only the order intents (``medication_list.ORDER_INTENTS``)."""

OBSERVATION_STATUSES = frozenset(
    {"registered", "preliminary", "final", "amended", "corrected", "cancelled", "entered-in-error", "unknown"}
)
"""Observation.status in FHIR R4/R4B, a required binding (https://hl7.org/fhir/R4/valueset-observation-status.html)."""


@dataclass(frozen=True, slots=True)
class CodeBinding:
    """A required code binding ``check_bundle`` enforces on every resource of one type.

    Attributes:
        resource_type: The resources it applies to (``"Observation"``).
        element: The top-level element holding the code (``"status"``).
        codes: The value set's codes (exact, lower-case).
        what: The code's name in the message: ``"... 'Final' is not <what> (one of: ...)"``.
    """

    resource_type: str
    element: str
    codes: frozenset[str]
    what: str


MEDICATION_REQUEST_CODES: tuple[CodeBinding, ...] = (
    CodeBinding("MedicationRequest", "status", REQUEST_STATUSES, "a MedicationRequest status code"),
    CodeBinding("MedicationRequest", "intent", REQUEST_INTENTS, "a MedicationRequest intent code"),
)
"""The codes the medication truth reads (``clinical.medication_list``): the extraction and reconcile tasks."""

OBSERVATION_CODES: tuple[CodeBinding, ...] = (
    CodeBinding("Observation", "status", OBSERVATION_STATUSES, "an ObservationStatus code"),
)
"""The codes the labs and summary truths read: every Observation's status."""


def check_name(bindings: Iterable[CodeBinding]) -> str:
    """The ``check_cache`` name of ``check_bundle`` with these bindings: one verdict per file and check.

    ``"fhir-bundle"`` for the medication codes (the extraction case file or the fixture a reconcile
    case pins: one verdict serves both tasks), ``"fhir-bundle+Observation.status"`` for the labs
    and summary check.
    """
    extra = sorted(f"{b.resource_type}.{b.element}" for b in bindings if b not in MEDICATION_REQUEST_CODES)
    return "+".join(["fhir-bundle", *extra])


def _problem(err: Mapping[str, Any], object_hint: str) -> str:
    """A pydantic error in words a user can act on."""
    given = err.get("input")
    if err.get("type") in ("json_invalid", "model_type", "dict_type", "model_attributes_type") and not isinstance(
        given, dict
    ):
        shown = json.dumps(given)[:60] if isinstance(given, str | int | float | bool | list) else type(given).__name__
        return f"expected a JSON object{object_hint}, got {shown}"
    return str(err["msg"])


def describe_validation_error(
    exc: ValidationError,
    entries: Sequence[Mapping[str, Any]] | None = None,
    limit: int | None = None,
    object_hint: str = "",
) -> str:
    """Render a pydantic ``ValidationError`` as ``where: problem`` parts joined by ``; ``.

    Args:
        exc: The error.
        entries: The ``Bundle.entry`` list that was validated: locations ``entry.<i>.resource.x``
            are then shown as ``<resourceType>/<id> x``.
        limit: Show at most this many problems, then ``(+N more)``; None shows all.
        object_hint: Appended to "expected a JSON object" (e.g. ``REFERENCE_HINT``).
    """
    errors = exc.errors()
    shown = errors if limit is None else errors[:limit]
    parts = []
    for err in shown:
        loc: list[Any] = list(err["loc"])
        where = ""
        if entries is not None and len(loc) > 1 and loc[0] == "entry" and isinstance(loc[1], int):
            resource = entries[loc[1]].get("resource") or {}
            where = f"{resource.get('resourceType')}/{resource.get('id')} "
            loc = [p for p in loc[2:] if p != "resource"]
        path = ".".join(str(p) for p in loc)
        parts.append(f"{where}{path or '(file)'}: {_problem(err, object_hint)}")
    more = f" (+{len(errors) - len(shown)} more)" if len(errors) > len(shown) else ""
    return "; ".join(parts) + more


def validate_entries(bundle: Mapping[str, Any], resource_types: Iterable[str], path: Path) -> list[dict[str, Any]]:
    """Validate a Bundle's entries of the given types as FHIR R4B resources (``fhir.resources``).

    Only shape is checked (types, required elements, no unknown fields): fhir.resources does not
    enforce required code bindings, so a task checks the codes its truth reads itself.

    Returns:
        The validated entries (dicts, unchanged), in bundle order.

    Raises:
        DatasetError: The first three problems, located as ``<resourceType>/<id> <path>``.
    """
    from fhir.resources.R4B.bundle import Bundle
    from pydantic import ValidationError

    wanted = set(resource_types)
    entries = [
        e for e in bundle.get("entry") or []
        if isinstance(e, dict) and isinstance(e.get("resource"), dict) and e["resource"].get("resourceType") in wanted
    ]
    try:
        Bundle.model_validate({"resourceType": "Bundle", "type": "collection", "entry": entries})
    except ValidationError as exc:
        text = describe_validation_error(exc, entries, limit=3, object_hint=REFERENCE_HINT)
        raise DatasetError(str(path), "not valid FHIR R4B: " + text) from None
    return entries


def _resources(value: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every JSON object with a ``resourceType`` in ``value`` (entries, contained, nested Bundles), with its path."""
    if isinstance(value, Mapping):
        if "resourceType" in value:
            yield where, value
        for key, item in value.items():
            if isinstance(item, Mapping | list):
                yield from _resources(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, Mapping | list):
                yield from _resources(item, f"{where}[{index}]")


def _resource_type_problem(bundle: Mapping[str, Any]) -> str | None:
    """The first ``resourceType`` in the Bundle that is not an R4B resource, as a message; None when all are.

    Every resource counts, wherever it sits (an entry, a ``contained`` resource, a nested
    Bundle). Checked before model validation because fhir.resources raises ``KeyError`` (not a
    validation error) for an unknown ``resourceType`` (FRICTION.md, "fhir.resources"). An entry's
    resource without a ``resourceType`` is named here too (the model's message would be about
    extra fields).
    """
    import difflib

    import fhir.resources.R4B as r4b
    from fhir.resources.R4B import fhirtypes
    from fhir.resources.R4B.resource import Resource

    def is_resource(name: object) -> bool:
        try:
            return isinstance(name, str) and issubclass(r4b.get_fhir_model_class(name), Resource)
        except ValueError:
            return False

    for index, entry in enumerate(bundle.get("entry") or []):
        resource = entry.get("resource") if isinstance(entry, Mapping) else None
        if isinstance(resource, Mapping) and "resourceType" not in resource:
            return f"entry[{index}] (id {resource.get('id')!r}): the resource has no resourceType"
    for where, resource in _resources(bundle, ""):
        name = resource["resourceType"]
        if is_resource(name):
            continue
        types = [t[:-4] for t in dir(fhirtypes) if t.endswith("Type") and t[:1].isupper()]
        close = [t for t in types if t.lower() == str(name).lower()] or difflib.get_close_matches(str(name), types, 3)
        close = [t for t in close if is_resource(t)]
        hint = f" (did you mean {close[0]!r}?)" if close else " (names are case-sensitive, e.g. 'MedicationRequest')"
        what = f"{where or '(the file)'} (id {resource.get('id')!r})"
        return f"{what}: resourceType {name!r} is not an R4B resource type{hint}"
    return None


def check_bundle(bundle: Mapping[str, Any], path: Path, bindings: Iterable[CodeBinding] = ()) -> None:
    """The whole Bundle must be valid FHIR R4B, and the codes ``bindings`` name must be of their value sets.

    What an agent is shown is the whole Bundle, so all of it is checked, not only what the truth
    reads: an entry whose ``resourceType`` is misspelled would otherwise silently leave the truth
    empty, and a reader that validates what it is given would fail on the file, not on the
    patient. The bindings are checked on every entry's resource of their type.

    About 5 ms for a trimmed fixture and 0.2 to 0.3 s for a raw Synthea Bundle (plus about 0.3 s to
    import the R4B models, once per process); the tasks run it when a case is about to run and
    remember a pass (``groundeval.check_cache.check_once``).

    Args:
        bundle: The Bundle as JSON.
        path: The file it came from, for messages.
        bindings: The required codes the task's truth reads (``MEDICATION_REQUEST_CODES``, ``OBSERVATION_CODES``).

    Raises:
        DatasetError: The first problems, located as ``<resourceType>/<id> <path>``, with the fix.
    """
    from fhir.resources.R4B.bundle import Bundle
    from pydantic import ValidationError

    entries = bundle.get("entry") or []
    if isinstance(entries, list) and (problem := _resource_type_problem(bundle)) is not None:
        raise DatasetError(str(path), "not valid FHIR R4B: " + problem)
    try:
        Bundle.model_validate(bundle)
    except KeyError as exc:  # fhir.resources' unknown-type lookup, in a place the walk above did not foresee
        raise DatasetError(str(path), f"not valid FHIR R4B: unknown resource or element type {exc}") from None
    except ValidationError as exc:
        located = entries if isinstance(entries, list) and all(isinstance(e, Mapping) for e in entries) else None
        text = describe_validation_error(exc, located, limit=3, object_hint=REFERENCE_HINT)
        raise DatasetError(str(path), "not valid FHIR R4B: " + text) from None
    by_type: dict[str, list[CodeBinding]] = {}
    for binding in bindings:
        by_type.setdefault(binding.resource_type, []).append(binding)
    for entry in entries:
        resource = entry["resource"] if isinstance(entry.get("resource"), Mapping) else {}
        for binding in by_type.get(str(resource.get("resourceType")), ()):
            value = resource.get(binding.element)
            if value not in binding.codes:
                raise DatasetError(
                    str(path), f"{binding.resource_type}/{resource.get('id')} {binding.element} {value!r} is not "
                    f"{binding.what} (one of: {', '.join(sorted(binding.codes))}; codes are lower-case)",
                )
