"""Writing one run's record to disk: each finished case as it ends, the whole record at the end.

Each case is appended to ``<run_id>.partial.jsonl`` as one line, written whole or not at all (a
failed write cuts the file back), so a run killed at any point leaves every finished case readable;
the complete record is then written atomically to ``<run_id>.json`` and the partial file removed.
Errors name the file (``records.write_errors.named``).
"""

from __future__ import annotations

import json
from pathlib import Path

from groundeval.records.run_record import CaseRecord, RunRecord
from groundeval.records.write_errors import append_whole, named, replace_whole

__all__ = ["RunWriter"]


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

    def append(self, case: CaseRecord) -> None:
        """Append one finished case to the partial file as one line, written whole or not at all.

        Raises:
            OSError: The line could not be written (``filename`` is the partial file); the file
                is cut back to where it was, so every line it holds is a whole case.
        """
        line = json.dumps(case.model_dump(mode="json"), ensure_ascii=False) + "\n"
        with named(self.partial):
            self.out_dir.mkdir(parents=True, exist_ok=True)
            append_whole(self.partial, line.encode("utf-8", "surrogatepass"))
        self.appended += 1

    def finish(self, record: RunRecord) -> Path:
        """Write the complete record atomically, remove the partial file, return the path.

        Raises:
            OSError: The record could not be written (``filename`` is the record's path); the
                half-written temporary file is removed and the partial file kept.
        """
        text = record.model_dump_json(indent=2)
        with named(self.path):
            self.out_dir.mkdir(parents=True, exist_ok=True)
            replace_whole(self.path, text + "\n")
        self.partial.unlink(missing_ok=True)
        return self.path

