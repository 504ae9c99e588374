"""The example agent runs through the plugin, and its blind spot shows in the scores."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groundeval import AgentConfig, ExtractionTask
from groundeval.agent_io import AgentRequest
from tests._paths import REPO

from .test_fhir_cases import CASE_01

ROOT = REPO
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``examples`` is importable from the repository root, as for a user

from examples.custom_agent import CodeableConceptOnlyAgent  # noqa: E402


def test_example_agent_passes_synthea_fixtures_through_the_plugin(pytester: pytest.Pytester) -> None:
    shutil.copy(ROOT / "examples" / "custom_agent.py", pytester.path)
    data = pytester.path / "data"
    data.mkdir()
    for prefix in ("Max_Kris", "Johnie961"):
        (src,) = (ROOT / "fixtures" / "extraction").glob(f"{prefix}_*.json")
        shutil.copy(src, data)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--groundeval-task=extraction", "--groundeval-agent=custom_agent:CodeableConceptOnlyAgent",
        "--groundeval-data-dir=data", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)


def test_example_agent_misses_medication_references(tmp_path: Path) -> None:
    path = tmp_path / "case01.json"
    path.write_text(json.dumps(CASE_01))
    task = ExtractionTask()
    case = task.load_case(path)
    agent = CodeableConceptOnlyAgent(AgentConfig())
    text = agent.run(AgentRequest(case_id=case.case_id, task="extraction", prompt=task.prompt(case))).text
    score = task.score(case, task.truth(case), task.parse(case, text))
    assert score.metrics["recall"] == pytest.approx(0.25) and score.outcome == "partial"


def _workflow_steps() -> list[dict[str, Any]]:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "groundeval.yml").read_text(encoding="utf-8"))
    steps: list[dict[str, Any]] = workflow["jobs"]["eval"]["steps"]
    return steps


def _step(steps: list[dict[str, Any]], step_id: str) -> dict[str, Any]:
    return next(s for s in steps if s.get("id") == step_id)


def _eval_argv(steps: list[dict[str, Any]], agent_args: str) -> list[str]:
    """The `Run the eval` command with the picked arguments substituted, as the groundeval CLI's argv."""
    (line,) = [ln for ln in _step(steps, "eval")["run"].splitlines() if "uv run groundeval" in ln]
    words = shlex.split(line.replace("${{ steps.agent.outputs.args }}", agent_args))
    assert words[:3] == ["uv", "run", "groundeval"]
    return words[3:]


def test_ci_workflow_caches_with_a_key_and_replays_without(tmp_path: Path) -> None:
    from groundeval.cli import pytest_args

    steps = _workflow_steps()
    pick = _step(steps, "agent")["run"]
    variants = re.findall(r'echo "args=([^"]*)"', pick)
    assert pick.lstrip().startswith('if [ -n "$ANTHROPIC_API_KEY" ]')  # a key: the model, never a replay
    assert variants == [
        "--agent claude --cache .groundeval-cache",
        "--agent replay:$BASELINE --replay-allow-changed",
        "--agent replay:$GROUNDEVAL_RECORD --replay-allow-changed",
        "--agent baseline",
    ]
    cache = next(s for s in steps if str(s.get("uses", "")).startswith("actions/cache@"))
    assert cache["with"]["path"] == ".groundeval-cache" and cache["if"] == "steps.agent.outputs.mode == 'model'"
    assert steps.index(cache) < steps.index(_step(steps, "eval"))
    converted = {}
    for variant in variants:
        argv = _eval_argv(steps, variant.replace("$BASELINE", "baseline/runs/r.json").replace(
            "$GROUNDEVAL_RECORD", "evals/groundeval-run.json"))
        converted[variant] = pytest_args(argv)  # every flag exists (an unknown one exits with status 2)
        assert "--groundeval-summary-md=summary.md" in converted[variant] and converted[variant][-1] == "--junitxml=junit.xml"
    assert "--groundeval-cache=.groundeval-cache" in converted[variants[0]]
    assert {"--groundeval-agent=replay:baseline/runs/r.json", "--groundeval-replay-allow-changed"} <= set(
        converted[variants[1]])
    # compare and report get arguments their parsers accept; every script is valid shell
    from groundeval.cli.tools import _compare_parser, _report_parser

    script = "\n".join(str(s.get("run", "")) for s in steps)
    for line in script.splitlines():
        words = shlex.split(re.sub(r"\$\{\{[^}]*\}\}", "x.json", line).replace("\\", ""), comments=True)
        if words[:4] == ["uv", "run", "groundeval", "compare"]:
            _compare_parser().parse_args([w for w in words[4:] if w not in (">", ">>", "/dev/null", "$GITHUB_STEP_SUMMARY")])
        elif words[:4] == ["uv", "run", "groundeval", "report"]:
            _report_parser().parse_args(words[4:])
    for step in steps:
        if "run" in step:
            body = re.sub(r"\$\{\{[^}]*\}\}", "x", step["run"])
            checked = subprocess.run(["bash", "-n"], input=body, text=True, capture_output=True, check=False)
            assert checked.returncode == 0, (step.get("name"), checked.stderr)


def test_ci_workflow_replay_command_runs_offline(pytester: pytest.Pytester) -> None:
    """The no-key branch's eval command, as the workflow runs it, re-scores a recorded run with no model call."""
    from groundeval.cli import pytest_args

    data = pytester.path / "data"
    data.mkdir()
    for prefix in ("Max_Kris", "Johnie961"):
        (src,) = (ROOT / "fixtures" / "extraction").glob(f"{prefix}_*.json")
        shutil.copy(src, data)
    common = ["--data-dir", "data", "--", "-p", "no:cacheprovider"]
    pytester.runpytest(*pytest_args(["--agent", "baseline", "--out-dir", "baseline/runs", *common])).assert_outcomes(
        passed=2)
    (recorded,) = (pytester.path / "baseline" / "runs").glob("*.json")
    argv = _eval_argv(_workflow_steps(), f"--agent replay:{recorded} --replay-allow-changed")
    result = pytester.runpytest(*pytest_args([*argv[:argv.index("--")], "--data-dir", "data", *argv[argv.index("--"):]]))
    result.assert_outcomes(passed=2)
    (replayed,) = (pytester.path / "runs").glob("*.json")
    record = json.loads(replayed.read_text(encoding="utf-8"))
    assert [c["cached"] for c in record["cases"]] == [True, True] and record["settings"]["agent_spec"].startswith("replay:")
    assert (pytester.path / "summary.md").read_text(encoding="utf-8").strip()
    assert (pytester.path / "junit.xml").is_file()
