"""The console script leaves without interpreter teardown, and loses nothing by it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from groundeval.cli.entry import exit_after_flush

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "extraction"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_exit_handlers_run_and_buffered_output_is_flushed_before_the_process_ends(tmp_path: Path) -> None:
    marker = tmp_path / "atexit-ran"
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: stdout is a pipe, so fully buffered; nothing is flushed until the exit
        os.close(read_end)
        os.dup2(write_end, 1)
        sys.stdout = os.fdopen(1, "w", buffering=8192)
        import atexit

        atexit.register(lambda: marker.write_text("ran"))
        print("the last line of a summary", end="")
        exit_after_flush(3)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        printed = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 3
    assert printed == "the last line of a summary"
    assert marker.read_text() == "ran"


def test_a_live_non_daemon_thread_makes_the_exit_the_ordinary_one() -> None:
    release = threading.Event()
    worker = threading.Thread(target=release.wait, args=(30,), daemon=False)
    worker.start()
    try:
        with pytest.raises(SystemExit) as exited:
            exit_after_flush(1)
        assert exited.value.code == 1
    finally:
        release.set()
        worker.join(30)


def test_the_console_script_writes_every_output_when_its_output_is_a_pipe(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for prefix in ("Liz_Conn", "Clemente_Kreiger"):
        (src,) = FIXTURES.glob(f"{prefix}_*.json")
        shutil.copy(src, data)
    run = subprocess.run(
        [sys.executable, "-m", "groundeval.cli", "--agent", "baseline", "--data-dir", "data", "--out-dir", "out",
         "--", "--junitxml=out/junit.xml", "-p", "no:randomly"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    last = run.stdout.rstrip().splitlines()[-1]
    assert last.startswith("=") and "2 passed" in last, run.stdout  # pytest's last line arrived
    assert any(line.startswith("run record: ") for line in run.stdout.splitlines())
    (record,) = (tmp_path / "out").glob("*.json")
    assert json.loads(record.read_text())["aggregate"]["counts"] == {"passed": 2}
    assert "</testsuites>" in (tmp_path / "out" / "junit.xml").read_text()
