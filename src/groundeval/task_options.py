"""Declared task options (``TaskOption``) and the built-in tasks' option tables.

Standard library only, and outside ``groundeval.tasks``: the plugin reads ``BUILTIN_OPTIONS`` at
``pytest_addoption`` (every pytest session, groundeval or not) to give the built-in tasks'
options first-class flags (``--groundeval-min-f1``), without importing any task. Each built-in
task class points its ``options`` at its tuple here; a task from outside declares its own
tuple on its class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUILTIN_OPTIONS", "EXTRACTION_OPTIONS", "SUMMARY_OPTIONS", "WRITE_OPTIONS", "TaskOption", "boolean", "choice",
    "unit_interval",
]


@dataclass(frozen=True, slots=True)
class TaskOption:
    """One option a task reads (a threshold, a naming scheme).

    Given on the command line as ``--groundeval-option=<name>=<value>`` (or the ini line
    ``groundeval_option = <name>=<value>``); the built-in tasks' options also have first-class
    flags ``--groundeval-<name with - for _>``.

    Attributes:
        name: The key, a Python identifier (``"min_f1"``); also the task's attribute name.
        convert: Turns the raw string into the value; raises ``ValueError`` whose message starts
            with ``"must"`` to give the reason (e.g. ``unit_interval``). ``float``/``int`` work.
        default: The value when the option is not given.
        help: One line for ``--help`` and the options table (docs/reference/options.md).
        metavar: Placeholder shown in ``--help``.
    """

    name: str
    convert: Callable[[str], Any]
    default: Any
    help: str
    metavar: str = "VALUE"

    def value(self, raw: Any) -> Any:
        """Convert a raw value (a string from the command line, or an already-typed value).

        Raises:
            ValueError: The value is invalid; the message is the reason (``"must be ..."``,
                ``"not a number"``).
        """
        if raw is None:
            return self.default
        try:
            return self.convert(str(raw).strip())
        except (TypeError, ValueError) as exc:
            text = str(exc)
            raise ValueError(text if text.startswith(("must", "not ")) else f"not a valid {self.metavar}") from None

    def parse(self, raw: Any, task: str) -> Any:
        """``value(raw)``, with a bad value reported as a ``ConfigError``.

        Raises:
            ConfigError: The value is invalid; the message names the task, the key and why.
        """
        try:
            return self.value(raw)
        except ValueError as exc:
            from groundeval.errors import ConfigError

            raise ConfigError(f"task {task!r} option {self.name}={str(raw)!r}: {exc}") from None


def unit_interval(value: str) -> float:
    """A number in [0, 1] (a rate threshold such as ``min_f1``).

    Raises:
        ValueError: Not a number, or outside [0, 1].
    """
    try:
        number = float(value)
    except ValueError:
        raise ValueError("not a number") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError("must be between 0 and 1")
    return number


def choice(*allowed: str, why: str = "") -> Callable[[str], str]:
    """A converter accepting only ``allowed`` strings; the error lists them (or says ``why``)."""

    def convert(value: str) -> str:
        if value not in allowed:
            raise ValueError(why or "must be one of: " + ", ".join(repr(a) for a in allowed))
        return value

    return convert


_TRUE, _FALSE = frozenset({"true", "yes", "on", "1"}), frozenset({"false", "no", "off", "0"})


def boolean(value: str) -> bool:
    """``true``/``yes``/``on``/``1`` or ``false``/``no``/``off``/``0`` (any case).

    Raises:
        ValueError: Anything else.
    """
    word = value.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ValueError("must be true or false")


EXTRACTION_OPTIONS: tuple[TaskOption, ...] = (
    TaskOption("min_f1", unit_interval, 1.0, "Extraction: RxNorm F1 a case needs to pass.", "X"),
    TaskOption("min_display_accuracy", unit_interval, 1.0, "Extraction: display accuracy a case needs to pass.", "X"),
    TaskOption(
        "case_ids", choice("name", "file", why="must be 'name' (the file stem, UUID cut to 8 characters) or "
                           "'file' (the whole file stem)"), "name",
        "Extraction: case ids from the file stem with a trailing UUID cut to 8 characters ('name') or from "
        "the whole file stem ('file').", "name|file",
    ),
    TaskOption(
        "bundle_in_prompt", boolean, True,
        "Extraction: paste the Bundle into the prompt (true), or leave it out so that only a tool-using agent "
        "reading it through the FHIR read tools (langgraph, langgraph-fhir) can answer (false).", "true|false",
    ),
)

WRITE_OPTIONS: tuple[TaskOption, ...] = ()

def _words(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ValueError("not a whole number") from None
    if number < 1:
        raise ValueError("must be at least 1")
    return number


SUMMARY_OPTIONS: tuple[TaskOption, ...] = (
    TaskOption(
        "judge", str, "baseline",
        "Summary: who decides the rubric criteria text matching cannot: baseline (rule-based, no model), a model "
        "spec (anthropic/<model>, openai-compatible/<name>@<url>, local/<gguf>) or package.module:attribute.",
        "JUDGE",
    ),
    TaskOption(
        "judge_card", str, None,
        "Summary: the judge card (groundeval calibrate -o CARD.json) giving the judge's measured kappa. Default: "
        "the packaged card of the same judge and prompt, else the scores are marked judge not calibrated.", "CARD.json",
    ),
    TaskOption("max_words", _words, 250, "Summary: the word limit the prompt states and a passing summary keeps.", "N"),
    TaskOption("min_rubric_score", unit_interval, 0.8, "Summary: rubric score a case needs to pass.", "X"),
)

BUILTIN_OPTIONS: dict[str, tuple[TaskOption, ...]] = {
    "extraction": EXTRACTION_OPTIONS, "write": WRITE_OPTIONS, "summary": SUMMARY_OPTIONS,
}
"""Built-in task name -> its declared options (the same tuples the task classes use)."""
