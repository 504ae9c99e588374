"""The read-only FHIR tools on the packaged extraction fixtures (groundeval.fhir.read_tools)."""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest

from groundeval.fhir.read_tools import READ_TOOLS, BundleTools, BundleToolsError, make_read_tools
from groundeval.terminology import Catalog
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"
VARIANTS = {v["transformation"]: v for v in json.loads((FIXTURES / "MANIFEST.variants.json").read_text())["variants"]}


@cache
def catalog() -> Catalog:
    return Catalog.load()


def bundle_of(transformation: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / VARIANTS[transformation]["fixture"]).read_text())
    return data


def changed_request(bundle: dict[str, Any], transformation: str) -> dict[str, Any]:
    """The MedicationRequest the variant script changed (its id is listed in the manifest)."""
    (rid, *_) = VARIANTS[transformation]["requests"]
    return next(e["resource"] for e in bundle["entry"] if e["resource"].get("id") == rid)


def tools_for(bundle: dict[str, Any]) -> dict[str, Any]:
    return {t.name: t for t in make_read_tools(bundle, catalog())}


# -- the tools ------------------------------------------------------------------------------

def test_the_tools_are_the_three_read_tools_and_none_takes_a_path() -> None:
    tools = make_read_tools(bundle_of("medref-urn-uuid"), catalog())
    assert tuple(t.name for t in tools) == READ_TOOLS == ("get_resources", "resolve_reference", "lookup_code")
    args = {name for t in tools for name in t.args}
    assert args == {"resource_type", "reference", "parent_resource_id", "query", "limit"}
    assert not {"path", "source", "file", "url"} & args


def test_get_resources_lists_every_resource_of_a_type_with_its_full_url() -> None:
    bundle = bundle_of("display-two-spellings")
    raw = [e for e in bundle["entry"] if e["resource"]["resourceType"] == "MedicationRequest"]
    out = tools_for(bundle)["get_resources"].invoke({"resource_type": "MedicationRequest"})
    assert out["ok"] is True and out["count"] == len(raw) > 0
    assert [e["fullUrl"] for e in out["entries"]] == [e["fullUrl"] for e in raw]
    assert [e["resource"]["id"] for e in out["entries"]] == [e["resource"]["id"] for e in raw]
    # displays come back character for character (the two spellings of one RxCUI survive)
    got = {c["display"] for e in out["entries"] for c in e["resource"].get("medicationCodeableConcept", {}).get("coding", [])}
    want = {c["display"] for e in raw for c in e["resource"].get("medicationCodeableConcept", {}).get("coding", [])}
    assert got == want
    (patient,) = tools_for(bundle)["get_resources"].invoke({"resource_type": "Patient"})["entries"]
    assert patient["fullUrl"] == next(e["fullUrl"] for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")


def test_get_resources_of_an_absent_type_names_the_types_there_are() -> None:
    out = tools_for(bundle_of("medref-contained"))["get_resources"].invoke({"resource_type": "Medication"})
    assert out == {"ok": True, "resource_type": "Medication", "count": 0, "entries": [],
                   "types_in_bundle": ["MedicationRequest", "Patient"]}
    assert tools_for(bundle_of("medref-contained"))["get_resources"].invoke({"resource_type": " "})["ok"] is False


@pytest.mark.parametrize("transformation", ["medref-urn-uuid", "medref-relative"])
def test_resolve_reference_follows_a_medication_reference_to_the_bundled_medication(transformation: str) -> None:
    bundle = bundle_of(transformation)
    ref = changed_request(bundle, transformation)["medicationReference"]["reference"]
    assert ref.startswith("urn:uuid:" if transformation == "medref-urn-uuid" else "Medication/")
    target = next(e for e in bundle["entry"] if e["resource"]["resourceType"] == "Medication"
                  and (e["fullUrl"] == ref or f"Medication/{e['resource']['id']}" == ref))
    out = tools_for(bundle)["resolve_reference"].invoke({"reference": ref})
    assert out["ok"] is True and out["fullUrl"] == target["fullUrl"]
    assert out["resource"]["code"] == target["resource"]["code"]


def test_a_contained_reference_needs_and_uses_the_parent_id() -> None:
    bundle = bundle_of("medref-contained")
    request = changed_request(bundle, "medref-contained")
    ref = request["medicationReference"]["reference"]
    tools = tools_for(bundle)
    without = tools["resolve_reference"].invoke({"reference": ref})
    assert without["ok"] is False and "parent_resource_id" in without["error"]
    out = tools["resolve_reference"].invoke({"reference": ref, "parent_resource_id": request["id"]})
    assert out == {"ok": True, "resource": request["contained"][0], "fullUrl": None}


def test_a_dangling_reference_is_an_error_value() -> None:
    bundle = bundle_of("dangling-reference")
    ref = changed_request(bundle, "dangling-reference")["medicationReference"]["reference"]
    out = tools_for(bundle)["resolve_reference"].invoke({"reference": ref})
    assert out["ok"] is False and "not found" in out["error"]


def test_an_absolute_reference_resolves_only_to_the_entry_with_that_full_url() -> None:
    # HealthChain 0.16.1 matches the Type/id tail of any absolute URL; FHIR does not
    # (https://hl7.org/fhir/R4/bundle.html#references): this subject is a patient on another server.
    bundle = bundle_of("subject-other-server")
    subject = changed_request(bundle, "subject-other-server")["subject"]["reference"]
    assert subject.startswith("https://")
    tools = tools_for(bundle)
    out = tools["resolve_reference"].invoke({"reference": subject})
    assert out["ok"] is False and "outside this Bundle" in out["error"]
    patient = next(e for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")
    own = tools["resolve_reference"].invoke({"reference": patient["fullUrl"]})
    assert own["ok"] is True and own["resource"]["id"] == patient["resource"]["id"]
    relative = tools["resolve_reference"].invoke({"reference": f"Patient/{patient['resource']['id']}"})
    assert relative["ok"] is True and relative["fullUrl"] == patient["fullUrl"]


def test_lookup_code_finds_a_brand_in_the_site_catalog() -> None:
    tools = tools_for(bundle_of("medref-urn-uuid"))
    out = tools["lookup_code"].invoke({"query": "Tylenol", "limit": 2})
    assert out["ok"] is True and len(out["results"]) == 2
    assert out["results"][0]["code"] == "209387" and "[Tylenol]" in out["results"][0]["display"]
    assert out["results"][0]["system"] == "http://www.nlm.nih.gov/research/umls/rxnorm"
    assert tools["lookup_code"].invoke({"query": "zzzz-no-such-drug"})["results"] == []
    assert tools["lookup_code"].invoke({"query": ""})["ok"] is False


def test_bad_arguments_come_back_as_error_values() -> None:
    tools = tools_for(bundle_of("medref-urn-uuid"))
    out = json.loads(tools["get_resources"].invoke({}))
    assert out["ok"] is False and "invalid tool arguments" in out["error"]


def test_a_bundle_that_is_not_valid_r4b_is_refused_when_the_tools_are_built() -> None:
    bundle = bundle_of("medref-urn-uuid")
    broken = json.loads(json.dumps(bundle))
    request = next(e["resource"] for e in broken["entry"] if e["resource"]["resourceType"] == "MedicationRequest")
    del request["subject"]
    with pytest.raises(BundleToolsError, match=r"not valid FHIR R4B .*subject") as info:
        BundleTools(broken, catalog())
    assert info.value.issues and info.value.issues[0]["expression"].startswith("Bundle.entry[")
    with pytest.raises(BundleToolsError, match="must be a JSON object"):
        BundleTools("fixtures/extraction/x.json", catalog())  # type: ignore[arg-type]


# -- no file, no network --------------------------------------------------------------------

_FORBIDDEN = ("open", "os.listdir", "os.scandir", "glob.glob", "socket.connect", "socket.getaddrinfo",
              "socket.bind", "urllib.Request", "subprocess.Popen", "os.system")
_guard: dict[str, int | None] = {"thread": None}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _guard["thread"] == threading.get_ident() and event in _FORBIDDEN:
        raise PermissionError(f"{event} {args[:1]!r} inside a read tool")


@contextmanager
def no_io() -> Iterator[None]:
    """Raise PermissionError on any file open, directory listing, socket or subprocess in this thread."""
    if _audit not in _installed:  # audit hooks cannot be removed: install once, armed per block
        sys.addaudithook(_audit)
        _installed.append(_audit)
    _guard["thread"] = threading.get_ident()
    try:
        yield
    finally:
        _guard["thread"] = None


_installed: list[Any] = []


def test_the_guard_catches_a_file_read_and_a_socket() -> None:
    with no_io(), pytest.raises(PermissionError, match="open"):
        FIXTURES.joinpath("MANIFEST.json").read_text()
    with no_io(), pytest.raises(PermissionError, match="socket"):
        socket.getaddrinfo("localhost", 80)


def test_no_tool_reads_a_file_or_the_network() -> None:
    for transformation in ("medref-urn-uuid", "medref-relative", "medref-contained", "subject-other-server"):
        bundle = bundle_of(transformation)
        request = changed_request(bundle, transformation)
        ref = (request.get("medicationReference") or request["subject"])["reference"]
        calls = [("get_resources", {"resource_type": "MedicationRequest"}),
                 ("get_resources", {"resource_type": "NoSuchType"}),
                 ("resolve_reference", {"reference": ref, "parent_resource_id": request["id"]}),
                 ("resolve_reference", {"reference": "/etc/passwd"}),
                 ("lookup_code", {"query": "Tylenol 325 mg"})]
        warm = tools_for(bundle)
        for name, args in calls:  # once unguarded: first-use imports may read modules from disk
            warm[name].invoke(args)
        with no_io():  # building the tools (validating the Bundle) and every call
            tools = tools_for(bundle)
            results = [tools[name].invoke(args) for name, args in calls]
        assert all(isinstance(r, dict) for r in results)
        assert not any("PermissionError" in json.dumps(r) for r in results)
        assert results[2]["ok"] is (transformation != "subject-other-server")
        assert bundle == bundle_of(transformation)  # the context's Bundle, which the truth reads, is untouched
    assert "load_bundle" not in {t.name for t in make_read_tools(bundle_of("medref-urn-uuid"), catalog())}
