"""Output files that cannot be written: the run stops cleanly, names the file, and loses no finished case."""

from __future__ import annotations

import errno
import json
import resource
from pathlib import Path
from typing import Any

import pytest

from groundeval.cli.tools import main as cli_main
from groundeval.records.run_record import CaseRecord
from groundeval.records.run_writer import RunWriter

from .conftest import eval_args, junit_cases, run_records


def _case(i: int, text: str = "[]") -> CaseRecord:
    return CaseRecord(case_id=f"c{i}", nodeid=f"groundeval/extraction::c{i}", run_id="r", task="extraction",
                      agent="a", outcome="passed", counted=True, raw_output=text)


def test_a_line_past_the_file_size_limit_raises_and_leaves_only_whole_lines(tmp_path: Path) -> None:
    """A real ``RLIMIT_FSIZE`` (EFBIG), lowered only around the one append that crosses it."""
    writer = RunWriter(tmp_path, "r")
    writer.append(_case(0))
    before = writer.partial.stat().st_size
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (before + 4096, hard))
    try:
        with pytest.raises(OSError, match="File too large") as raised:
            writer.append(_case(1, "x" * 20_000))  # the line crosses the limit part-way
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert raised.value.errno == errno.EFBIG and raised.value.filename == str(writer.partial)
    lines = writer.partial.read_text().splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == ["c0"]  # cut back: no half line


def _failing_append(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    real = RunWriter.append
    calls = {"n": 0}

    def append(self: RunWriter, case: CaseRecord) -> None:
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(errno.EFBIG, "File too large", str(self.partial))
        real(self, case)

    monkeypatch.setattr(RunWriter, "append", append)


def test_the_partial_file_failing_stops_the_run_and_keeps_every_finished_case(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _failing_append(monkeypatch, after=1)
    result = pytester.runpytest(*eval_args("--junitxml=out.xml", "-p", "no:randomly"))
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    assert result.ret == pytest.ExitCode.INTERRUPTED  # the run is incomplete
    assert "could not write" in out and ".partial.jsonl: File too large (EFBIG)" in out
    assert "groundeval extraction" in out and "INCOMPLETE" in out  # the terminal summary still appears
    (record,) = run_records(pytester.path)
    ran = [c for c in record["cases"] if c["outcome"] != "not_run"]
    assert len(ran) == 2 and len(record["cases"]) == 5  # the case whose line failed is in the final record
    assert record["complete"] is False and "File too large" in record["stop_reason"]
    assert record["exit_status"] == pytest.ExitCode.INTERRUPTED
    assert len(junit_cases(pytester.path / "out.xml")) == 2  # junit is written
    # the HTML report of that record, asked for at a path that is a directory: named, exit 2
    (path,) = (pytester.path / "runs").glob("*.json")
    (pytester.path / "taken").mkdir()
    assert cli_main(["report", str(path), "-o", str(pytester.path / "taken")]) == 2


def test_the_final_record_failing_keeps_the_partial_file_junit_and_the_summary(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Path.open

    def open_(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        f = real(self, mode, *args, **kwargs)
        if self.name.endswith(".json.tmp") and "w" in mode:  # the record is streamed into its temporary file
            f.write('{\n  "schema_version": 2,')  # a half-written file, then the disk is full
            f.close()
            raise OSError(errno.ENOSPC, "No space left on device")
        return f

    monkeypatch.setattr(Path, "open", open_)
    (pytester.path / "md").mkdir()  # the Markdown summary asked for at a directory: a second failure
    result = pytester.runpytest(*eval_args("--junitxml=out.xml", "--groundeval-summary-md=md"))
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "groundeval extraction" in out  # the terminal summary
    (partial,) = (pytester.path / "runs").glob("*.partial.jsonl")
    assert f"{partial.name.removesuffix('.partial.jsonl')}.json: No space left on device (ENOSPC)" in out
    assert f"the finished cases are in {partial} (5 of 5) and the junit file out.xml" in out.replace("\n", "")
    assert "md: Is a directory (EISDIR)" in out
    header, *lines = partial.read_text().splitlines()
    assert "groundeval_partial" in header and len(lines) == 5  # every finished case survives
    assert sorted(p.name for p in (pytester.path / "runs").iterdir()) == [partial.name]  # no .json.tmp left
    assert len(junit_cases(pytester.path / "out.xml")) == 5


def test_under_xdist_a_real_file_size_limit_is_named_and_the_whole_lines_survive(
    pytester: pytest.Pytester, eval_dir: Path
) -> None:
    """The issue's own scenario, ``ulimit -f``, under ``-n 2``: workers stop, nothing ends in INTERNALERROR."""
    from .forked import ForkedPytest

    limit = 6_000  # bytes: a few case lines of the partial file fit, not all five
    # only the forked run (and the workers it starts) gets the limit; its output comes through a pipe, not a file
    # the conversation by reference: the prompts themselves (tens of KB a case) would fill the limit alone
    args = eval_args("--groundeval-agent=baseline", "--groundeval-conversation=reference", "-n", "2")
    proc = ForkedPytest(pytester.path, args, file_size_limit=limit)
    out = proc.communicate(timeout=300)
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert ".partial.jsonl: File too large (EFBIG)" in out
    (partial,) = (pytester.path / "runs").glob("*.partial.jsonl")
    text = partial.read_text()
    header, *lines = text.splitlines()  # the run's header line, then one line a finished case
    assert "groundeval_partial" in header
    assert text.endswith("\n") and 1 <= len(lines) < 5 and len(text.encode()) <= limit
    assert all(json.loads(line)["outcome"] == "passed" for line in lines)  # whole lines only, none cut mid-line
    assert not list((pytester.path / "runs").glob("*.tmp"))
    if not list((pytester.path / "runs").glob("*.json")):  # the final record did not fit either: said so
        assert f"the finished cases are in {partial} ({len(lines)} of " in out.replace("\n", "")


def test_a_markdown_summary_that_cannot_be_written_leaves_no_file_and_the_record_says_exit_2(
    pytester: pytest.Pytester, eval_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk at the summary's write: half of it written, then ENOSPC, as a real write fails."""
    real = Path.write_text

    def write_text(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        if self.name.startswith("summary.md"):
            real(self, data[: len(data) // 2], *args, **kwargs)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    (pytester.path / "summary.md").write_bytes(b"the summary of an earlier run\n")
    result = pytester.runpytest(*eval_args("--groundeval-summary-md=summary.md"))
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "summary.md: No space left on device (ENOSPC)" in result.stdout.str()
    (record,) = run_records(pytester.path)
    assert record["exit_status"] == result.ret == 2  # the record agrees with the process
    assert sorted(p.name for p in pytester.path.glob("summary.md*")) == []  # no partial, no stale summary


def test_a_step_summary_append_past_a_real_file_size_limit_is_cut_back(tmp_path: Path) -> None:
    """A real ``RLIMIT_FSIZE`` (EFBIG) during the append to ``$GITHUB_STEP_SUMMARY``: the file keeps what it held."""
    from groundeval.reporting.summary_md import write_summary_markdown
    from tests._records import case, run

    step = tmp_path / "step.md"
    before = b"## an earlier step\n" * 50
    step.write_bytes(before)
    record = run([case(f"c{i}", "failed") for i in range(200)])
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 2048, hard))
    try:
        with pytest.raises(OSError, match="File too large") as raised:
            write_summary_markdown(record, environ={"GITHUB_STEP_SUMMARY": str(step)})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert raised.value.errno == errno.EFBIG and raised.value.filename == str(step)
    assert step.read_bytes() == before
