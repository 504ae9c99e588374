"""End to end against the real Anthropic API: runs only when ANTHROPIC_API_KEY is set.

Two small extraction fixtures, the default model, the real SDK and network. The test asserts
that the run happened and was accounted for (a run record with non-zero tokens and a finite
cost), not that the model got the answers right: the verdicts are the eval's output.
"""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest

from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not os.environ.get("ANTHROPIC_API_KEY"),
        reason="live test: set ANTHROPIC_API_KEY to run the extraction eval against the real Claude API",
    ),
]


def test_extraction_on_two_fixtures_with_the_real_api(pytester: pytest.Pytester) -> None:
    data = pytester.path / "data"
    data.mkdir()
    for prefix in ("Liz_Conn", "Clemente_Kreiger"):
        (src,) = FIXTURES.glob(f"{prefix}_*.json")
        shutil.copy(src, data / src.name)
    result = pytester.runpytest_subprocess(
        "--groundeval-task=extraction", "--groundeval-agent=claude", "--groundeval-data-dir=data",
        "--groundeval-timeout=300", "-p", "no:cacheprovider", "--junitxml=out.xml",
    )
    (path,) = (pytester.path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    assert len(record["cases"]) == 2, result.stdout.str()
    assert not [c for c in record["cases"] if c["outcome"] in ("auth_error", "error")], result.stdout.str()
    usage = record["aggregate"]["usage"]
    answered = [c for c in record["cases"] if c.get("usage")]
    assert answered, "no case got an answer (all infra errors?): " + result.stdout.str()
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["cost_usd"] is not None and math.isfinite(usage["cost_usd"]) and usage["cost_usd"] > 0
    for case in answered:
        assert case["model"].startswith("claude-") and case["attempts"] >= 1
        meta = case.get("agent_meta") or case["error"]["details"]
        assert meta["stop_reason"] and meta["request_id"]
    key = os.environ["ANTHROPIC_API_KEY"]
    for text in (path.read_text(), (pytester.path / "out.xml").read_text(), result.stdout.str()):
        assert key not in text
