"""Each case file is read once per case: collection's typed case is the one the run scores and records.

The extraction task's ``load_case`` is wrapped to count its calls per file, and the cases run
in-process (serial and with calls in flight, one trial and three). Past
``plugin.items.LOADED_AT_COLLECTION`` cases a file is read again when its case runs (what a run of
thousands of cases does to bound its memory); the records are the same either way.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
from pathlib import Path

import pytest

from groundeval.plugin import items
from groundeval.tasks.extraction.task import ExtractionTask

from .conftest import eval_args


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    calls: collections.Counter[str] = collections.Counter()
    original = ExtractionTask.load_case

    def counting(self: ExtractionTask, path: Path):  # type: ignore[no-untyped-def]
        calls[Path(path).name] += 1
        return original(self, path)

    monkeypatch.setattr(ExtractionTask, "load_case", counting)
    return calls


def _outcomes(out: Path) -> dict[str, str]:
    (path,) = out.glob("*.json")
    return {c["case_id"]: c["outcome"] for c in json.loads(path.read_text())["cases"]}


@pytest.mark.parametrize("extra", [(), ("--groundeval-concurrency=4",), ("--groundeval-trials=3",)])
def test_each_case_file_is_loaded_once_per_case(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch, extra: tuple[str, ...],
) -> None:
    files = sorted(p.name for p in eval_dir.glob("*.json"))
    calls = _count_loads(monkeypatch)
    result = pytester.runpytest(*eval_args("-p", "no:randomly", "--groundeval-out-dir=once", *extra))
    assert result.ret in (0, 1), result.stdout.str()
    assert len(files) >= 5 and calls == {name: 1 for name in files}


def test_past_the_collection_budget_a_file_is_read_again_with_the_same_outcomes(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _count_loads(monkeypatch)
    first = pytester.runpytest(*eval_args("-p", "no:randomly", "--groundeval-out-dir=a"))
    monkeypatch.setattr(items, "LOADED_AT_COLLECTION", 2)
    calls.clear()
    second = pytester.runpytest(*eval_args("-p", "no:randomly", "--groundeval-out-dir=b"))
    assert first.ret == second.ret
    assert sorted(calls.values()) == [1, 1] + [2] * (len(calls) - 2) and len(calls) >= 5
    assert _outcomes(pytester.path / "a") == _outcomes(pytester.path / "b")


def test_a_file_rewritten_between_two_runs_in_one_process_is_read_again(
    pytester: pytest.Pytester, eval_dir: Path,
) -> None:
    """Nothing outlives a run: the next in-process run reads a rewritten file anew.

    The rewrite keeps the file's path, size and modification time (``": "`` becomes ``" :"``, the
    same JSON), so a cache keyed by any of those would give the second run the first run's bytes.
    """
    (liz,) = eval_dir.glob("Liz_Conn*.json")
    first = pytester.runpytest(*eval_args("-p", "no:randomly", "--groundeval-out-dir=a"))
    before = liz.stat()
    old = liz.read_bytes()
    new = old.replace(b'": "', b'" :"', 1)
    assert new != old and len(new) == len(old)
    liz.write_bytes(new)
    os.utime(liz, ns=(before.st_atime_ns, before.st_mtime_ns))
    second = pytester.runpytest(*eval_args("-p", "no:randomly", "--groundeval-out-dir=b"))
    assert first.ret == second.ret
    assert _outcomes(pytester.path / "a") == _outcomes(pytester.path / "b")
    assert _fixture_hashes(pytester.path / "a")["Liz"] == hashlib.sha256(old).hexdigest()
    assert _fixture_hashes(pytester.path / "b")["Liz"] == hashlib.sha256(new).hexdigest()


def _fixture_hashes(out: Path) -> dict[str, str]:
    (path,) = out.glob("*.json")
    return {c["case_id"].split("_")[0]: c["fixture_sha256"] for c in json.loads(path.read_text())["cases"]}
