"""Acceptance: the MCP agent and the in-process LangGraph agent, same scripts, agree case by case (serial and -n 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("langchain_mcp_adapters")

from tests._paths import REPO
from tests._xdist import run_xdist

HERE = Path(__file__).parent
PICK = {
    "extraction": 3, "reconcile": 3, "labs": 3,
    "write": ("tylenol-brand-lookup", "acetaminophen-every-six-to-eight-hours", "gabapentin-not-in-catalog"),
}


def _setup(pytester: pytest.Pytester, task: str) -> None:
    shutil.copy(HERE / "mcp_scripts.py", pytester.path / "mcp_scripts.py")
    shutil.copy(REPO / "tests" / "fhir" / "reader_agent.py", pytester.path / "reader_agent.py")
    data = pytester.path / "data"
    data.mkdir()
    pick = PICK[task]
    files = sorted((REPO / "fixtures" / task).glob("[!M]*.json"))
    chosen = files[:pick] if isinstance(pick, int) else [REPO / "fixtures" / task / f"{n}.json" for n in pick]
    for path in chosen:
        shutil.copy(path, data / path.name)


def _run(pytester: pytest.Pytester, task: str, agent: str, out: str, xdist: bool, *extra: str) -> dict[str, Any]:
    args = [f"--groundeval-task={task}", f"--groundeval-agent=mcp_scripts:{agent}", "--groundeval-data-dir=data",
            f"--groundeval-out-dir={out}", "-p", "no:cacheprovider", "-o", "pythonpath=.", *extra]
    if agent == "mcp":
        args.append("--groundeval-tools=mcp")
    result = run_xdist(pytester, *args) if xdist else pytester.runpytest(*args)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-3000:]
    (record,) = (pytester.path / out).glob("*.json")
    data: dict[str, Any] = json.loads(record.read_text())
    return data


def _by_case(record: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    def trace(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k != "duration_s"} for e in entries]

    return {c["nodeid"]: (c["outcome"], c.get("raw_output"), trace(c["trace"])) for c in record["cases"]}


# Serial on every tool-using task; under -n 2 on extraction and write (each -n 2 run starts two workers).
@pytest.mark.parametrize(
    ("task", "xdist"),
    [(task, False) for task in ("extraction", "reconcile", "labs", "write")] + [("extraction", True), ("write", True)],
    ids=["extraction-serial", "reconcile-serial", "labs-serial", "write-serial", "extraction-n2", "write-n2"],
)
def test_the_mcp_agent_and_the_in_process_agent_agree_case_by_case(
    pytester: pytest.Pytester, task: str, xdist: bool
) -> None:
    _setup(pytester, task)
    local = _by_case(_run(pytester, task, "inprocess", "runs-inprocess", xdist))
    served = _run(pytester, task, "mcp", "runs-mcp", xdist)
    assert served["agent"] == "langgraph-mcp"
    remote = _by_case(served)
    assert local.keys() == remote.keys() and len(local) == 3
    for nodeid, (outcome, answer, trace) in local.items():
        assert remote[nodeid] == (outcome, answer, trace), nodeid
        assert trace and outcome not in ("agent_error", "infra_error", "harness_error"), nodeid
    assert all(e["duration_s"] >= 0 for c in served["cases"] for e in c["trace"])
    if task in ("extraction", "labs", "write"):
        assert any(o == "passed" for o, _, _ in local.values())


def test_each_agent_refuses_the_other_transport_before_any_case(pytester: pytest.Pytester) -> None:
    _setup(pytester, "write")
    base = ["--groundeval-task=write", "--groundeval-data-dir=data", "-p", "no:cacheprovider", "-o", "pythonpath=."]
    wrong = pytester.runpytest(*base, "--groundeval-agent=mcp_scripts:mcp")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(["*reaches the case's tools over MCP; add --groundeval-tools=mcp*"])
    inprocess = pytester.runpytest(*base, "--groundeval-agent=baseline-write", "--groundeval-tools=mcp")
    assert inprocess.ret == pytest.ExitCode.USAGE_ERROR
    inprocess.stderr.fnmatch_lines(["*calls the task's tools in its own process*"])


def test_trials_and_counterfactual_twins_read_the_mcp_trace_as_the_in_process_one(pytester: pytest.Pytester) -> None:
    """Plan consistency over trials and record sensitivity over twins come out the same over MCP."""
    _setup(pytester, "extraction")
    extra = ("--groundeval-trials=2", "--groundeval-counterfactual", "--groundeval-twin-seed=7")
    local = _run(pytester, "extraction", "inprocess", "runs-inprocess", False, *extra)
    served = _run(pytester, "extraction", "mcp", "runs-mcp", False, *extra)
    assert _by_case(local) == _by_case(served)
    assert any("[cf-" in nodeid for nodeid in _by_case(served))  # twins ran
    for key in ("trials", "counterfactual"):
        assert local["aggregate"].get(key) is not None, key
        assert served["aggregate"][key] == local["aggregate"][key], key


def test_the_transport_mismatch_is_named_before_a_missing_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from groundeval.cli import main as cli_main

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _setup(pytester, "write")
    base = ["--groundeval-task=write", "--groundeval-data-dir=data", "-p", "no:cacheprovider"]
    plugin = pytester.runpytest(*base, "--groundeval-agent=langgraph-mcp")
    assert plugin.ret == pytest.ExitCode.USAGE_ERROR
    plugin.stderr.fnmatch_lines(["*'langgraph-mcp' reaches the case's tools over MCP; add --groundeval-tools=mcp*"])
    plugin.stderr.no_fnmatch_line("*ANTHROPIC_API_KEY*")
    assert cli_main(["--task", "write", "--agent", "langgraph-mcp", "--data-dir", "data"]) == 4
    err = capsys.readouterr().err
    assert "add --groundeval-tools=mcp" in err and "ANTHROPIC_API_KEY" not in err
    assert cli_main(["--task", "write", "--agent", "langgraph-mcp", "--tools", "mcp", "--data-dir", "data"]) == 4
    assert "ANTHROPIC_API_KEY is not set" in capsys.readouterr().err  # with the transport right, the key is next
