"""The task extension point.

A task turns files into cases, renders each case's prompt, derives its ground truth from the same
data the agent sees, parses the agent's raw answer and delegates comparison to its scorer. The
runner calls these methods and never inspects the values they return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from groundeval.datasets import Case
from groundeval.records import Metric, Parsed, Prompt, Score

__all__ = ["Task"]


@runtime_checkable
class Task(Protocol):
    """One kind of eval (extraction, write-and-validate, ...).

    Attributes:
        name: The value of ``--groundeval-task``.
        default_agent: Agent used when ``--groundeval-agent`` is not given.
    """

    name: ClassVar[str]
    default_agent: ClassVar[str]

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Task:
        """Build the task from run options (thresholds); unknown keys are ignored."""
        ...

    def case_files(self, data_dir: Path) -> list[Path]:
        """Return the case files under ``data_dir``, sorted, one per case."""
        ...

    def load_case(self, path: Path) -> Case:
        """Read one case file.

        Raises:
            DatasetError: The file is malformed; the message names it and the fix.
        """
        ...

    def prompt(self, case: Case) -> Prompt:
        """Render the prompt the agent sees for ``case``."""
        ...

    def context(self, case: Case) -> dict[str, Any]:
        """Return agent-visible facts beyond the prompt (JSON-safe); usually empty."""
        ...

    def truth(self, case: Case) -> Any:
        """Derive the expected answer from the case data (JSON-safe)."""
        ...

    def parse(self, case: Case, raw: str) -> Parsed:
        """Parse the agent's raw text; never raises for a bad answer."""
        ...

    def score(self, case: Case, truth: Any, parsed: Parsed) -> Score:
        """Compare the parsed answer with the truth."""
        ...

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """Combine the metrics of the scored cases into run-level numbers."""
        ...
