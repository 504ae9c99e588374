"""Pieces every task needs once: patient lookup, case ids, pydantic error text, wrong-task hints.

Public helpers for task authors (re-exported at the ``groundeval`` top level)::

    find_patient(bundle, source) -> (Patient dict, entry fullUrl or None)
    patient_case_id(patient, path, digest, case_ids="name") -> "Liz_Conn-27c911c6"
    describe_validation_error(exc, entries=None, limit=None) -> "where: problem; ..."
    wrong_task_error(data, path, this_task) -> DatasetError | None
    validate_entries(bundle, resource_types, path) -> None  (FHIR R4B shape check)

``case_files`` lives in ``groundeval.tasks.base``; FHIR coding by system in
``groundeval.fhir.bundle.codings_by_system``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundeval.clinical.medication_list import find_patient
from groundeval.datasets import slug
from groundeval.errors import DatasetError

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "REQUEST_INTENTS",
    "REQUEST_STATUSES",
    "case_id_from_stem",
    "check_fhir_bundle",
    "describe_validation_error",
    "find_bundle_file",
    "find_patient",
    "patient_case_id",
    "validate_entries",
    "wrong_task_error",
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


def patient_case_id(patient: Mapping[str, Any], path: Path, digest: str, case_ids: str = "name") -> str:
    """The case id of a one-patient file, from its file name (never from ``Patient.name``).

    Args:
        patient: The Patient resource (unused; kept so tasks need not change their call).
        path: The case file.
        digest: The file's SHA-256 (unused).
        case_ids: ``"name"``: the file stem with a trailing UUID cut to its first 8 characters
            (``Liz_Conn_27c911c6-f045-....json`` -> ``Liz_Conn_27c911c6``), as the built-in tasks
            name their cases; ``"file"``: the whole stem, made an identifier (``slug``).
    """
    del patient, digest
    if case_ids == "file":
        return slug(path.stem)
    return case_id_from_stem(path.stem)


_UUID_TAIL = re.compile(r"^(?P<head>.*?)(?P<uuid>[0-9a-fA-F]{8})(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


def case_id_from_stem(stem: str) -> str:
    """The default case id: the file stem, with a trailing UUID cut to its first 8 characters.

    ``Liz_Conn_27c911c6-f045-4ffa-af5d-6eba57ac94b2`` -> ``Liz_Conn_27c911c6``: the id is a prefix
    of the file name, so ``-k`` on any part of it selects the case. Characters outside
    ``[A-Za-z0-9_.-]`` become ``_``.
    """
    match = _UUID_TAIL.match(stem)
    short = f"{match['head']}{match['uuid']}" if match else stem
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", short).strip("_") or "case"


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


BUNDLE_CHECK = "fhir-bundle"
"""``check_cache``'s name for ``check_fhir_bundle`` of a Bundle file's bytes: the extraction case file,
or the extraction fixture a reconcile case pins (one verdict serves both tasks)."""


def check_fhir_bundle(bundle: Mapping[str, Any], path: Path) -> None:
    """The whole Bundle must be valid FHIR R4B, and its MedicationRequests' status and intent codes of their value sets.

    What an agent is shown is the whole Bundle, so all of it is checked, not only what the truth
    reads: an entry whose ``resourceType`` is misspelled would otherwise silently leave the truth
    empty, and a reader that validates what it is given would fail on the file, not on the
    patient. fhir.resources checks shape (types, required elements, unknown fields), not required
    code bindings (STACK: "R4B pydantic models do not enforce required code bindings"), so the
    two codes the truth reads are checked here: ``MedicationRequest.status`` against
    ``REQUEST_STATUSES`` and ``intent`` against ``REQUEST_INTENTS``.

    About 5 ms for a trimmed extraction fixture and 0.2 to 0.3 s for a raw Synthea Bundle; the
    callers run it when a case is about to run and remember the verdict (``check_cache``).

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
    for entry in entries:
        resource = entry["resource"] if isinstance(entry.get("resource"), Mapping) else {}
        if resource.get("resourceType") != "MedicationRequest":
            continue
        for element, codes in (("status", REQUEST_STATUSES), ("intent", REQUEST_INTENTS)):
            value = resource.get(element)
            if value not in codes:
                raise DatasetError(
                    str(path), f"MedicationRequest/{resource.get('id')} {element} {value!r} is not a "
                    f"MedicationRequest {element} code (one of: {', '.join(sorted(codes))}; codes are lower-case)",
                )


def wrong_task_error(data: Mapping[str, Any], path: Path, this_task: str) -> DatasetError | None:
    """A ``DatasetError`` naming the other task(s) whose format ``data`` is, or None.

    Asks every task class the registry knows (built-in and entry-point tasks, see
    ``groundeval.tasks.task_classes``) whether it ``claims`` the data; only called when a file
    is not this task's format, so the imports cost nothing on good data.
    """
    from groundeval.tasks import task_classes

    others = []
    for name, cls in task_classes().items():
        claims = getattr(cls, "claims", None)
        if name != this_task and callable(claims) and claims(data):
            others.append(name)
    if not others:
        return None
    first, rest = others[0], others[1:]
    also = f" (or {', '.join(rest)})" if rest else ""
    return DatasetError(
        str(path), f"this is a case of the {first} task{also}, not of the {this_task} task; run it with "
        f"--groundeval-task={first}",
    )


def find_bundle_file(case_path: Path, name: str, field: str, hint: str) -> Path:
    """The patient Bundle file a case names, looked up in three places.

    Next to the case file, then in a sibling ``extraction/`` directory (a user's own
    ``cases/<task>`` + ``cases/extraction`` layout), then among the packaged extraction fixtures.

    Args:
        case_path: The case file that names the Bundle.
        name: The Bundle's file name as the case gives it.
        field: The case's field that named it, for the message (``patient.fixture``).
        hint: How to fix the case, appended to the message.

    Returns:
        The resolved path.

    Raises:
        DatasetError: No such file in any of those places; the message lists them.
    """
    from groundeval.datasets import default_data_dir

    places = [case_path.parent, case_path.parent.parent / "extraction", default_data_dir("extraction")]
    found = next((d / name for d in places if (d / name).is_file()), None)
    if found is None:
        searched = ", ".join(str(d) for d in places)
        raise DatasetError(str(case_path), f"{field} {name!r} not found (searched {searched}); {hint}")
    return found.resolve()
