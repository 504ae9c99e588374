"""The documented example: an agent that is its own process, evaluated with --groundeval-tools=mcp."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("mcp")

from tests._paths import REPO


def test_an_agent_in_its_own_process_is_evaluated_and_its_calls_traced_by_the_server(pytester: pytest.Pytester) -> None:
    shutil.copy(REPO / "examples" / "mcp_agent.py", pytester.path / "mcp_agent.py")
    data = pytester.path / "data"
    data.mkdir()
    for path in sorted((REPO / "fixtures" / "extraction").glob("[!M]*.json"))[:2]:
        shutil.copy(path, data / path.name)
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-option=bundle_in_prompt=false", "--groundeval-data-dir=data",
        "--groundeval-agent=mcp_agent:agent", "--groundeval-tools=mcp", "--groundeval-out-dir=runs",
        "-p", "no:cacheprovider", "-o", "pythonpath=.",
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    (record,) = (pytester.path / "runs").glob("*.json")
    cases = json.loads(record.read_text())["cases"]
    assert len(cases) == 2
    for case in cases:
        assert case["outcome"] in ("passed", "partial", "failed"), case.get("message")
        assert [(e["tool"], e["args"]) for e in case["trace"]] == [("get_resources", {"resource_type": "MedicationRequest"})]
        assert case["metrics"]["tool_errors"] == 0 and json.loads(case["raw_output"])
