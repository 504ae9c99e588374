"""The summary task's human labels: the generic label file (``scorers.labels``) with its kinds.

The format is documented for users in docs/tasks/summary.md, "Human labels"; ``case_id`` names a
packaged summary case (``fixtures/summary/<file>.json``: the file stem with its UUID cut to 8
characters) and ``summary`` holds the summary text, exactly as scored. For a ``must_not_state``
criterion, ``met`` means the mistake was made (``not_met``: it was not).
"""

from __future__ import annotations

from pathlib import Path

from groundeval.scorers.labels import LabelSet

__all__ = ["FORMAT_DOC", "KINDS", "read_labels"]

KINDS = ("faithful_prose", "faithful_structured", "faithful_terse", "clinical_error", "gaming")
"""What a summary was written to be (optional ``kind``); the first three are faithful ones."""

FORMAT_DOC = 'the format: docs/tasks/summary.md, "Human labels"'
"""Where a label file's error message sends the reader."""


def read_labels(path: Path) -> LabelSet:
    """Read and check a summary label file (``scorers.labels.read_labels`` with ``KINDS``).

    Raises:
        DatasetError: See ``scorers.labels.read_labels``; the message names this task's format page.
    """
    from groundeval.scorers.labels import read_labels as read

    return read(path, kinds=KINDS, doc=FORMAT_DOC)
