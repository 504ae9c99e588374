"""The junit file written through the spool (``plugin.junit_spool``) is the file pytest writes without it.

The same cases run twice, in-process, with and without the spool plugin (``-p
no:groundeval-junit-spool`` blocks it), serially and under ``-n 2``; the files must be equal but
for what differs between any two runs (times, the run id, the timestamp and the host name).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import eval_args

_RUN_SPECIFIC = [
    (re.compile(r'\b(time|timestamp|hostname)="[^"]*"'), r'\1="X"'),
    (re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}"), "RUNID"),
    (re.compile(r'(name="(?:latency_s|started_at)" value=")[^"]*"'), r'\1X"'),
]


def _normal(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    for pattern, repl in _RUN_SPECIFIC:
        text = pattern.sub(repl, text)
    return text


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_spooled_junit_file_is_pytests_own(pytester: pytest.Pytester, eval_dir: Path, workers: list[str]) -> None:
    if workers:
        pytest.importorskip("xdist")
    args = eval_args("--groundeval-trials=2", *workers)
    spooled = pytester.runpytest_subprocess(*args, "--junitxml=spooled.xml", "--groundeval-out-dir=a")
    plain = pytester.runpytest_subprocess(*args, "--junitxml=plain.xml", "--groundeval-out-dir=b",
                                          "-p", "no:groundeval-junit-spool")
    assert spooled.ret == plain.ret == 1
    text = _normal(pytester.path / "spooled.xml")
    assert "groundeval-junit-spool" not in text and text.count("<testcase ") == 10
    if workers:  # under xdist the order of testcases is the order they finished in
        def cases(t: str) -> list[str]:
            return sorted(re.findall(r"<testcase .*?</testcase>|<testcase [^>]*/>", t, flags=re.S))

        assert cases(text) == cases(_normal(pytester.path / "plain.xml"))
    else:
        assert text == _normal(pytester.path / "plain.xml")
