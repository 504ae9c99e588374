"""What ``plugin.report_trim`` drops is never shown: the terminal output and the junit file are the same without it.

The same cases run twice, in-process, with and without the plugin (``-p no:groundeval-report-trim``
blocks it), with ``-rA`` (every section pytest can show) and junit on; a conftest prints how many
passed setup/teardown reports the terminal reporter still holds, and the item's junit properties
after the run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import eval_args

COUNTING = '''
import pytest

HELD = []


def pytest_collection_finish(session):
    HELD.extend(session.items)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    held = sum(len(item.user_properties) for item in HELD)
    words = sum(len(getattr(r, "keywords", {})) for kept in terminalreporter.stats.values() for r in kept)
    terminalreporter.write_line(f"HELD {len(terminalreporter.stats.get('', []))} reports {held} properties {words} keywords")
    ours = [item for item in HELD if item.nodeid.startswith("groundeval/")]
    stash = sum(len(item.stash._storage) for item in ours)
    meta = sum(len(item.case.meta) for item in ours)
    paths = sum(str(p).endswith(".json") for p in ours[0].session._bestrelpathcache) if ours else -1
    terminalreporter.write_line(f"ITEMS {len(ours)} stash {stash} meta {meta} paths {paths}")
'''

_RUN_SPECIFIC = [
    (re.compile(r'\b(time|timestamp|hostname)="[^"]*"'), r'\1="X"'),
    (re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}"), "RUNID"),
    (re.compile(r'(name="(?:latency_s|started_at)" value=")[^"]*"'), r'\1X"'),
    (re.compile(r"in \d+\.\d+s"), "in Ns"),
    (re.compile(r"HELD \d+ reports \d+ properties \d+ keywords"), "HELD"),
    (re.compile(r"ITEMS \d+ stash \d+ meta \d+ paths -?\d+"), "ITEMS"),
    (re.compile(r"(run record: )\S+"), r"\1X"),
    (re.compile(r"(trimmed|kept)\.xml"), "X.xml"),
]


def _normal(text: str) -> str:
    for pattern, repl in _RUN_SPECIFIC:
        text = pattern.sub(repl, text)
    return text


def test_trimmed_reports_change_no_output(pytester: pytest.Pytester, eval_dir: Path) -> None:
    pytester.makeconftest(COUNTING)
    args = eval_args("-rA", "-p", "no:randomly")
    trimmed = pytester.runpytest(*args, "--junitxml=trimmed.xml", "--groundeval-out-dir=a")
    kept = pytester.runpytest(*args, "--junitxml=kept.xml", "--groundeval-out-dir=b", "-p", "no:groundeval-report-trim")
    assert trimmed.ret == kept.ret == 1
    assert "HELD 0 reports 0 properties 0 keywords" in trimmed.stdout.str()  # the plugin did drop them
    held = re.search(r"HELD (\d+) reports (\d+) properties (\d+) keywords", kept.stdout.str())
    assert held is not None and int(held.group(1)) >= 5 and int(held.group(2)) > 0 and int(held.group(3)) > 0
    # a finished item keeps no stash entry, case meta or relative-path cache entry for its case file
    items = re.search(r"ITEMS (\d+) stash (\d+) meta (\d+) paths (\d+)", trimmed.stdout.str())
    assert items is not None and int(items.group(1)) >= 5 and items.groups()[1:] == ("0", "0", "0")
    before = re.search(r"ITEMS (\d+) stash (\d+) meta (\d+) paths (\d+)", kept.stdout.str())
    assert before is not None and all(int(n) > 0 for n in before.groups())
    assert _normal(trimmed.stdout.str()) == _normal(kept.stdout.str())
    junit = [_normal((pytester.path / f"{name}.xml").read_text()) for name in ("trimmed", "kept")]
    assert junit[0] == junit[1] and "<property " in junit[0]
