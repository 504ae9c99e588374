"""Case files that match the pattern but cannot be read: each is a DatasetError naming it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from groundeval.datasets import load_json, sha256_file
from groundeval.errors import DatasetError
from groundeval.tasks.extraction.task import ExtractionTask
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"


def dangling(d: Path) -> Path:
    (d / "gone.json").symlink_to(d / "missing-target.json")
    return d / "gone.json"


def loop(d: Path) -> Path:
    (d / "a.json").symlink_to(d / "b.json")
    (d / "b.json").symlink_to(d / "a.json")
    return d / "a.json"


def directory(d: Path) -> Path:
    (d / "x.json").mkdir()
    return d / "x.json"


def fifo(d: Path) -> Path:
    os.mkfifo(d / "pipe.json")
    return d / "pipe.json"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (dangling, "it is a symlink to '.*missing-target.json', which does not exist"),
        (loop, "it is a symlink loop"),
        (directory, "it is a directory, not a case file"),
        (fifo, r"it is a named pipe \(FIFO\), not a case file"),
    ],
)
def test_an_unreadable_case_file_is_a_dataset_error_naming_it(
    tmp_path: Path, make: Callable[[Path], Path], says: str
) -> None:
    path = make(tmp_path)
    outcome: dict[str, BaseException] = {}

    def load() -> None:
        try:
            ExtractionTask().load_case(path)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=load, daemon=True)  # a FIFO opened for reading would block
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), f"loading {path.name} hangs"
    error = outcome.get("error")
    assert isinstance(error, DatasetError) and error.path == str(path), error
    assert path.name in str(error)
    with pytest.raises(DatasetError, match=says):
        raise error
    with pytest.raises(DatasetError, match=says):
        sha256_file(path)


def test_a_utf8_bom_is_accepted_and_the_hash_is_of_the_bytes_read(tmp_path: Path) -> None:
    (src,) = FIXTURES.glob("Liz_Conn_*.json")
    raw = b"\xef\xbb\xbf" + src.read_bytes()
    path = tmp_path / src.name
    path.write_bytes(raw)
    data, digest = load_json(path)
    assert data == json.loads(src.read_bytes()) and digest == hashlib.sha256(raw).hexdigest()
    case = ExtractionTask().load_case(path)
    assert case.sha256 == digest == sha256_file(path)


def _unblock_fifo_readers(pipe: Path, done: threading.Event, after: float, hung: list[bool]) -> None:
    """If ``done`` is not set within ``after`` seconds, open ``pipe`` for writing until it is.

    A reader blocked opening the FIFO then proceeds and reads end of file, so an in-process run
    that wrongly reads the pipe fails instead of waiting forever; ``hung`` records that it did.
    """
    if done.wait(after):
        return
    hung.append(True)
    while not done.is_set():
        with contextlib.suppress(OSError):  # ENXIO: no reader has it open (yet)
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        done.wait(0.05)


def test_unreadable_files_are_collection_errors_and_the_good_case_runs(pytester: pytest.Pytester) -> None:
    data = pytester.path / "data"
    data.mkdir()
    (src,) = FIXTURES.glob("Liz_Conn_*.json")
    shutil.copy(src, data / src.name)
    for make in (dangling, loop, directory):
        make(data)
    pipe = fifo(data)
    done = threading.Event()
    hung: list[bool] = []
    guard = threading.Thread(target=_unblock_fifo_readers, args=(pipe, done, 60, hung), daemon=True)
    guard.start()
    try:
        result = pytester.runpytest(
            "--groundeval-task=extraction", "--groundeval-agent=baseline", "--groundeval-data-dir=data",
            "-p", "no:cacheprovider",
        )
    finally:
        done.set()
        guard.join()
    assert not hung, "the run waited on the named pipe"
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("errors") == 5, result.stdout.str()  # 5 files: loop has 2
    result.stdout.fnmatch_lines_random([
        "*gone.json: it is a symlink to*which does not exist*",
        "*a.json: it is a symlink loop*",
        "*x.json: it is a directory, not a case file*",
        "*pipe.json: it is a named pipe (FIFO), not a case file*",
    ])


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_nan_or_infinity_literal_is_named_as_not_json_with_the_fix(tmp_path: Path, literal: str) -> None:
    path = tmp_path / "case.json"
    path.write_text('{"resourceType": "Bundle",\n "entry": [{"resource": {"valueQuantity": {"value": '
                    + literal + ', "unit": "mg"}}}]}')
    with pytest.raises(DatasetError) as info:
        load_json(path)
    message = str(info.value)
    assert f"{literal} at line 2 column" in message and "is not JSON" in message
    assert "write the measured number, or leave the element out" in message and str(path) in message
    assert "regex" not in message
