"""A local judge's card key is its GGUF file's SHA-256, found through the policy's provider.

Offline: the `local` extra's import check is bypassed (no server is started: making a judge
starts none), so the identity rule is exercised on every run, not only in the live smoke test.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from groundeval.tasks.summary.judge import judge_identity, make_judge


def test_a_local_judge_is_keyed_by_its_files_sha256_wherever_the_file_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import groundeval.models.providers.local as local

    monkeypatch.setattr(local, "require_extra", lambda *args, **kwargs: None)
    content = b"GGUF not a real model, but a file with a hash"
    first, moved = tmp_path / "model.gguf", tmp_path / "elsewhere" / "renamed.gguf"
    moved.parent.mkdir()
    first.write_bytes(content)
    moved.write_bytes(content)
    judges = [make_judge(f"local/{first}"), make_judge(f"local/{moved}")]
    expected = f"sha256:{hashlib.sha256(content).hexdigest()}"
    assert [judge_identity(judge) for judge in judges] == [expected, expected]
    other = tmp_path / "other.gguf"
    other.write_bytes(content + b"!")
    assert judge_identity(make_judge(f"local/{other}")) != expected
