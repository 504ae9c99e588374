"""Secrets never reach the response cache, and a redacted cached answer re-scores as it first scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundeval.models.cache_store import CACHE_FILE

from .conftest import args, calls, records

SECRET = "sk-test-0123456789abcdef"
USERINFO = "proxyuser:proxypass42"

# Answers like the baseline plus one item that echoes the request's credentials (as a server that
# echoes headers would), and for Max_Kris stops at max_tokens with the credentials in its partial text.
ECHO_AGENT = f'''
import json
from pathlib import Path

from groundeval.agent_io import AgentResult
from groundeval.agents.baselines.extraction import BaselineExtractionAgent
from groundeval.errors import RefusalError

BASE = BaselineExtractionAgent()
LOG = Path(__file__).with_name("calls.log")
ECHO = "Authorization: Bearer {SECRET} via http://{USERINFO}@proxy.local/v1"


class Echo:
    name = "echo"
    model = "echo-1"

    def run(self, request):
        with LOG.open("a", encoding="utf-8") as fh:
            fh.write(request.case_id + "\\n")
        if request.case_id.startswith("Max_Kris"):
            raise RefusalError("declined: " + ECHO, attempts=1, details={{"partial_text": "[" + ECHO, "echo": ECHO}})
        items = json.loads(BASE.run(request).text)
        items.append({{"rxnorm_code": "{SECRET}", "display": ECHO}})
        return AgentResult(text=json.dumps(items), trace=[{{"tool": "t", "args": {{}}, "result": ECHO, "ok": True}}],
                           meta={{"headers": ECHO}})


agent = Echo()
'''


def test_the_cache_holds_no_secret_and_a_cached_answer_scores_as_the_live_one(
    pytester: pytest.Pytester, counting_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDEVAL_TEST_API_KEY", SECRET)
    pytester.makepyfile(echo_agent=ECHO_AGENT)
    run = args("--groundeval-cache=cache", "-k", "Liz or Garrett or Max", agent="echo_agent:agent")
    pytester.runpytest(*run).stdout.fnmatch_lines(["*1 failed, 3 deselected, 2 partial*"])
    pytester.runpytest(*run).stdout.fnmatch_lines(["*1 failed, 3 deselected, 2 partial*"])
    assert len(calls(counting_dir)) == 3  # the second run came from the cache
    stored = b"".join(p.read_bytes() for p in (counting_dir / "cache").iterdir())
    assert CACHE_FILE in {p.name for p in (counting_dir / "cache").iterdir()}
    for secret in (SECRET, USERINFO, "proxypass42"):
        assert secret.encode() not in stored
    assert b"Bearer [REDACTED]" in stored and b"http://[REDACTED]@proxy" in stored  # the entries are there, redacted
    live, cached = records(counting_dir)
    assert all(c["cached"] for c in cached["cases"]) and not any(c["cached"] for c in live["cases"])

    def scored(record: dict[str, object]) -> list[tuple[object, ...]]:
        cases = record["cases"]
        assert isinstance(cases, list)
        return [(c["case_id"], c["outcome"], c["metrics"], c["parsed"], c["details"], c["message"], c["raw_output"])
                for c in cases]

    assert scored(live) == scored(cached)
    assert SECRET not in str(scored(live))
