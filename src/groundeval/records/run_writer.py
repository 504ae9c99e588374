"""Writing one run's record to disk: each finished case as it ends, the whole record at the end.

The partial file ``<run_id>.partial.jsonl`` starts with one header line (``{"groundeval_partial":
1, "run": {...}}``: the run's id, task, start time and settings, ``records.resume``) and then holds
one line per finished case, each written whole or not at all (a failed write cuts the file back),
so a run killed at any point leaves every finished case readable. The complete record is then
written atomically to ``<run_id>.json`` and the partial file removed (errors name the file,
``records.write_errors.named``).

The record is written as a stream: each case is read back from its line of the partial file as
its turn comes (``RunWriter.case``), so a 50,000-case run never holds every whole case record, nor
the record's text, in memory. The text is the one ``RunRecord.model_dump_json(indent=2)`` gives
for the whole cases (tests/records/test_run_writer.py compares them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import TypeAdapter

from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.records.write_errors import append_whole, named, replace_whole_from

__all__ = ["PARTIAL_HEADER_KEY", "RunWriter", "stream_record"]

PARTIAL_HEADER_KEY = "groundeval_partial"
"""The key of the partial file's first line (its value is the header's version, 1)."""


class RunWriter:
    """Writes one run's record incrementally and then atomically.

    Args:
        out_dir: Directory for run records (created if missing).
        run_id: The run's id; files are ``<run_id>.partial.jsonl`` and ``<run_id>.json``.
    """

    def __init__(self, out_dir: Path, run_id: str) -> None:
        self.out_dir = out_dir
        self.path = out_dir / f"{run_id}.json"
        self.partial = out_dir / f"{run_id}.partial.jsonl"
        self.appended = 0  # cases written whole to the partial file
        self.spans: dict[str, tuple[int, int]] = {}  # node id -> (byte offset, length) of its line
        self._header: dict[str, Any] | None = None  # written before the first case
        self._reader: BinaryIO | None = None  # the partial file, open while the record is written

    def set_header(self, run: dict[str, Any]) -> None:
        """The run's facts the partial file starts with (written with the first case)."""
        self._header = {PARTIAL_HEADER_KEY: 1, "run": run}

    def _append_line(self, line: str) -> tuple[int, int]:
        data = line.encode("utf-8", "surrogatepass")
        with named(self.partial):
            self.out_dir.mkdir(parents=True, exist_ok=True)
            return append_whole(self.partial, data), len(data)

    def append(self, case: CaseRecord) -> None:
        """Append one finished case to the partial file as one line, written whole or not at all.

        Raises:
            OSError: The line could not be written (``filename`` is the partial file); the file
                is cut back to where it was, so every line it holds is a whole case.
        """
        if self._header is not None and not self.appended:
            self._append_line(json.dumps(self._header, ensure_ascii=False) + "\n")
            self._header = None
        line = json.dumps(case.model_dump(mode="json"), ensure_ascii=False) + "\n"
        self.spans[case.nodeid] = self._append_line(line)
        self.appended += 1

    def adopt(self, nodeid: str, span: tuple[int, int]) -> None:
        """Take a case line already in the partial file (a resumed run continuing its own file) as appended."""
        self.spans[nodeid] = span
        self.appended += 1
        self._header = None  # the file has its header

    def cut_to(self, size: int) -> None:
        """Cut the partial file back to ``size`` bytes (the end of its last whole line).

        Raises:
            OSError: The file could not be cut (``filename`` is the partial file).
        """
        with named(self.partial):
            if self.partial.exists() and self.partial.stat().st_size > size:
                os.truncate(self.partial, size)

    def case(self, light: CaseRecord) -> CaseRecord:
        """The whole case record of ``light`` (a ``records.light.light_copy``) read back from its line.

        A case that has no line (a not-run case made at the end, or one kept whole after a failed
        write) is returned as it is.

        Raises:
            OSError: The partial file could not be read.
        """
        span = self.spans.get(light.nodeid)
        if span is None:
            return light
        if self._reader is None:
            self._reader = self.partial.open("rb")
        self._reader.seek(span[0])
        return CaseRecord.model_validate_json(self._reader.read(span[1]))

    def finish(self, record: RunRecord, whole: Callable[[CaseRecord], CaseRecord] | None = None) -> Path:
        """Write the complete record atomically, remove the partial file, return the path.

        Args:
            record: The run record; its cases may be light copies.
            whole: Each case's whole record (default ``self.case``: read back from the partial file).

        Raises:
            OSError: The record could not be written (``filename`` is the record's path); the
                half-written temporary file is removed and the partial file kept.
        """
        try:
            with named(self.path):
                self.out_dir.mkdir(parents=True, exist_ok=True)
                replace_whole_from(self.path, stream_record(record, whole or self.case))
        finally:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        self.partial.unlink(missing_ok=True)
        return self.path


def stream_record(record: RunRecord, whole: Callable[[CaseRecord], CaseRecord]) -> Iterator[str]:
    """The text of ``record.model_dump_json(indent=2)`` plus a newline, in pieces, each case as ``whole(case)``.

    The record without its long lists (``cases``, ``fixtures`` and the aggregate's
    ``trials.per_case``: each has an entry per case) is dumped once, and each entry is dumped alone
    and indented to its place in its list, which is the text pydantic writes for the whole record
    (JSON strings hold no raw newline, so indenting by lines is exact). So the text in memory at
    once is the record's short part and one entry, whatever the number of cases.
    """
    trials = record.aggregate.trials
    lists: list[tuple[str, int, Iterable[str]]] = [
        ("fixtures", 2, (_dump_fixture(f) for f in record.fixtures)),
        ("cases", 2, (whole(c).model_dump_json(indent=2) for c in record.cases)),
    ]
    short = record.model_copy(update={"cases": [], "fixtures": []})
    if trials is not None:
        lists.append(("per_case", 6, (c.model_dump_json(indent=2) for c in trials.per_case)))
        short = short.model_copy(update={"aggregate": record.aggregate.model_copy(
            update={"trials": trials.model_copy(update={"per_case": []})})})
    head = short.model_dump_json(indent=2)
    del short
    places = [(head.find(_empty_list(name, pad)), name, pad, entries) for name, pad, entries in lists]
    if any(at < 0 or head.count(_empty_list(name, pad)) != 1 for at, name, pad, _ in places):  # pragma: no cover
        # pydantic changed its layout: the whole text at once
        whole_cases = record.model_copy(update={"cases": [whole(c) for c in record.cases]})
        yield whole_cases.model_dump_json(indent=2) + "\n"
        return
    done = 0
    for at, name, pad, entries in sorted(places, key=lambda place: place[0]):
        yield head[done:at]
        yield from _list_text(name, pad, entries)
        done = at + len(_empty_list(name, pad))
    yield head[done:]
    yield "\n"


def _empty_list(name: str, pad: int) -> str:
    """The text pydantic's ``indent=2`` gives an empty list field ``name`` at ``pad`` spaces."""
    return f'\n{" " * pad}"{name}": []'


def _list_text(name: str, pad: int, entries: Iterable[str]) -> Iterator[str]:
    """The list field ``name`` at ``pad`` spaces, each entry (its own ``indent=2`` text) indented to its place."""
    inner = "\n" + " " * (pad + 2)
    some = False
    for i, text in enumerate(entries):
        if not i:
            yield f'\n{" " * pad}"{name}": ['
        some = True
        yield ("," if i else "") + inner + text.replace("\n", inner)
    yield f'\n{" " * pad}]' if some else _empty_list(name, pad)


@cache
def _fixture_adapter() -> TypeAdapter[dict[str, str]]:
    return TypeAdapter(dict[str, str])


def _dump_fixture(fixture: dict[str, str]) -> str:
    """One ``RunRecord.fixtures`` entry as pydantic writes it inside the record (``indent=2``)."""
    return _fixture_adapter().dump_json(fixture, indent=2).decode()
