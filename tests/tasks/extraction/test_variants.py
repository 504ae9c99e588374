"""The packaged variant cases: derived by scripts/make_variants.py, covering every truth rule."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundeval.agent_io import AgentRequest
from groundeval.agents.baselines.extraction import BaselineExtractionAgent, NaiveExtractionAgent
from groundeval.clinical.medication_list import active_medications
from groundeval.tasks.extraction.task import ExtractionTask
from tests._paths import REPO

ROOT = REPO
FIXTURES = ROOT / "fixtures" / "extraction"
TASK = ExtractionTask()
RX = {"http://www.nlm.nih.gov/research/umls/rxnorm", "urn:oid:2.16.840.1.113883.6.88"}
ORDERS = {"order", "original-order", "reflex-order", "filler-order", "instance-order"}
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``examples`` is importable from the repository root, as for a user

from examples.custom_agent import CodeableConceptOnlyAgent  # noqa: E402

JSON = dict[str, Any]


def _manifest() -> list[JSON]:
    rows: list[JSON] = json.loads((FIXTURES / "MANIFEST.variants.json").read_text())["variants"]
    return rows


@pytest.fixture(scope="module")
def make_variants(built_script: Callable[[str], ModuleType]) -> ModuleType:
    """``scripts/make_variants.py`` as a module, built once from the session's raw bundles."""
    return built_script("make_variants")


def test_make_variants_check_passes_and_says_what_it_checked(
    make_variants: ModuleType, synthea_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert make_variants.main(["--source", str(synthea_dir), "--check"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert f"checked {len(_manifest())} variant cases and MANIFEST.variants.json" in out
    assert "all current" in out


def test_check_reports_a_stale_and_a_stray_variant(
    make_variants: ModuleType, synthea_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = ["--source", str(synthea_dir), "--out", str(tmp_path)]
    assert make_variants.main(script) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(make_variants.build(synthea_dir))
    first = sorted(tmp_path.glob("variant-*.json"))[0]
    first.write_text(first.read_text().replace('"active"', '"stopped"', 1))
    (tmp_path / "variant-hand-made--x.json").write_text("{}")
    capsys.readouterr()
    assert make_variants.main([*script, "--check"]) == 1
    out, err = capsys.readouterr()
    assert f"stale or missing: {first}" in err
    assert "not made by this script (delete it): " in err and "variant-hand-made--x.json" in err
    assert "1 stale, 1 stray" in out


def test_every_variant_file_is_in_the_manifest_with_its_transformation() -> None:
    rows = {r["fixture"]: r for r in _manifest()}
    files = {p.name for p in FIXTURES.glob("variant-*.json")}
    assert set(rows) == files and len(files) >= 15
    for name, row in rows.items():
        case = TASK.load_case(FIXTURES / name)
        assert row["transformation"] and row["rule"] and row["requests"], name
        assert case.case_id == row["case_id"] and case.case_id.startswith(f"variant-{row['transformation']}--")
        assert case.sha256 == row["fixture_sha256"]
        assert row["truth_after"]["active_medications"] == len(TASK.truth(case)["medications"])


def _requests(bundle: JSON) -> Iterator[JSON]:
    for entry in bundle["entry"]:
        if entry["resource"]["resourceType"] == "MedicationRequest":
            yield entry["resource"]


def _rule_hits(bundle: JSON) -> set[str]:
    """Rules (by README keyword) that decide something about this bundle's truth.

    Written against the raw JSON, independently of clinical.medication_list: an exclusion rule counts when
    the excluded request's RxCUI is absent from the truth, an inclusion rule when it is present.
    """
    patient_entry = next(e for e in bundle["entry"] if e["resource"]["resourceType"] == "Patient")
    pid, full_url = patient_entry["resource"]["id"], patient_entry["fullUrl"]
    by_url = {e.get("fullUrl"): e["resource"] for e in bundle["entry"]}
    by_type_id = {f"{e['resource']['resourceType']}/{e['resource'].get('id')}": e["resource"] for e in bundle["entry"]}
    truth = active_medications(bundle)
    truth_codes = {c for m in truth for c in m["codes"]}
    hits: set[str] = set()
    displays: dict[str, set[str]] = {}
    displayed_anywhere = {  # RxCUIs some request (of any status) gives a display
        c["code"] for r in _requests(bundle) for c in (r.get("medicationCodeableConcept") or {}).get("coding", [])
        if c.get("display")
    }
    active_codes: list[str] = []
    for request in _requests(bundle):
        concept = request.get("medicationCodeableConcept")
        ref = (request.get("medicationReference") or {}).get("reference", "")
        if ref.startswith("#"):
            concept, form = next(c for c in request["contained"] if c["id"] == ref[1:])["code"], "contained #id"
        elif ref in by_url:
            concept, form = by_url[ref]["code"], "medicationReference by fullUrl"
        elif ref in by_type_id:
            concept, form = by_type_id[ref]["code"], "medicationReference by Type/id"
        elif ref:
            concept, form = None, "unresolved"
        else:
            form = "medicationCodeableConcept"
        codings = (concept or {}).get("coding", [])
        codes = {c["code"] for c in codings if c.get("system") in RX}
        listed = bool(codes & truth_codes)
        status, subject = request["status"], request["subject"]["reference"]
        if status != "active":
            hits |= {f"status {status}"} if codes and not listed else set()
            continue
        if request.get("doNotPerform") is True:
            hits |= {"doNotPerform"} if not listed else set()
            continue
        if request["intent"] not in ORDERS:
            hits |= {f"intent {request['intent']}"} if not listed else set()
            continue
        hits.add(f"intent {request['intent']}")
        if subject == full_url:
            hits.add("subject fullUrl")
        elif subject == f"Patient/{pid}":
            hits.add("subject Patient/<id>")
        else:
            hits |= {"subject other absolute URL"} if subject.startswith("https:") and not listed else set()
            continue
        hits.add(form)
        if form == "unresolved" and any(m["kind"] == "unresolved" and m["text"] == ref for m in truth):
            continue
        kinds = [c.get("system") for c in codings]
        if codings and kinds[0] not in RX and codes:
            hits.add("NDC first")
        if any(c.get("system") == "urn:oid:2.16.840.1.113883.6.88" for c in codings):
            hits.add("urn:oid")
        if len(codes) > 1:
            hits.add("branded and generic")
        if not codes and (concept or {}).get("text"):
            hits.add("uncoded")
        for coding in codings:
            if coding.get("system") in RX:
                if coding.get("display"):
                    displays.setdefault(coding["code"], set()).add(coding["display"])
                elif (not (concept or {}).get("text") and coding["code"] in displayed_anywhere
                      and not any(m["displays"].get(coding["code"]) for m in truth)):
                    hits.add("display not borrowed")  # a display exists elsewhere, yet is not expected
        active_codes += sorted(codes)
    if len(active_codes) > len(set(active_codes)):
        hits.add("collapse")
    if any(len(d) > 1 for d in displays.values()):
        hits.add("either display")
    return hits


RULES = [
    *(f"status {s}" for s in ("on-hold", "draft", "entered-in-error", "unknown", "cancelled", "stopped", "completed")),
    "doNotPerform",
    *(f"intent {i}" for i in ("proposal", "plan", "option", *sorted(ORDERS))),
    "subject fullUrl", "subject Patient/<id>", "subject other absolute URL",
    "medicationCodeableConcept", "medicationReference by fullUrl", "medicationReference by Type/id", "contained #id",
    "unresolved", "NDC first", "urn:oid", "branded and generic", "uncoded", "display not borrowed", "collapse",
    "either display",
]
"""The rules the extraction task's docs page (docs/tasks/extraction.md) states (keyword per rule)."""

DOC_WORDS = {
    "status": ["on-hold", "draft", "entered-in-error", "unknown", "cancelled", "stopped", "completed"],
    "doNotPerform": ["doNotPerform"], "intent": ["proposal", "plan", "option", "original-order", "instance-order"],
    "subject": ["Patient/<id>", "fullUrl"], "medicationReference": ["medicationReference", "#id", "Type/id"],
    "coding": ["NDC", "urn:oid:2.16.840.1.113883.6.88", "branded and generic", "uncoded", "unresolved"],
    "display": ["never borrowed", "either is accepted", "collapse"],
}


def test_every_documented_rule_decides_at_least_one_packaged_case() -> None:
    section = (ROOT / "docs" / "tasks" / "extraction.md").read_text(encoding="utf-8")
    for words in DOC_WORDS.values():
        for word in words:
            assert word in section, f"docs/tasks/extraction.md no longer states {word!r}"
    seen: dict[str, list[str]] = {}
    for path in TASK.case_files(FIXTURES):
        for rule in _rule_hits(json.loads(path.read_bytes())):
            seen.setdefault(rule, []).append(path.name)
    missing = [r for r in RULES if r not in seen]
    assert not missing, f"rules no packaged case exercises: {missing}"


def _score(agent: Callable[[AgentRequest], Any], path: Path) -> Any:
    case = TASK.load_case(path)
    text = agent(AgentRequest(case_id=case.case_id, task="extraction", prompt=TASK.prompt(case))).text
    return TASK.score(case, TASK.truth(case), TASK.parse(case, text))


BLIND_SPOTS = {  # what the example agent cannot see: medicationReference, subject, intent, doNotPerform, ...
    "medref-urn-uuid", "medref-relative", "medref-contained", "subject-other-server", "do-not-perform",
    "intent-proposal", "intent-plan", "intent-option", "text-only", "rxnorm-oid",
}


def test_baseline_passes_every_variant_naive_and_the_blind_example_fail_theirs() -> None:
    from groundeval import AgentConfig

    baseline, naive = BaselineExtractionAgent(), NaiveExtractionAgent()
    blind = CodeableConceptOnlyAgent(AgentConfig())
    failed_blind, failed_naive = set(), set()
    for row in _manifest():
        path = FIXTURES / row["fixture"]
        score = _score(baseline.run, path)
        assert score.outcome == "passed", f"{row['fixture']}: {score.message}"
        if _score(blind.run, path).outcome != "passed":
            failed_blind.add(row["transformation"])
        if _score(naive.run, path).outcome != "passed":
            failed_naive.add(row["transformation"])
    assert failed_blind == BLIND_SPOTS
    expected_naive = {r["transformation"] for r in _manifest() if r["transformation"].startswith(("status-", "intent-p"))}
    assert expected_naive | {"do-not-perform", "intent-option"} <= failed_naive


def _big_bundle(n: int) -> JSON:
    pid = "00000000-0000-4000-8000-000000000001"
    entries = [{"fullUrl": f"urn:uuid:{pid}", "resource": {"resourceType": "Patient", "id": pid}}]
    for i in range(n):
        entries.append({"fullUrl": f"urn:uuid:r{i}", "resource": {
            "resourceType": "MedicationRequest", "id": f"r{i}", "status": "active", "intent": "order",
            "subject": {"reference": f"urn:uuid:{pid}"},
            "medicationCodeableConcept": {"coding": [
                {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": str(100000 + i),
                 "display": f"drug {i} 10 MG Oral Tablet"}], "text": f"drug {i} 10 MG Oral Tablet"}}})
    return {"resourceType": "Bundle", "type": "collection", "entry": entries}


def _cpu(fn: Callable[[], object], repeat: int = 2) -> tuple[float, object]:
    """The least CPU time of ``repeat`` calls of ``fn``, and what the last call returned."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        result = fn()
        best = min(best, time.process_time() - start)
    return max(best, 1e-6), result


def test_truth_derivation_is_linear_on_ten_thousand_active_requests() -> None:
    """CPU time relative to json.loads of the same text (the quadratic version was ~1000x)."""
    text = json.dumps(_big_bundle(10_000))
    loads, bundle = _cpu(lambda: json.loads(text))
    assert isinstance(bundle, dict)
    truth, medications = _cpu(lambda: active_medications(bundle))
    assert isinstance(medications, list) and len(medications) == 10_000
    ratio = truth / loads
    assert ratio < 20, f"truth derivation took {ratio:.1f}x json.loads"


def test_many_refills_of_one_drug_collapse_into_one_keeping_every_display() -> None:
    bundle = _big_bundle(3)
    for entry in bundle["entry"][1:]:
        entry["resource"]["medicationCodeableConcept"]["coding"][0]["code"] = "1"
    (med,) = active_medications(bundle)
    assert med["requests"] == ["r0", "r1", "r2"] and len(med["displays"]["1"]) == 3
