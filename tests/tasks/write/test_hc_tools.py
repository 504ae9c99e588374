"""HealthChain-based tools: build, validate (fault case 06 and 07), lookup, LangChain packaging."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from groundeval.tasks.write.tools import (
    STATUS_CODES,
    UNITS_OF_TIME,
    build_medication_statement,
    lookup_rxnorm,
    make_tools,
    r4b_validator_class,
    validate_medication_statement,
)
from groundeval.terminology import Catalog

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
UCUM = "http://unitsofmeasure.org"
IBUPROFEN = {"coding": [{"system": RXNORM, "code": "310965",
                         "display": "Ibuprofen 200 MG Oral Tablet"}]}
MS = "MedicationStatement"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.load()


def _statement(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "resourceType": MS, "status": "active", "medicationCodeableConcept": IBUPROFEN,
        "subject": {"reference": "Patient/pt-001"},
        "dosage": [{"timing": {"repeat": {"frequency": 3, "period": 1, "periodUnit": "d"}},
                    "asNeededBoolean": False,
                    "doseAndRate": [{"doseQuantity": {"value": 400, "unit": "mg",
                                                      "system": UCUM, "code": "mg"}}]}],
    }
    base.update(changes)
    return base


def _paths(result: dict[str, Any], severity: str = "error") -> set[str]:
    return {i["path"] for i in result["issues"] if i["severity"] == severity}


# --- validation --------------------------------------------------------------------------------


def test_validator_class_is_r4b() -> None:
    from healthchain.fhir import get_fhir_resource

    cls = r4b_validator_class()
    assert cls.__module__.startswith("fhir.resources.R4B.")
    assert get_fhir_resource(MS, "R4B") is cls
    assert STATUS_CODES == ("active", "completed", "entered-in-error", "intended", "stopped",
                            "on-hold", "unknown", "not-taken")
    assert UNITS_OF_TIME == ("s", "min", "h", "d", "wk", "mo", "a")


def test_case_07_coerced_types_and_unenforced_bindings() -> None:
    resource = _statement(status="taking")
    resource["dosage"][0]["timing"]["repeat"]["periodUnit"] = "day"
    resource["dosage"][0]["asNeededBoolean"] = "no"
    resource["dosage"][0]["doseAndRate"][0]["doseQuantity"]["value"] = "400"
    r4b_validator_class().model_validate(resource)  # pydantic alone accepts all of it

    result = validate_medication_statement(resource)
    assert result["ok"] is False
    assert result["schema_valid"] is True
    dosage = f"{MS}.dosage[0]"
    assert _paths(result) == {
        f"{MS}.status",
        f"{dosage}.timing.repeat.periodUnit",
        f"{dosage}.asNeededBoolean",
        f"{dosage}.doseAndRate[0].doseQuantity.value",
    }
    fixes = {i["path"]: i["fix"] for i in result["issues"]}
    assert "'active'" in fixes[f"{MS}.status"]
    assert fixes[f"{dosage}.timing.repeat.periodUnit"].startswith("use 'd'")
    kinds = {i["path"]: i["kind"] for i in result["issues"]}
    assert kinds[f"{dosage}.asNeededBoolean"] == "type"
    assert kinds[f"{MS}.status"] == "binding"


def test_case_06_r5_shape_fails_schema() -> None:
    resource = {"resourceType": MS, "status": "recorded", "medication": {"concept": IBUPROFEN},
                "subject": {"reference": "Patient/pt-001"}}
    result = validate_medication_statement(resource)
    assert result["schema_valid"] is False
    assert result["ok"] is False
    assert _paths(result) == {f"{MS}.medication", f"{MS}.status"}
    medication = next(i for i in result["issues"] if i["path"] == f"{MS}.medication")
    assert "medicationCodeableConcept" in medication["fix"]


def test_case_06_r4b_shape_with_r5_status_fails_constraints_only() -> None:
    resource = {"resourceType": MS, "status": "recorded", "medicationCodeableConcept": IBUPROFEN,
                "subject": {"reference": "Patient/pt-001"}}
    result = validate_medication_statement(resource)
    assert result["schema_valid"] is True
    assert result["ok"] is False
    [issue] = result["issues"]
    assert issue["path"] == f"{MS}.status"
    assert "R5" in issue["problem"]
    fixed = validate_medication_statement({**resource, "status": "active"})
    assert fixed == {"ok": True, "schema_valid": True, "fhir_version": "R4B", "issues": []}


@pytest.mark.parametrize(
    ("change", "path", "severity", "needle"),
    [
        (lambda r: r["dosage"][0]["timing"]["repeat"].update(frequency=3.0),
         "dosage[0].timing.repeat.frequency", "error", "e.g. 3"),
        (lambda r: r["dosage"][0]["timing"]["repeat"].update(period="1"),
         "dosage[0].timing.repeat.period", "error", "without quotes"),
        (lambda r: r["dosage"][0]["timing"]["repeat"].pop("periodUnit"),
         "dosage[0].timing.repeat.periodUnit", "error", "add periodUnit"),
        (lambda r: r["dosage"][0]["timing"]["repeat"].pop("period"),
         "dosage[0].timing.repeat.period", "warning", "frequency 3, period 1"),
        (lambda r: r["dosage"][0]["doseAndRate"][0]["doseQuantity"].update(code="mcg"),
         "dosage[0].doseAndRate[0].doseQuantity.code", "error", "'ug'"),
        (lambda r: r["dosage"][0]["doseAndRate"][0]["doseQuantity"].update(code="MG"),
         "dosage[0].doseAndRate[0].doseQuantity.code", "error", "'mg'"),
        (lambda r: r["dosage"][0]["doseAndRate"][0]["doseQuantity"].pop("system"),
         "dosage[0].doseAndRate[0].doseQuantity.system", "error", UCUM),
        (lambda r: [r["dosage"][0]["doseAndRate"][0]["doseQuantity"].pop(k) for k in ("system", "code")],
         "dosage[0].doseAndRate[0].doseQuantity.system", "warning", UCUM),
        (lambda r: r["dosage"][0]["doseAndRate"][0]["doseQuantity"].update(system="http://example.org/units"),
         "dosage[0].doseAndRate[0].doseQuantity.system", "warning", UCUM),
        (lambda r: r.update(subject={"reference": "Patient/urn:uuid:00000000-0000-4000-8000-"
                                                  "000000000001"}),
         "subject.reference", "error", "urn:uuid"),
        (lambda r: r.update(subject={"display": "the patient"}),
         "subject.reference", "warning", "Patient/<id>"),
        (lambda r: r["medicationCodeableConcept"]["coding"][0].update(code=310965),
         "medicationCodeableConcept.coding[0].code", "error", "digits"),
        (lambda r: r["medicationCodeableConcept"]["coding"][0].update(system="http://snomed.info/sct"),
         "medicationCodeableConcept.coding", "warning", RXNORM),
    ],
)
def test_raw_json_checks(change: Any, path: str, severity: str, needle: str) -> None:
    resource = json.loads(json.dumps(_statement()))
    change(resource)
    result = validate_medication_statement(resource)
    issues = [i for i in result["issues"] if i["path"] == f"{MS}.{path}"]
    assert len(issues) == 1, result
    assert issues[0]["severity"] == severity
    assert needle in issues[0]["fix"]
    assert result["ok"] is (severity == "warning" and not _paths(result))


@pytest.mark.parametrize(
    "subject", ["Patient/pt-001", "urn:uuid:00000000-0000-4000-8000-000000000001",
                "https://example.org/fhir/Patient/pt-001"],
)
def test_valid_subject_forms_pass(subject: str) -> None:
    result = validate_medication_statement(_statement(subject={"reference": subject}))
    assert result["ok"] is True, result


def test_missing_subject_is_a_structural_error() -> None:
    resource = _statement()
    del resource["subject"]
    result = validate_medication_statement(resource)
    assert result["schema_valid"] is False
    assert f"{MS}.subject" in _paths(result)


@pytest.mark.parametrize(
    "resource",
    [None, [], "text", 5, {}, {"resourceType": 5}, {"resourceType": MS, "status": ["a"]},
     {"resourceType": MS, "dosage": "x"}, {"resourceType": MS, "dosage": [5, {"timing": 5}]},
     {"resourceType": MS, "dosage": [{"doseAndRate": 5, "timing": {"repeat": {
         "frequency": float("nan"), "periodUnit": 7}}}]},
     {"resourceType": MS, "medicationCodeableConcept": {"coding": 5}, "subject": {"reference": 5}},
     {"resourceType": MS, "dosage": [{"doseAndRate": [{"doseQuantity": {"value": True}}]}]}],
)
def test_validation_never_raises(resource: Any) -> None:
    result = validate_medication_statement(resource)
    assert result["ok"] is False
    assert result["issues"]
    assert all(set(i) == {"path", "problem", "fix", "severity", "kind"} for i in result["issues"])
    json.dumps(result)


# --- build ----------------------------------------------------------------------------------


def test_build_full_statement() -> None:
    resource = build_medication_statement(
        status="active", rxcui="310965", display="Ibuprofen 200 MG Oral Tablet",
        patient_reference="Patient/pt-001", dose_value=400, dose_unit="mg", frequency=3,
        period=1, period_unit="d", as_needed=False, dosage_text="two tablets three times a day",
    )
    expected = _statement()
    expected["dosage"][0]["text"] = "two tablets three times a day"
    assert resource == expected
    assert validate_medication_statement(resource)["ok"] is True


def test_build_without_dose_info_omits_dosage() -> None:
    resource = build_medication_statement(
        status="unknown", rxcui="310965", display=None,
        patient_reference="urn:uuid:00000000-0000-4000-8000-000000000001")
    assert "dosage" not in resource
    assert resource["medicationCodeableConcept"] == {"coding": [{"system": RXNORM,
                                                                 "code": "310965"}]}
    only_text = build_medication_statement(status="active", rxcui="1", display=None,
                                           patient_reference="Patient/p", dosage_text="as needed")
    assert only_text["dosage"] == [{"text": "as needed"}]


def test_build_keeps_bad_codes_for_validation_to_report() -> None:
    resource = build_medication_statement(
        status="taking", rxcui="310965", display=None, patient_reference="Patient/pt-001",
        frequency=3, period=1, period_unit="day")
    assert resource["status"] == "taking"
    assert _paths(validate_medication_statement(resource)) == {
        f"{MS}.status", f"{MS}.dosage[0].timing.repeat.periodUnit"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"dose_value": 400}, "go together"), ({"dose_unit": "mg"}, "go together"),
     ({"frequency": 2.5}, "rejected"), ({"rxcui": " "}, "rxcui is empty"),
     ({"patient_reference": ""}, "patient_reference is empty")],
)
def test_build_rejects_unbuildable_arguments(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"status": "active", "rxcui": "310965", "display": None,
                            "patient_reference": "Patient/pt-001", **kwargs}
    with pytest.raises(ValueError, match=message):
        build_medication_statement(**args)


# --- lookup and LangChain tools --------------------------------------------------------------


def test_lookup_rxnorm_returns_ranked_json(catalog: Catalog) -> None:
    results = lookup_rxnorm(catalog, "toprol xl 100", limit=1)
    assert results == [{
        "rxcui": "866414",
        "display": "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet [Toprol]",
        "system": RXNORM,
        "ingredients": [{"name": "metoprolol succinate", "strength": 100.0, "unit": "MG"}],
        "dose_form": "Extended Release Oral Tablet", "release": "24 HR", "brand": "Toprol",
        "matched": ["name", "brand", "strength", "release"],
    }]
    assert lookup_rxnorm(catalog, "nothing like it") == []


def test_make_tools_errors_are_values(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_core.tools import BaseTool

    lookup, build, validate = make_tools(catalog, "Patient/pt-001")
    assert all(isinstance(t, BaseTool) for t in (lookup, build, validate))
    assert [t.name for t in (lookup, build, validate)] == [
        "lookup_rxnorm", "build_medication_statement", "validate_medication_statement"]
    assert "patient_reference" not in build.args

    assert lookup.invoke({"query": "Tylenol", "limit": 1})["results"][0]["rxcui"] == "209387"
    assert lookup.invoke({"query": "zzz"})["results"] == []
    assert lookup.invoke({"query": " "})["ok"] is False

    built = build.invoke({"status": "active", "rxcui": "310965", "dose_value": 400,
                          "dose_unit": "mg", "frequency": 3, "period": 1, "period_unit": "d"})
    assert built["ok"] is True, built
    assert built["resource"]["subject"] == {"reference": "Patient/pt-001"}
    assert built["resource"]["medicationCodeableConcept"]["coding"][0]["display"] == (
        "Ibuprofen 200 MG Oral Tablet")

    unknown = build.invoke({"status": "active", "rxcui": "999"})
    assert unknown["ok"] is False
    assert any("not in the site catalog" in i["problem"] for i in unknown["issues"])
    renamed = build.invoke({"status": "active", "rxcui": "310965", "display": "Advil"})
    assert renamed["ok"] is True
    assert any(i["severity"] == "warning" and i["kind"] == "coding" for i in renamed["issues"])

    bad_args = json.loads(build.invoke({"status": "active", "rxcui": "1", "frequency": 2.5}))
    assert bad_args["ok"] is False and "frequency" in bad_args["error"]
    unpaired = build.invoke({"status": "active", "rxcui": "310965", "dose_value": 1})
    assert unpaired["ok"] is False and "go together" in unpaired["error"]

    assert validate.invoke({"resource": _statement()})["ok"] is True
    assert validate.invoke({"resource": json.dumps(_statement())})["ok"] is True
    assert validate.invoke({"resource": "{not json"})["ok"] is False

    def boom(text: str) -> list[Any]:
        raise RuntimeError("index corrupted")

    monkeypatch.setattr(catalog, "rank", boom)
    assert lookup.invoke({"query": "Tylenol"}) == {
        "ok": False, "error": "RuntimeError: index corrupted"}


def test_tools_run_inside_create_agent(catalog: Catalog) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from groundeval.testing.scripted_chat import ScriptedChatModel

    script = [
        AIMessage("", tool_calls=[{"name": "lookup_rxnorm", "args": {"query": "ibuprofen 200"},
                                   "id": "1"}]),
        AIMessage("", tool_calls=[{"name": "build_medication_statement", "id": "2", "args": {
            "status": "active", "rxcui": "310965", "dose_value": 400, "dose_unit": "mg",
            "frequency": 3, "period": 1, "period_unit": "day"}}]),
        AIMessage("", tool_calls=[{"name": "build_medication_statement", "id": "3",
                                   "args": {"status": "active", "rxcui": "310965",
                                            "frequency": "often"}}]),
        AIMessage("done"),
    ]
    model = ScriptedChatModel(steps=script)
    agent = create_agent(model, make_tools(catalog, "Patient/pt-001"))
    messages = agent.invoke({"messages": [HumanMessage("ibuprofen 400 mg tid")]})["messages"]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    # errors are values: a tool body's failure keeps status "success"; LangChain marks an argument
    # validation failure "error" even when handle_validation_error turns it into content
    assert [m.status for m in tool_messages] == ["success", "success", "error"]
    assert "310965" in str(tool_messages[0].content)
    assert "UnitsOfTime" in str(tool_messages[1].content)
    assert '"ok": false' in str(tool_messages[2].content)
    assert messages[-1].content == "done"
    assert model.calls == 4 and "lookup_rxnorm" in model.bound_tools


def test_importing_the_tools_loads_neither_healthchain_nor_langchain() -> None:
    code = ("import sys, groundeval.tasks.write.tools, groundeval.terminology; "
            "print(sorted(m for m in ('healthchain', 'langchain_core', 'fhir.resources') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_healthchain_import_leaves_stdout_alone() -> None:
    code = ("import sys; out = sys.stdout; "
            "from groundeval.tasks.write.tools import validate_medication_statement as v; v({}); "
            "from groundeval.terminology import Catalog; Catalog.load().search('x'); "
            "import healthchain; print(sys.stdout is out)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "True"


def test_a_drug_missing_from_the_catalog_is_built_as_text_only_without_a_code() -> None:
    from groundeval.tasks.write.tools import build_medication_statement, validate_medication_statement

    resource = build_medication_statement(
        status="active", rxcui=None, display=None, patient_reference="Patient/p1", medication_text="gabapentin",
    )
    assert resource["medicationCodeableConcept"] == {"text": "gabapentin"}
    report = validate_medication_statement(resource)
    assert all(i["severity"] != "error" for i in report["issues"]), report
    with pytest.raises(ValueError, match="medication_text"):
        build_medication_statement(status="active", rxcui=None, display=None, patient_reference="Patient/p1")
