"""What an agent prints during a call made ahead lands, redacted, in its own case's report."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from groundeval.plugin.thread_output import _Router
from tests._xdist import run_xdist

from .conftest import eval_args

SECRET = "sk-printed-0123456789abcdef"

PRINTING_AGENT = f'''
import sys


class Printing:
    name = "printing"
    thread_safe = True

    def run(self, request):
        print("out from " + request.case_id + " key=" + "{SECRET}")
        print("err from " + request.case_id, file=sys.stderr)
        return "[]"


agent = Printing()
'''


def _system_out(path: Path) -> dict[str, str]:
    """testcase name -> its system-out and system-err text."""
    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        text = "".join((el.text or "") for tag in ("system-out", "system-err") for el in case.iter(tag))
        found[str(case.get("name"))] = text
    return found


def _check(result: pytest.RunResult, junit: Path) -> None:
    out = result.stdout.str() + result.stderr.str()
    assert SECRET not in out  # nothing printed reaches the terminal unredacted
    cases = _system_out(junit)
    assert len(cases) == 5
    for name, text in cases.items():
        printed = [line for line in text.splitlines() if " from " in line]
        assert f"out from {name} key=[REDACTED]" in printed and f"err from {name}" in printed, (name, text)
        assert all(line.endswith((name, f"{name} key=[REDACTED]")) for line in printed), (name, printed)
    assert out.count("out from ") == 5  # -rA shows each case's output once, in its own section


@pytest.mark.parametrize(("workers", "capture"), [(None, "fd"), (None, "sys"), ("2", "fd")],
                         ids=["serial", "serial-capture-sys", "n2"])
def test_output_of_calls_made_ahead_is_captured_redacted_and_attached_to_its_case(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch, workers: str | None, capture: str
) -> None:
    monkeypatch.setenv("PRINTING_AGENT_API_KEY", SECRET)
    pytester.makepyfile(printing_agent=PRINTING_AGENT)
    args = eval_args("--groundeval-agent=printing_agent:agent", "--groundeval-concurrency=4", "-rA",
                     "-o", "junit_logging=all", "--junitxml=out.xml", "-p", "no:randomly", f"--capture={capture}")
    result = pytester.runpytest(*args) if workers is None else run_xdist(pytester, *args, workers=int(workers))
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    _check(result, pytester.path / "out.xml")
    assert not isinstance(sys.stdout, _Router) and not isinstance(sys.stderr, _Router)  # the streams were put back
