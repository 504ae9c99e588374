"""Read-only FHIR tools over one case's Bundle, for the tool-using agents on every task with a Bundle in its context.

Three LangChain tools (``READ_TOOLS``), built per case by :func:`make_read_tools` from the Bundle a
task puts in ``context(case)["bundle"]`` and the site RxNorm catalog, and a fourth
(``OBSERVATION_TOOL``) when the Bundle holds Observations:

* ``get_resources(resource_type)``: every resource of one type in the Bundle, each with its
  entry's ``fullUrl``;
* ``resolve_reference(reference, parent_resource_id=None)``: the resource a reference points at
  (``urn:uuid:...``, ``Type/id``, an absolute URL, or a contained ``#id`` with the id of the
  resource that contains it);
* ``lookup_code(query, limit=10)``: ranked RxNorm codings from the site catalog (brand names
  included: "Tylenol" finds ``Acetaminophen 325 MG Oral Tablet [Tylenol]``);
* ``get_observations(loinc_code)``: the Observations whose ``code`` has that LOINC code, latest
  first (by the effective instant with its UTC offset, a date alone as the start of its UTC day,
  then ``issued``), whatever their status.

They are HealthChain's implementations (``healthchain.tools.FHIRToolkit``, whose ``get_tools()``
gives ``resolve_reference`` and ``lookup_code``, and ``healthchain.fhir.get_resources``), not
groundeval's ground-truth code (``groundeval.fhir.bundle``, ``groundeval.clinical.medication_list``): a scorer that
shared code with the agent's tools could not catch that code's bugs. Two things are added around
them:

* ``get_resources`` pairs each resource with its entry's ``fullUrl`` (HealthChain returns bare
  resources), since whether a subject reference names the patient depends on it;
* ``resolve_reference`` refuses what HealthChain 0.16.1 over-resolves: an absolute reference
  (``https://example.org/fhir/Patient/1``, ``urn:uuid:...``) resolves only to the entry whose
  ``fullUrl`` is exactly that reference (FHIR R4, Bundle, "Resolving references in Bundles":
  https://hl7.org/fhir/R4/bundle.html#references). HealthChain also matches the ``Type/id`` tail
  of any absolute URL and the id part of any ``urn:uuid``, so a MedicationRequest for a patient
  on another server would resolve to this Bundle's Patient.

Shared with groundeval, unavoidably: ``lookup_code`` searches ``groundeval.terminology.Catalog``
(through its HealthChain ``TerminologyLookup.search``), the same site catalog the write task's
scorer checks codes against and the reconcile task may name commissions from. The catalog is
reference data both sides must agree on, not derived truth; its ranking code is the catalog's.

No tool reads a file or the network: the Bundle is validated into R4B models once, in memory,
when the tools are built (``FHIRToolkit(bundle=<dict>)``; a dict is never taken for a path), and
the catalog is loaded by the caller. FHIRToolkit's ``load_bundle`` (a file path),
``build_resource``, ``validate_resource``, ``get_coded_entries`` and ``list_codes`` are not offered.
Every tool returns a JSON-safe dict and reports failures as ``{"ok": false, "error": ...}``
(bad arguments included), never raising into the agent loop.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from groundeval._healthchain import fhir, module
from groundeval.extras import require_extra
from groundeval.fhir.validation import OBSERVATION_STATUSES

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from groundeval.terminology import Catalog

__all__ = ["OBSERVATION_TOOL", "READ_TOOLS", "RXNORM_SYSTEM", "BundleTools", "BundleToolsError", "make_read_tools"]

READ_TOOLS: tuple[str, ...] = ("get_resources", "resolve_reference", "lookup_code")
"""The tool names, in the order :func:`make_read_tools` returns them (a task's ``tools``)."""

OBSERVATION_TOOL = "get_observations"
"""Offered after ``READ_TOOLS`` when the Bundle holds an Observation (the labs task's Bundles do)."""

LOINC_SYSTEM = "http://loinc.org"
"""LOINC's code system URI (https://terminology.hl7.org/CodeSystem-v3-loinc.html)."""

RXNORM_SYSTEM = "http://www.nlm.nih.gov/research/umls/rxnorm"
"""RxNorm's code system URI (https://terminology.hl7.org/CodeSystem-v3-rxNorm.html); kept here, not
imported from ``groundeval.fhir.bundle``, so the tools stay independent of the truth code."""

_DUMP = {"mode": "json", "exclude_none": True}


def _instant(text: object) -> tuple[float, int]:
    """A dateTime as ``(UTC seconds, 1 with a time else 0)``; a date alone is the start of its UTC day (month, year).

    Unreadable or absent: ``(-inf, 0)``, oldest. https://hl7.org/fhir/R4/datatypes.html#dateTime
    """
    from datetime import UTC, datetime

    if not isinstance(text, str) or not text:
        return float("-inf"), 0
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00") if "T" in text else (text + "-01-01")[:10])
    except ValueError:
        return float("-inf"), 0
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp(), int("T" in text)


class BundleToolsError(ValueError):
    """The case's Bundle cannot back the read tools (not a dict, or not a valid R4B Bundle).

    Attributes:
        issues: HealthChain's validation issues as dicts (``severity``, ``code``,
            ``diagnostics``, ``expression``), at most 5; empty when the input was not a dict.
    """

    def __init__(self, message: str, issues: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.issues = issues or []


def _is_absolute(reference: str) -> bool:
    """True for an absolute reference: a URL with a scheme (``https://``, ``urn:uuid:``, ``urn:oid:``)."""
    head = reference.split("/", 1)[0]
    return ":" in head


# Observation.status (``fhir.validation.OBSERVATION_STATUSES``): fhir.resources 8.1.0 lists only
# ``registered, preliminary, final, amended, +`` as the binding's values (the element's short
# description), so HealthChain's ``load_bundle`` refuses ``corrected``, ``cancelled``,
# ``entered-in-error`` and ``unknown`` (FRICTION.md, "fhir.resources").


def _only_observation_status_misread(issues: list[Any], bundle: Mapping[str, Any]) -> bool:
    """True when every validation issue is that misread: a valid Observation.status called invalid."""
    found = bundle.get("entry")
    entries: list[Any] = found if isinstance(found, list) else []
    for issue in issues:
        where = str(getattr(issue, "expression", ""))
        head, _, tail = where.partition("].resource.")
        index = head.removeprefix("Bundle.entry[")
        if getattr(issue, "code", None) != "code-invalid" or tail != "status" or not index.isdigit():
            return False
        entry = entries[int(index)] if int(index) < len(entries) else None
        resource = entry.get("resource") if isinstance(entry, Mapping) else None
        if not isinstance(resource, Mapping) or resource.get("resourceType") != "Observation":
            return False
        if resource.get("status") not in OBSERVATION_STATUSES:
            return False
    return bool(issues)


class BundleTools:
    """The read tools' implementations over one Bundle (plain methods, JSON-safe dicts out).

    Args:
        bundle: The case's Bundle as JSON (a dict), as the task's context gives it.
        lookup: The site catalog, or any HealthChain ``TerminologyLookup``
            (``search(text, system) -> list[Coding]``).

    Raises:
        BundleToolsError: ``bundle`` is not a dict, or HealthChain's ``load_bundle`` rejects it
            (the message lists the first issues with their ``Bundle.entry[i]...`` locations).
        ConfigError: HealthChain is not installed (the ``healthchain`` extra).
    """

    def __init__(self, bundle: Mapping[str, Any], lookup: Catalog | Any) -> None:
        require_extra("healthchain", "healthchain", "the FHIR read tools")
        if not isinstance(bundle, Mapping):
            raise BundleToolsError(f"the Bundle must be a JSON object (a dict), got {type(bundle).__name__}")
        toolkit = module("healthchain.tools").FHIRToolkit
        error = module("healthchain.fhir.validation").FHIRValidationError
        try:  # a dict: validated in memory, never read from a path
            self.kit: Any = toolkit(bundle=dict(bundle), lookup=lookup)
        except error as exc:
            if _only_observation_status_misread(exc.report.issues, bundle):
                from fhir.resources.R4B.bundle import Bundle

                self.kit = toolkit(bundle=Bundle.model_validate(dict(bundle)), lookup=lookup)
                self._tools = {t.name: t for t in self.kit.get_tools()}
                return
            issues = [i.model_dump(**_DUMP) for i in exc.report.issues[:5]]
            where = "; ".join(f"{i.get('expression', '?')}: {i.get('diagnostics', '')}" for i in issues)
            raise BundleToolsError(f"the Bundle is not valid FHIR R4B ({where})", issues) from exc
        self._tools = {t.name: t for t in self.kit.get_tools()}

    def get_resources(self, resource_type: str) -> dict[str, Any]:
        """Every resource of ``resource_type`` in the Bundle, in entry order.

        Args:
            resource_type: A FHIR resource type name, e.g. "MedicationRequest".

        Returns:
            ``{"ok": true, "resource_type", "count", "entries": [{"fullUrl", "resource"}]}``
            (``fullUrl`` absent when the entry has none); with ``count`` 0, ``types_in_bundle``
            lists the resource types the Bundle holds. ``{"ok": false, "error"}`` for an empty type.
        """
        name = resource_type.strip() if isinstance(resource_type, str) else ""
        if not name:
            return {"ok": False, "error": "resource_type is empty; give a FHIR type such as 'MedicationRequest'"}
        bundle = self.kit.bundle
        found = {id(r) for r in fhir().get_resources(bundle, name)}
        entries = []
        for entry in bundle.entry or []:
            if entry.resource is not None and id(entry.resource) in found:
                item: dict[str, Any] = {"resource": entry.resource.model_dump(**_DUMP)}
                if entry.fullUrl:
                    item = {"fullUrl": str(entry.fullUrl), **item}
                entries.append(item)
        out: dict[str, Any] = {"ok": True, "resource_type": name, "count": len(entries), "entries": entries}
        if not entries:
            types = sorted({type(e.resource).__name__ for e in bundle.entry or [] if e.resource is not None})
            out["types_in_bundle"] = types
        return out

    def resolve_reference(self, reference: str, parent_resource_id: str | None = None) -> dict[str, Any]:
        """The resource ``reference`` points at (FHIR R4 Bundle reference rules).

        Args:
            reference: ``urn:uuid:<uuid>``, ``Type/id``, an absolute URL, or ``#id`` for a resource
                contained in the resource whose id is ``parent_resource_id``.
            parent_resource_id: The id of the resource the reference appears in (required for
                ``#id``).

        Returns:
            ``{"ok": true, "resource", "fullUrl"}`` (``fullUrl`` None for a contained resource or
            an entry without one), or ``{"ok": false, "error"}`` when nothing matches.
        """
        if not isinstance(reference, str) or not reference.strip():
            return {"ok": False, "error": "reference is empty; give e.g. 'urn:uuid:...', 'Medication/<id>' or '#<id>'"}
        ref = reference.strip()
        result: dict[str, Any] = self._tools["resolve_reference"].run(
            reference=ref, parent_resource_id=parent_resource_id
        )
        if not result.get("ok") or ref.startswith("#"):
            return {**result, **({"fullUrl": None} if result.get("ok") else {})}
        target = result["resource"]
        match = next(
            (e for e in self.kit.bundle.entry or [] if e.resource is not None
             and type(e.resource).__name__ == target.get("resourceType") and e.resource.id == target.get("id")),
            None,
        )
        full_url = None if match is None or not match.fullUrl else str(match.fullUrl)
        if _is_absolute(ref) and full_url != ref:
            return {"ok": False, "error": (
                f"no entry has fullUrl {ref!r}: an absolute reference resolves only to the entry with exactly "
                "that fullUrl (https://hl7.org/fhir/R4/bundle.html#references), so it names a resource "
                "outside this Bundle"
            )}
        return {"ok": True, "resource": target, "fullUrl": full_url}

    def get_observations(self, loinc_code: str) -> dict[str, Any]:
        """The Observations whose ``code`` carries ``loinc_code`` (system http://loinc.org), latest first.

        Ordered by the effective instant (``effectiveDateTime``, ``effectiveInstant`` or
        ``effectivePeriod.start`` with its UTC offset; a date without a time as the start of that
        day in UTC, before a time at that instant), then ``issued``, newest first; every status is
        returned, as the record holds it (the reader decides what counts). Components are not
        searched: ask for a panel's own code (blood pressure 85354-9), and for its components'
        codes (8480-6, 8462-4), which some systems store as Observations of their own.

        Args:
            loinc_code: A LOINC code, e.g. "4548-4".

        Returns:
            ``{"ok": true, "loinc_code", "count", "entries": [{"fullUrl", "resource"}]}`` (with
            ``loinc_codes_in_bundle`` when there is none), or ``{"ok": false, "error"}`` for an
            empty code.
        """
        code = loinc_code.strip() if isinstance(loinc_code, str) else ""
        if not code:
            return {"ok": False, "error": "loinc_code is empty; give a LOINC code such as '4548-4'"}
        found, codes = [], set()
        for index, entry in enumerate(self.kit.bundle.entry or []):
            if type(entry.resource).__name__ != "Observation":
                continue
            resource = entry.resource.model_dump(**_DUMP)
            loinc = {c.get("code") for c in (resource.get("code") or {}).get("coding") or []
                     if c.get("system") == LOINC_SYSTEM}
            codes |= loinc
            if code in loinc:
                when = (resource.get("effectiveDateTime") or resource.get("effectiveInstant")
                        or (resource.get("effectivePeriod") or {}).get("start") or "")
                item = {**({"fullUrl": str(entry.fullUrl)} if entry.fullUrl else {}), "resource": resource}
                found.append(((*_instant(when), _instant(resource.get("issued"))[0], index), item))
        found.sort(key=lambda pair: pair[0], reverse=True)
        out: dict[str, Any] = {"ok": True, "loinc_code": code, "count": len(found), "entries": [i for _, i in found]}
        if not found:
            out["loinc_codes_in_bundle"] = sorted(c for c in codes if c)
        return out

    def lookup_code(self, query: str, limit: int = 10) -> dict[str, Any]:
        """Ranked RxNorm codings from the site catalog for free text.

        Args:
            query: Ingredient, brand, strength or form ("Tylenol", "lisinopril 10 mg").
            limit: The most results to return (at least 1).

        Returns:
            ``{"ok": true, "results": [{"code", "display", "system"}]}`` best first (with a
            ``hint`` when empty), or ``{"ok": false, "error"}`` for an empty query.
        """
        if not isinstance(query, str) or not query.strip():
            return {"ok": False, "error": "query is empty; give an ingredient or brand name"}
        found = self._tools["lookup_code"].run(query=query.strip(), system=RXNORM_SYSTEM)
        if isinstance(found, dict):  # HealthChain's error value
            return found
        out: dict[str, Any] = {"ok": True, "results": list(found)[: max(1, int(limit))]}
        if not out["results"]:
            out["hint"] = "no catalog drug matches; retry with the ingredient or brand name alone"
        return out


def _bad_arguments(error: Exception) -> str:
    return json.dumps({"ok": False, "error": f"invalid tool arguments: {error}"})


def _guarded(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Turn any exception of a tool into an error value (the agent loop must not see it)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    return run


_DESCRIPTIONS = {
    "get_resources": (
        "List every resource of one FHIR type in the patient's Bundle (e.g. 'Patient', 'MedicationRequest', "
        "'Medication'), each as {fullUrl, resource} in full FHIR R4 JSON. The Bundle is the case's record; "
        "you cannot load any other."
    ),
    "resolve_reference": (
        "Resolve a FHIR reference from the Bundle to the resource it names: 'urn:uuid:...' or an absolute "
        "URL (matched against entry fullUrls only), 'Type/id', or '#id' for a contained resource (then also "
        "pass parent_resource_id, the id of the resource the reference appears in). Returns "
        "{ok, resource, fullUrl} or {ok: false, error} when the target is not in the Bundle."
    ),
    "lookup_code": (
        "Search the site's RxNorm catalog by ingredient, brand name, strength or form (e.g. 'Tylenol', "
        "'lisinopril 10 mg'). Returns {ok, results: [{code, display, system}]}, best first; a branded "
        "product's display names its brand in brackets."
    ),
    "get_observations": (
        "List the patient's Observations with one LOINC code (e.g. '4548-4' for HbA1c, '85354-9' for the blood "
        "pressure panel; some systems store its systolic 8480-6 and diastolic 8462-4 as Observations of their "
        "own), latest first by the effective instant (UTC offsets applied; a date alone as the start of its UTC "
        "day) then issued, each as {fullUrl, resource} in full FHIR R4 JSON. Every status is listed as recorded: "
        "decide yourself which results count."
    ),
}


def make_read_tools(bundle: Mapping[str, Any], lookup: Catalog | Any) -> list[BaseTool]:
    """Package the read tools over one Bundle as LangChain tools for ``create_agent``.

    Args:
        bundle: The case's Bundle as JSON (``task.context(case)["bundle"]``).
        lookup: The site catalog (``groundeval.terminology.Catalog.load()``, loaded by the
            caller: the tools themselves read no file).

    Returns:
        ``StructuredTool`` objects named as in ``READ_TOOLS``, then ``OBSERVATION_TOOL`` when the
        Bundle holds an Observation; each returns a dict and reports failures, bad arguments
        included, as ``{"ok": false, "error": ...}``.

    Raises:
        BundleToolsError: The Bundle is not a dict or not valid FHIR R4B.
        ConfigError: LangChain is not installed (the ``write`` extra).
    """
    require_extra("write", "langchain_core", "the FHIR read tools")
    from langchain_core.tools import StructuredTool

    tools = BundleTools(bundle, lookup)
    names = READ_TOOLS + ((OBSERVATION_TOOL,) if any(
        type(e.resource).__name__ == "Observation" for e in tools.kit.bundle.entry or []) else ())
    return [
        StructuredTool.from_function(
            func=_guarded(getattr(tools, name)), name=name, description=_DESCRIPTIONS[name],
            parse_docstring=True, handle_validation_error=_bad_arguments, handle_tool_error=_bad_arguments,
        )
        for name in names
    ]
