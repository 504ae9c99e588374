"""What an agent prints during a call made ahead lands, redacted, in its own case's report."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from groundeval.plugin.thread_output import _Router

from .shared_runs import PRINTING_AGENT, SECRET, printing_args


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


@pytest.mark.parametrize("capture", ["fd", "sys"], ids=["serial", "serial-capture-sys"])
def test_output_of_calls_made_ahead_is_captured_redacted_and_attached_to_its_case(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    monkeypatch.setenv("PRINTING_AGENT_API_KEY", SECRET)
    pytester.makepyfile(printing_agent=PRINTING_AGENT)
    result = pytester.runpytest(*printing_args(capture))
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    _check(result, pytester.path / "out.xml")
    assert not isinstance(sys.stdout, _Router) and not isinstance(sys.stderr, _Router)  # the streams were put back


def test_under_xdist_the_output_of_calls_made_ahead_on_a_worker_is_attached_to_its_case(
    xdist_printing: tuple[Path, pytest.RunResult],
) -> None:
    """The shared ``-n 2`` run of the printing agent (``shared_runs.make_printing_run``, ``--capture=fd``).

    That the controller, in the test process, put its streams back is checked where the run is made.
    """
    run, result = xdist_printing
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    _check(result, run / "out.xml")
