"""FHIR agent tools for writing an R4B MedicationStatement, built on HealthChain.

Three tools, each a plain function first and a LangChain ``StructuredTool`` via
:func:`make_tools`:

* :func:`lookup_rxnorm`: ranked RxNorm candidates from the site catalog (a HealthChain
  ``TerminologyLookup``).
* :func:`build_medication_statement`: flat arguments to R4B JSON with
  ``healthchain.fhir.create_dosage`` and ``create_medication_statement``.
* :func:`validate_medication_statement`: ``healthchain.fhir.validate_resource`` (R4B structure and
  required bindings) plus raw-JSON checks (``groundeval.tasks.write.r4b_raw_json``) for what pydantic coerces or
  skips. Problems come back as values, never exceptions.

No tool reads files or the network. No eval logic lives here: the tools do not know the expected
answer. HealthChain and LangChain are imported inside functions (``healthchain.fhir`` costs about
1 s; ``import healthchain`` also wraps ``sys.stdout`` with colorama).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groundeval._healthchain import fhir, import_healthchain
from groundeval.extras import require_extra
from groundeval.fhir.bundle import RXNORM_SYSTEM
from groundeval.tasks.write.r4b_raw_json import STATUS_CODES, UNITS_OF_TIME, Issue, check_medication_statement
from groundeval.terminology import UCUM_SYSTEM, Catalog

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = [
    "STATUS_CODES", "UNITS_OF_TIME", "build_medication_statement", "lookup_rxnorm", "make_tools",
    "medication_statement_report", "r4b_validator_class", "validate_medication_statement",
]

_FIXES = {
    "required": "add the missing element",
    "structure": "remove the element or use its R4B name (see the R4B MedicationStatement page)",
    "code-invalid": "use one of the allowed values listed in the problem",
    "value": "give a value of the type the element requires",
}


def r4b_validator_class() -> type[Any]:
    """Return the model class used to validate: ``fhir.resources.R4B.medicationstatement``'s."""
    from fhir.resources.R4B.medicationstatement import MedicationStatement

    return MedicationStatement


def lookup_rxnorm(catalog: Catalog, query: str, limit: int = 5) -> list[dict[str, Any]]:
    """Search the site catalog for RxNorm codes.

    Args:
        catalog: The site catalog.
        query: Free text: ingredient, brand, strength, release ("metoprolol 25 mg", "Tylenol",
            "toprol xl 100", "levothyroxine 75 mcg").
        limit: Maximum number of results (at least 1).

    Returns:
        Up to ``limit`` dicts, best first, each with ``rxcui``, ``display``, ``system`` (RxNorm
        URI), ``ingredients`` (list of ``{name, strength, unit}``; unit as RxNorm writes it,
        e.g. ``"MG"``), ``dose_form``, ``release``, ``brand`` and ``matched`` (why it ranked).
        Empty when nothing matches.
    """
    return [
        {**catalog.describe(m.entry), "matched": list(m.why)}
        for m in catalog.rank(query)[: max(1, limit)]
    ]


def build_medication_statement(
    *,
    status: str,
    rxcui: str | None,
    display: str | None,
    patient_reference: str,
    dose_value: float | None = None,
    dose_unit: str | None = None,
    frequency: int | None = None,
    period: float | None = None,
    period_unit: str | None = None,
    as_needed: bool | None = None,
    dosage_text: str | None = None,
    medication_text: str | None = None,
    dose_max: float | None = None,
    frequency_max: int | None = None,
    period_max: float | None = None,
) -> dict[str, Any]:
    """Build an R4B MedicationStatement as JSON.

    Uses ``healthchain.fhir.create_dosage`` and ``create_medication_statement`` (no generated
    id, binding warnings off: validate with :func:`validate_medication_statement`). Values are
    written as given, so an illegal ``status`` or ``period_unit`` shows up in validation.

    Args:
        status: R4B status code, e.g. ``"active"``.
        rxcui: RxNorm code; written with system ``http://www.nlm.nih.gov/research/umls/rxnorm``.
            ``None`` for a drug with no code in the catalog: then ``medication_text`` is required
            and ``medicationCodeableConcept`` holds only that text (no invented code).
        display: The RxNorm display, or ``None``.
        patient_reference: ``"Patient/<id>"`` or ``"urn:uuid:<uuid>"``.
        dose_value: Amount per administration, e.g. ``400``.
        dose_unit: UCUM code of ``dose_value`` (``"mg"``, ``"ug"``, ``"mL"``); written as both
            ``unit`` and ``code`` with system ``http://unitsofmeasure.org``.
        frequency: Administrations per period (``Timing.repeat.frequency``).
        period: Length of the period (``Timing.repeat.period``), e.g. ``1``.
        period_unit: UnitsOfTime code (``s|min|h|d|wk|mo|a``).
        as_needed: ``Dosage.asNeededBoolean``.
        dosage_text: Free-text instructions (``Dosage.text``).
        medication_text: ``medicationCodeableConcept.text``: the drug's name as written.
        dose_max: The top of a dose range ("1-2 tablets"): ``dose_value`` is then the bottom,
            and both are written as ``doseRange`` (``low``/``high``, same unit) instead of
            ``doseQuantity`` (https://hl7.org/fhir/R4B/dosage.html).
        frequency_max: The most administrations per period ("two to four times a day":
            ``frequency`` 2, ``frequency_max`` 4): ``Timing.repeat.frequencyMax``.
        period_max: The longest period ("every 6 to 8 hours": ``period`` 6, ``period_max`` 8,
            ``period_unit`` h): ``Timing.repeat.periodMax``.

    Returns:
        The resource as a JSON-safe dict (``model_dump(mode="json", exclude_none=True)``). The
        ``dosage`` element is omitted when no dose argument is given.

    Raises:
        ValueError: ``dose_value`` without ``dose_unit`` or the reverse, ``dose_max`` without
            ``dose_value``, ``frequency_max`` without ``frequency``, ``period_max`` without
            ``period``, an empty ``rxcui`` or
            ``patient_reference``, or values the R4B model rejects (``frequency`` 2.5); the
            message names the argument.
    """
    import_healthchain()
    create_dosage, create_medication_statement = fhir().create_dosage, fhir().create_medication_statement
    from pydantic import ValidationError

    text_only = not rxcui or not str(rxcui).strip()
    if text_only and not (medication_text and medication_text.strip()):
        raise ValueError(
            "rxcui is empty; pass a code returned by lookup_rxnorm, or medication_text (the drug's "
            "name) for a drug the catalog does not have"
        )
    if not patient_reference or not patient_reference.strip():
        raise ValueError("patient_reference is empty; pass 'Patient/<id>' or 'urn:uuid:<uuid>'")
    if (dose_value is None) != (dose_unit is None):
        raise ValueError("dose_value and dose_unit go together; pass both or neither")
    if dose_max is not None and dose_value is None:
        raise ValueError("dose_max is the top of a range whose bottom is dose_value; pass dose_value too")
    if frequency_max is not None and frequency is None:
        raise ValueError("frequency_max is the top of a range whose bottom is frequency; pass frequency too")
    if period_max is not None and period is None:
        raise ValueError("period_max is the top of a range whose bottom is period; pass period too")
    dose_args = (dose_value, frequency, period, period_unit, as_needed, dosage_text)
    try:
        dosage = None
        if any(arg is not None for arg in dose_args):
            dosage = create_dosage(
                text=dosage_text, dose_value=dose_value, dose_unit=dose_unit,
                frequency=frequency, period=period, period_unit=period_unit, as_needed=as_needed,
            )
        resource = create_medication_statement(
            subject=patient_reference.strip(), status=status,
            # HealthChain needs a code to build medication[x]; a text-only concept replaces it below.
            code="0" if text_only else str(rxcui).strip(), display=None if text_only else display,
            system=RXNORM_SYSTEM, dosage=dosage, generate_id=False, warn=False,
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"the R4B model rejected the arguments: {problems}") from exc
    data: dict[str, Any] = resource.model_dump(mode="json", exclude_none=True)
    if text_only:
        data["medicationCodeableConcept"] = {"text": str(medication_text).strip()}
    elif medication_text and medication_text.strip():
        data["medicationCodeableConcept"]["text"] = medication_text.strip()
    for item in data.get("dosage", []):
        for rate in item.get("doseAndRate", []):
            qty = rate.get("doseQuantity")
            if qty is not None and "unit" in qty:  # create_dosage sets unit only
                qty["system"] = UCUM_SYSTEM
                qty["code"] = qty["unit"]
            if qty is not None and dose_max is not None:
                rate["doseRange"] = {"low": rate.pop("doseQuantity"), "high": {**qty, "value": dose_max}}
        repeat = item.get("timing", {}).get("repeat")
        if frequency_max is not None and repeat is not None:
            repeat["frequencyMax"] = frequency_max
        if period_max is not None and repeat is not None:
            repeat["periodMax"] = period_max
    return data


def _healthchain_issues(resource: dict[str, Any]) -> tuple[list[Issue], bool]:
    import_healthchain()
    validate_resource = fhir().validate_resource

    report = validate_resource(resource, resource_type="MedicationStatement", version="R4B")
    if report.fhir_version != "R4B":  # pragma: no cover - guards a HealthChain default change
        raise RuntimeError(f"HealthChain validated against {report.fhir_version}, not R4B")
    issues: list[Issue] = []
    schema_valid = True
    for item in report.issues:
        kind = "binding" if item.code == "code-invalid" else "structure"
        schema_valid &= kind == "binding" or item.severity not in ("error", "fatal")
        issues.append(Issue(
            path=item.expression or "MedicationStatement",
            problem=item.diagnostics,
            fix=_FIXES.get(item.code, "correct the element"),
            severity="error" if item.severity in ("error", "fatal") else item.severity,
            kind=kind,
        ))
    return issues, schema_valid


def validate_medication_statement(resource: dict[str, Any]) -> dict[str, Any]:
    """Validate a MedicationStatement against FHIR R4B. Never raises.

    Runs ``healthchain.fhir.validate_resource`` against R4B (:func:`r4b_validator_class`:
    structure, required elements, required bindings on primitive codes) and
    ``groundeval.tasks.write.r4b_raw_json.check_medication_statement`` on the raw JSON (R4B status value set,
    UnitsOfTime, Timing invariants tim-1/tim-2, strings where numbers or booleans belong, UCUM
    units, literal references, RxNorm coding). When both report the same path, the raw-JSON
    issue (with its specific fix) is kept.

    Args:
        resource: The resource as JSON (a dict), exactly as the agent wrote it.

    Returns:
        ``{"ok": bool, "schema_valid": bool, "fhir_version": "R4B", "issues": [...]}``. ``ok``
        is true when no issue has severity ``"error"``; ``schema_valid`` is true when the R4B
        model accepts the resource (bindings, types and units aside). Each issue has ``path``,
        ``problem``, ``fix``, ``severity`` (``error``/``warning``) and ``kind``
        (see ``groundeval.tasks.write.r4b_raw_json.Issue``).
    """
    try:
        return medication_statement_report(resource)
    except Exception as exc:  # errors are values: a validator crash must not end the agent loop
        issue = Issue(path="MedicationStatement", problem=f"validator error: {exc!r}",
                      fix="check that the resource is plain FHIR JSON", severity="error",
                      kind="structure")
        return {"ok": False, "schema_valid": False, "fhir_version": "R4B", "issues": [issue]}


def medication_statement_report(resource: Any) -> dict[str, Any]:
    """The report of :func:`validate_medication_statement`, for scorers: a crash propagates.

    A validator that breaks is a harness error, never a verdict on the answer, so the scorer
    calls this and lets the exception end the case as a pytest error.

    Raises:
        Exception: Whatever HealthChain or the raw-JSON checks raised.
    """
    if not isinstance(resource, dict):
        issue = Issue(path="MedicationStatement", problem=f"expected a JSON object, got "
                      f"{type(resource).__name__}", fix="pass the resource as a JSON object",
                      severity="error", kind="structure")
        return {"ok": False, "schema_valid": False, "fhir_version": "R4B", "issues": [issue]}
    raw = check_medication_statement(resource)
    model, schema_valid = _healthchain_issues(resource)
    seen = {i["path"] for i in raw}
    issues = raw + [i for i in model if i["path"] not in seen]
    ok = not any(i["severity"] == "error" for i in issues)
    return {"ok": ok, "schema_valid": schema_valid, "fhir_version": "R4B", "issues": issues}


def _bad_arguments(error: Exception) -> str:
    return json.dumps({"ok": False, "error": f"invalid tool arguments: {error}"})


def make_tools(catalog: Catalog, patient_reference: str) -> list[BaseTool]:
    """Package lookup, build and validate as LangChain tools for ``create_agent``.

    Args:
        catalog: The site RxNorm catalog the lookup searches.
        patient_reference: Subject of every built statement (``"Patient/<id>"`` or
            ``"urn:uuid:<uuid>"``); the agent does not pass it.

    Returns:
        ``[lookup_rxnorm, build_medication_statement, validate_medication_statement]`` as
        ``StructuredTool`` objects. Every tool returns a dict; failures, bad arguments included,
        come back as ``{"ok": false, "error": ...}`` and never raise into the agent loop.

    Raises:
        ConfigError: LangChain is not installed (the ``write`` extra).
    """
    require_extra("write", "langchain_core", "the write task's LangChain tools")
    from langchain_core.tools import StructuredTool

    def lookup(query: str, limit: int = 5) -> dict[str, Any]:
        """Search the site's RxNorm catalog for a medication.

        Args:
            query: Ingredient or brand, optionally strength and release, e.g. "metoprolol 25 mg".
            limit: Maximum number of candidates.
        """
        try:
            if not query.strip():
                return {"ok": False, "error": "query is empty; give an ingredient or brand name"}
            results = lookup_rxnorm(catalog, query, limit)
        except Exception as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        out: dict[str, Any] = {"ok": True, "results": results}
        if not results:
            out["hint"] = "no catalog drug matches; retry with the ingredient or brand name alone"
        return out

    def build(
        status: str,
        rxcui: str | None = None,
        display: str | None = None,
        dose_value: float | None = None,
        dose_unit: str | None = None,
        frequency: int | None = None,
        period: float | None = None,
        period_unit: str | None = None,
        as_needed: bool | None = None,
        dosage_text: str | None = None,
        medication_text: str | None = None,
        dose_max: float | None = None,
        frequency_max: int | None = None,
        period_max: float | None = None,
    ) -> dict[str, Any]:
        """Build and validate an R4B MedicationStatement for the patient.

        Args:
            status: R4B status: active, completed, entered-in-error, intended, stopped, on-hold,
                unknown or not-taken.
            rxcui: RxNorm code returned by lookup_rxnorm; leave it out when lookup_rxnorm found
                no match, and give medication_text instead (never invent a code).
            display: RxNorm display; defaults to the catalog display of rxcui.
            dose_value: Amount per administration, e.g. 400.
            dose_unit: UCUM unit of dose_value: mg, g, ug (not mcg), mL.
            frequency: Administrations per period, a whole number.
            period: Length of the period, e.g. 1.
            period_unit: UnitsOfTime code: s, min, h, d, wk, mo or a.
            as_needed: True when taken as needed (PRN).
            dosage_text: The dosage instructions as free text.
            medication_text: The drug's name as written in the note (required without rxcui).
            dose_max: Top of a dose range ("1-2 tablets"); dose_value is then the bottom.
            frequency_max: Most administrations per period ("2 to 4 times a day": frequency 2,
                frequency_max 4).
            period_max: Longest period ("every 6 to 8 hours": period 6, period_max 8, period_unit h).
        """
        try:
            entry = catalog.get(str(rxcui)) if rxcui else None
            resource = build_medication_statement(
                status=status, rxcui=rxcui,
                display=display if display is not None else (entry.display if entry else None),
                patient_reference=patient_reference, dose_value=dose_value, dose_unit=dose_unit,
                frequency=frequency, period=period, period_unit=period_unit,
                as_needed=as_needed, dosage_text=dosage_text, medication_text=medication_text,
                dose_max=dose_max, frequency_max=frequency_max, period_max=period_max,
            )
            report = validate_medication_statement(resource)
        except Exception as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        issues: list[Issue] = list(report["issues"])
        path = "MedicationStatement.medicationCodeableConcept.coding[0]"
        if entry is None and rxcui:
            issues.append(Issue(path=f"{path}.code", problem=f"RxCUI {rxcui!r} is not in the "
                                "site catalog", fix="call lookup_rxnorm and use a returned rxcui",
                                severity="error", kind="coding"))
        elif entry is not None and display is not None and display.lower() not in {
            d.lower() for d in (entry.display, *entry.aliases)
        }:
            issues.append(Issue(path=f"{path}.display", problem=f"display {display!r} differs "
                                f"from the catalog display of {rxcui}",
                                fix=f"use {entry.display!r}", severity="warning", kind="coding"))
        ok = not any(i["severity"] == "error" for i in issues)
        return {"ok": ok, "resource": resource, "issues": issues}

    def validate(resource: dict[str, Any] | str) -> dict[str, Any]:
        """Validate a MedicationStatement (FHIR R4B JSON) and list problems with fixes.

        Args:
            resource: The MedicationStatement as a JSON object.
        """
        try:
            if isinstance(resource, str):
                resource = json.loads(resource)
            return validate_medication_statement(resource)  # type: ignore[arg-type]
        except Exception as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    specs: list[tuple[Callable[..., Any], str, str]] = [
        (lookup, "lookup_rxnorm",
         "Search the site's RxNorm catalog by ingredient, brand, strength or release "
         "(e.g. 'metoprolol 25 mg', 'Tylenol', 'toprol xl 100'). Call this before building: use "
         "a returned rxcui and display, never a code from memory. Results are ranked best first."),
        (build, "build_medication_statement",
         "Build a FHIR R4B MedicationStatement for the patient from flat fields and validate it. "
         "Returns {ok, resource, issues}; when ok is false, fix each issue and call again. "
         f"status is one of {', '.join(STATUS_CODES)}; period_unit one of "
         f"{', '.join(UNITS_OF_TIME)}; dose_unit a UCUM code (mg, ug, mL, or {{tablet}} for a count "
         "of tablets); a range uses dose_max, frequency_max and period_max."),
        (validate, "validate_medication_statement",
         "Validate MedicationStatement JSON against FHIR R4B, including required value sets, "
         "JSON types and UCUM units. Returns {ok, issues[{path, problem, fix}]}. Call it on any "
         "JSON you wrote or edited yourself before giving it as your answer."),
    ]
    return [
        StructuredTool.from_function(
            func=fn, name=name, description=description, parse_docstring=True,
            handle_validation_error=_bad_arguments, handle_tool_error=_bad_arguments,
        )
        for fn, name, description in specs
    ]
