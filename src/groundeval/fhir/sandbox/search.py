"""Search over one case's store: parameters in, a searchset Bundle out.

Follows the R4 spec's search.html (parameters, "Modifying search results": ``_count``,
``_sort``, ``_include``; "Paging": the ``next``/``previous`` links are opaque to the client;
"Handling errors": an unknown parameter is an error under ``Prefer: handling=strict`` and
ignored, with a warning OperationOutcome entry, under ``handling=lenient``) and bundle.html
(``Bundle.type = searchset``, ``total``, ``entry.search.mode`` ``match | include | outcome``).
The sandbox's default handling is strict, as HAPI FHIR's is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from groundeval.fhir.sandbox.matching import check_value, matches, sort_key
from groundeval.fhir.sandbox.outcome import FhirHttpError, operation_outcome
from groundeval.fhir.sandbox.params import COMMON, INCLUDES, PARAMS, RESULT_PARAMS, SearchParam
from groundeval.fhir.sandbox.store import ResourceStore, patient_of

__all__ = ["DEFAULT_COUNT", "MAX_COUNT", "SearchResult", "everything", "search"]

DEFAULT_COUNT = 50
"""Page size when the request gives no ``_count``."""
MAX_COUNT = 500
"""The largest page the sandbox returns (search.html: a server may cap ``_count``)."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A searchset Bundle and the ``Type/id`` of every resource on its page (matches and includes)."""

    bundle: dict[str, Any]
    returned: tuple[str, ...]


def _int_param(name: str, value: str, lo: int) -> int:
    try:
        n = int(value)
    except ValueError:
        n = lo - 1
    if n < lo:
        raise FhirHttpError(400, "invalid", f"Invalid value for {name}: {value!r} (an integer >= {lo})")
    return n


def _ref(res: dict[str, Any]) -> str:
    return f"{res['resourceType']}/{res['id']}"


def _page(
    base_url: str,
    path: str,
    query: Sequence[tuple[str, str]],
    matched: list[dict[str, Any]],
    included_for: Any,
    lenient_warnings: list[str],
    count: int,
    offset: int,
) -> SearchResult:
    page = matched[offset : offset + count]
    entries: list[dict[str, Any]] = [
        {"fullUrl": f"{base_url}/{_ref(r)}", "resource": r, "search": {"mode": "match"}} for r in page
    ]
    seen = {_ref(r) for r in page}
    for inc in included_for(page):
        if _ref(inc) not in seen:
            seen.add(_ref(inc))
            entries.append({"fullUrl": f"{base_url}/{_ref(inc)}", "resource": inc, "search": {"mode": "include"}})
    for warning in lenient_warnings:
        entries.append(
            {"resource": operation_outcome("not-supported", warning, "warning"), "search": {"mode": "outcome"}}
        )
    kept = [(k, v) for k, v in query if k not in ("_getpagesoffset", "_count")]

    def link(relation: str, at: int) -> dict[str, str]:
        q = urlencode([*kept, ("_count", str(count)), ("_getpagesoffset", str(at))])
        return {"relation": relation, "url": f"{base_url}/{path}?{q}"}

    links = [link("self", offset)]
    if offset + count < len(matched):
        links.append(link("next", offset + count))
    if offset > 0:
        links.append(link("previous", max(0, offset - count)))
    bundle = {"resourceType": "Bundle", "type": "searchset", "total": len(matched), "link": links, "entry": entries}
    return SearchResult(bundle, tuple(_ref(e["resource"]) for e in entries if e["search"]["mode"] != "outcome"))


def _paging(query: Sequence[tuple[str, str]]) -> tuple[int, int]:
    count, offset = DEFAULT_COUNT, 0
    for key, value in query:
        if key == "_count":
            count = min(_int_param("_count", value, 0), MAX_COUNT)
        elif key == "_getpagesoffset":
            offset = _int_param("_getpagesoffset", value, 0)
    return count, offset


def search(
    store: ResourceStore, type_: str, query: Sequence[tuple[str, str]], *, base_url: str, lenient: bool = False
) -> SearchResult:
    """Run ``GET [base]/[type_]?query`` against ``store``.

    Args:
        store: The case's resources.
        type_: A served resource type (``params.RESOURCE_TYPES``).
        query: The query's (name, value) pairs in order, names possibly with a ``:modifier``.
        base_url: The server's base, for ``fullUrl`` and the links.
        lenient: ``Prefer: handling=lenient``: unknown parameters are ignored with a warning.

    Returns:
        The searchset Bundle (``total`` counts matches only) and the references it returned.

    Raises:
        FhirHttpError: 400 for an unknown parameter (strict), a malformed value, an unsupported
            modifier, ``_sort`` or ``_include``.
    """
    known = {**COMMON, **PARAMS[type_]}
    filters: list[tuple[SearchParam, str, str | None]] = []
    warnings: list[str] = []
    sorts: list[tuple[SearchParam, bool]] = []
    includes: list[tuple[str, str, str]] = []
    for key, value in query:
        name, _, modifier = key.partition(":")
        if name in known:
            check_value(known[name], value, modifier or None)  # 400 even when no resource is there to match
            filters.append((known[name], value, modifier or None))
        elif name == "_sort":
            for field in value.split(","):
                desc = field.startswith("-")
                sp = known.get(field.lstrip("-"))
                if sp is None:
                    raise FhirHttpError(
                        400,
                        "not-supported",
                        f"Unknown _sort parameter {field!r} for {type_}; supported: {', '.join(sorted(known))}",
                    )
                sorts.append((sp, desc))
        elif name == "_include":
            if value not in INCLUDES or INCLUDES[value][0] != type_:
                raise FhirHttpError(
                    400,
                    "not-supported",
                    f"_include={value} is not supported for {type_}; "
                    f"supported: {', '.join(k for k, v in INCLUDES.items() if v[0] == type_) or 'none'}",
                )
            includes.append(INCLUDES[value])
        elif name == "_total" and value not in ("none", "estimate", "accurate"):
            raise FhirHttpError(400, "invalid", f"_total={value} is not one of none, estimate, accurate")
        elif name in RESULT_PARAMS:
            continue
        elif lenient:
            warnings.append(f"Unknown search parameter {key!r} for {type_} was ignored")
        else:
            raise FhirHttpError(
                400,
                "not-supported",
                f"Unknown search parameter {key!r} for resource type "
                f"{type_}; valid parameters: {', '.join(sorted(known))}",
            )
    count, offset = _paging(query)
    matched = [r for r in store.all_of(type_) if all(matches(r, sp, v, m) for sp, v, m in filters)]
    for sp, desc in reversed(sorts):  # stable sorts, last key first
        keyed = [(sort_key(r, sp), r) for r in matched]
        present = sorted((kr for kr in keyed if kr[0][0] == 0), key=lambda kr: kr[0][1], reverse=desc)
        matched = [r for _, r in present] + [r for k, r in keyed if k[0] == 1]

    def included_for(page: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _, element, target in includes:
            for res in page:
                ref = (res.get(element) or {}).get("reference", "")
                if ref.startswith(f"{target}/"):
                    got = store.get(target, ref.split("/", 1)[1])
                    if got is not None:
                        out.append(got)
        return out

    return _page(base_url, type_, query, matched, included_for, warnings, count, offset)


def everything(
    store: ResourceStore, patient_id: str, query: Sequence[tuple[str, str]], *, base_url: str
) -> SearchResult:
    """``GET [base]/Patient/[id]/$everything``: the patient and every served resource in its compartment.

    patient-operation-everything.html: the result is a searchset Bundle of the Patient, the
    resources in its compartment and the resources they reference (here: Medications named by
    ``medicationReference``); ``_count`` pages it.

    Raises:
        FhirHttpError: 400 for a parameter other than ``_count`` (``start``/``end``/``_since``/
            ``_type`` are not supported).
    """
    for key, _ in query:
        if key not in ("_count", "_getpagesoffset"):
            raise FhirHttpError(
                400, "not-supported", f"Parameter {key!r} of $everything is not supported; supported: _count"
            )
    count, offset = _paging(query)
    me = f"Patient/{patient_id}"
    members = [r for r in store if patient_of(r) == me]
    members.sort(key=lambda r: (r["resourceType"] != "Patient", r["resourceType"]))
    refs = {_ref(r) for r in members}
    for res in list(members):
        ref = (res.get("medicationReference") or {}).get("reference", "")
        if ref.startswith("Medication/") and ref not in refs:
            got = store.get("Medication", ref.split("/", 1)[1])
            if got is not None:
                refs.add(ref)
                members.append(got)
    return _page(base_url, f"Patient/{patient_id}/$everything", query, members, lambda page: [], [], count, offset)
