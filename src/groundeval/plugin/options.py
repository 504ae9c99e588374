"""Command-line options, their ini twins, and validation into ``Settings``.

Every option ``--groundeval-x-y`` has an ini twin ``groundeval_x_y``; the command line wins.
Bad values raise ``pytest.UsageError`` naming the option and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = ["OPTIONS", "Settings", "add_options", "read_settings"]


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("must be 1 or more")
    return number


def _non_negative_int(value: str) -> int:
    number = int(value)
    if number < 0:
        raise ValueError("must be 0 or more")
    return number


def _unit_float(value: str) -> float:
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise ValueError("must be between 0 and 1")
    return number


def _positive_float(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise ValueError("must be greater than 0")
    return number


def _case_ids(value: str) -> str:
    if value not in ("name", "file"):
        raise ValueError("must be 'name' (patient name + id) or 'file' (the file name)")
    return value


def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


@dataclass(frozen=True, slots=True)
class Option:
    """One ``--groundeval-<name>`` option.

    Attributes:
        name: Option name without the prefix (``"min-f1"``).
        convert: Turns the raw string into the value; raises ValueError with a reason.
        default: Value when neither the command line nor the ini file sets it.
        help: Help text; the default is appended.
        metavar: Placeholder shown in ``--help``.
        scope: ``"run"``, ``"task"`` (passed to the task) or ``"agent"`` (passed to the agent).
    """

    name: str
    convert: Callable[[str], Any]
    default: Any
    help: str
    metavar: str = "VALUE"
    scope: str = "run"

    @property
    def dest(self) -> str:
        """The attribute/ini key: ``groundeval_min_f1``."""
        return "groundeval_" + self.name.replace("-", "_")

    @property
    def key(self) -> str:
        """The settings key: ``min_f1``."""
        return self.name.replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option(
        "task", _text, None,
        "Run this eval task: extraction (read active medications from a FHIR Bundle) or write "
        "(write an R4B MedicationStatement from a note). Without it the plugin is off.", "NAME",
    ),
    Option(
        "agent", _text, None,
        "Agent: claude, openai-compatible, baseline, naive (extraction), langgraph, baseline-write "
        "(write), or package.module:attribute. Default: the task's own (claude for extraction, "
        "langgraph for write).", "NAME",
    ),
    Option("model", _text, None, "Model id for model-backed agents.", "ID", "agent"),
    Option("limit", _positive_int, None, "Run only the first N cases (sorted by file name).", "N"),
    Option("data-dir", _text, None, "Directory of case files (default: the packaged fixtures).", "DIR"),
    Option("out-dir", _text, "runs", "Directory for JSON run records.", "DIR"),
    Option("min-f1", _unit_float, 1.0, "Extraction: RxNorm F1 a case needs to pass.", "X", "task"),
    Option(
        "min-display-accuracy", _unit_float, 1.0,
        "Extraction: display accuracy a case needs to pass.", "X", "task",
    ),
    Option(
        "case-ids", _case_ids, "name",
        "Extraction: name cases by patient name + short id ('name') or by file name ('file', for "
        "real data, so names stay out of node ids, junit files and logs).", "name|file", "task",
    ),
    Option("max-tokens", _positive_int, 4096, "Model output limit per call, tokens.", "N", "agent"),
    Option(
        "temperature", float, None,
        "Sampling temperature for model-backed agents. Default: none sent, so the model's own "
        "(Claude Opus 4.7 and later reject an explicit temperature).", "T", "agent",
    ),
    Option(
        "max-retries", _non_negative_int, 2,
        "Retries of a model call after 429/529/5xx/timeout/connection errors (the only retry "
        "layer; Retry-After honoured).", "N", "agent",
    ),
    Option(
        "timeout", _positive_float, 600.0,
        "Upper bound on one case's model time, retries and waits included, seconds.", "SECONDS", "agent",
    ),
    Option(
        "recursion-limit", _positive_int, None,
        "Tool-using (LangGraph) agents: graph steps per case before the case ends as agent_loop. "
        "Default: 25.", "N", "agent",
    ),
    Option(
        "base-url", _text, None,
        "Server URL for the openai-compatible agent, e.g. http://127.0.0.1:8000/v1 (vLLM).", "URL", "agent",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    """Register every option in the ``groundeval`` group, each with an ini twin."""
    group = parser.getgroup("groundeval", "groundeval: evals of healthcare AI agents")
    for opt in OPTIONS:
        shown = "" if opt.default is None else f" Default: {opt.default}."
        group.addoption(
            f"--groundeval-{opt.name}", dest=opt.dest, default=None, metavar=opt.metavar,
            help=opt.help + shown,
        )
        parser.addini(opt.dest, opt.help + shown, type="string", default="")


@dataclass(frozen=True, slots=True)
class Settings:
    """Validated run settings.

    Attributes:
        task: Task name, or None when the plugin is off.
        agent: Agent spec.
        limit: Case limit, or None for all.
        data_dir: Directory holding the case files.
        out_dir: Directory for run records.
        task_options: Options handed to the task (thresholds).
        agent_options: Options handed to the agent (model settings; never secrets).
        model: Model id, or None for the agent's default.
    """

    task: str | None
    agent: str = ""
    limit: int | None = None
    data_dir: Path = Path()
    out_dir: Path = Path("runs")
    model: str | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    agent_options: dict[str, Any] = field(default_factory=dict)


def _raw(config: pytest.Config, opt: Option) -> tuple[str | None, str]:
    """The raw value and where it came from (the command-line flag or the ini key)."""
    value = config.getoption(opt.dest, default=None)
    if value is not None:
        return str(value), f"--groundeval-{opt.name}"
    ini = config.getini(opt.dest)
    if isinstance(ini, str) and ini.strip():
        return ini, f"ini {opt.dest}"
    return None, ""


_KINDS: dict[Callable[[str], Any], str] = {
    _positive_int: "a whole number", _non_negative_int: "a whole number",
    _unit_float: "a number", _positive_float: "a number", float: "a number",
}


def _task_default_agent(task: str) -> str:
    from groundeval.tasks import task_class

    return str(task_class(task).default_agent)


def read_settings(config: pytest.Config) -> Settings:
    """Read and validate every option; with no task, read nothing else.

    ``--groundeval-task=`` (empty) switches off a task set in the ini file.

    Raises:
        pytest.UsageError: A value is invalid (the message names the flag or ini key it came
            from), the data directory does not exist or holds no case files.
    """
    task_raw, _ = _raw(config, OPTIONS[0])
    if task_raw is None or not task_raw.strip():
        return Settings(task=None)  # the plugin is off: ordinary runs never see our options
    values: dict[str, Any] = {}
    given: dict[str, str] = {}
    for opt in OPTIONS:
        raw, source = _raw(config, opt)
        if raw is None:
            values[opt.key] = opt.default
            continue
        given[opt.key] = source
        try:
            values[opt.key] = opt.convert(raw)
        except ValueError as exc:
            reason = str(exc) if "must" in str(exc) else f"not {_KINDS.get(opt.convert, 'valid')}"
            raise pytest.UsageError(f"{source}={raw!r}: {reason}") from None
    task = values["task"]
    from groundeval.datasets import default_data_dir
    from groundeval.tasks import TASKS

    if task not in TASKS:
        raise pytest.UsageError(
            f"--groundeval-task={task!r}: unknown task; choose one of: {', '.join(sorted(TASKS))}"
        )
    base = config.invocation_params.dir
    data_dir = Path(values["data_dir"]).expanduser() if values["data_dir"] else default_data_dir(task)
    data_dir = (base / data_dir).resolve()
    if not data_dir.is_dir():
        raise pytest.UsageError(
            f"--groundeval-data-dir={str(data_dir)!r}: not a directory; give a directory of "
            f"{task} case files"
        )
    from groundeval.tasks import task_class

    cls = task_class(task)
    for opt in OPTIONS:
        # A flag that cannot apply is a mistake; an ini value may serve the other task.
        if opt.scope == "task" and given.get(opt.key, "").startswith("--") and not hasattr(cls, opt.key):
            raise pytest.UsageError(f"{given[opt.key]} does not apply to the {task} task; drop it")
    if not cls.from_options({}).case_files(data_dir):
        raise pytest.UsageError(
            f"--groundeval-data-dir={str(data_dir)!r}: no {task} case files (*.json) in it"
        )
    return Settings(
        task=task,
        agent=values["agent"] or _task_default_agent(task),
        limit=values["limit"],
        data_dir=data_dir,
        out_dir=(base / os.path.expanduser(values["out_dir"])).resolve(),
        model=values["model"],
        task_options={o.key: values[o.key] for o in OPTIONS if o.scope == "task"},
        agent_options={o.key: values[o.key] for o in OPTIONS if o.scope == "agent" and o.key != "model"},
    )
