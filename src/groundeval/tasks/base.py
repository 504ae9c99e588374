"""The task extension point: the ``Task`` protocol, declared options, scorers and ``BaseTask``.

A task turns files into cases, renders each case's prompt, derives its ground truth from the same
data the agent sees, parses the agent's raw answer and hands the comparison to its scorer (in the
spirit of inspect_ai's ``Task(dataset, solver, scorer)``). The runner calls the methods of
``Task`` and never inspects the values they return.

Writing a task means subclassing ``BaseTask`` and supplying five things: ``load_case``,
``prompt``, ``truth``, ``parse`` and a ``scorer`` (anything with ``metric_names``, ``score`` and
``aggregate``). ``BaseTask`` supplies ``case_files``, ``context``, ``score``, ``aggregate``,
``metric_names``, ``provides`` and ``from_options`` (which reads the options the task declares in
``options``).

Capabilities (what a task offers an agent; ``Agent.requires`` names what an agent needs):

* ``"text_prompt"`` (``TEXT_PROMPT``): the prompt is text an agent can answer from alone. Every
  task that renders a ``Prompt`` provides it.
* ``"tools"`` (``TOOLS``): the task offers tools to call (their names in ``Task.tools``; the
  tools themselves from ``case_tools(case)``, which the runner hands an agent as
  ``AgentRequest.tools``).
* ``"fhir_bundle"`` (``FHIR_BUNDLE``): ``context(case)["bundle"]`` is the case's FHIR Bundle (a
  dict), so a tool-using agent can serve it through read-only tools
  (``groundeval.fhir.read_tools``). A ``BaseTask`` declares it with ``bundle_in_context = True``
  (which also provides ``TOOLS``; name the read tools in ``tools``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from groundeval.agent_io import Prompt
from groundeval.datasets import Case
from groundeval.errors import AgentError, ConfigError
from groundeval.options import TaskOption, choice, unit_interval
from groundeval.scoring import Direction, Metric, Parsed, Score

__all__ = [
    "CAPABILITIES",
    "FHIR_BUNDLE",
    "TEXT_PROMPT",
    "TOOLS",
    "BaseTask",
    "Scorer",
    "Task",
    "TaskOption",
    "case_files",
    "choice",
    "site_catalog",
    "tools_of",
    "unit_interval",
]

TEXT_PROMPT = "text_prompt"
"""Capability: the task renders a text prompt an agent can answer from alone."""

TOOLS = "tools"
"""Capability: the task offers tools (named in ``Task.tools``) for a tool-using agent."""

FHIR_BUNDLE = "fhir_bundle"
"""Capability: ``context(case)["bundle"]`` holds the case's FHIR Bundle for read-only tools."""

CAPABILITIES = frozenset({TEXT_PROMPT, TOOLS, FHIR_BUNDLE})
"""Every capability name a task can provide and an agent can require."""


@runtime_checkable
class Scorer(Protocol):
    """Scores one case and combines the scores of a run.

    Attributes:
        metric_names: Every key ``score`` may put in ``Score.metrics``, in report order.

    Optionally ``metric_directions`` (a mapping metric name -> ``"lower"`` or ``"none"``, see
    ``groundeval.scoring.Direction``) names the metrics for which a higher value is not better.
    """

    metric_names: tuple[str, ...]

    def score(self, case: Case, truth: Any, parsed: Parsed) -> Score:
        """Compare a parsed answer with the truth; metric values are primitives."""
        ...

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """Combine the per-case metrics of the scored cases into run-level numbers."""
        ...


@runtime_checkable
class Task(Protocol):
    """One kind of eval (extraction, write-and-validate, ...), as the runner and plugin see it.

    Attributes:
        name: Short name recorded in the run record, node ids and junit (``"extraction"``).
        default_agent: Agent used when ``--groundeval-agent`` is not given.
        options: The options the task reads (``from_options`` accepts only these keys).
        metric_names: Every per-case metric the scorer can emit (junit shows each on every case;
            the run record carries them, and comparisons and reports read them from there).
        tools: Names of the tools the task offers an agent; empty when it offers none.
        provides: Capability names (``TEXT_PROMPT``, ``TOOLS``, ``FHIR_BUNDLE``) the task offers agents.

    Optionally a task has ``metric_directions`` (``BaseTask`` takes its scorer's): metric name ->
    ``"lower"``/``"none"`` where higher is not better; the run record carries it beside
    ``metric_names``; and ``check_case(case) -> None``, the checks that cost more than reading
    the file (FHIR R4B validation), which the runner calls on a case just before its truth and
    its agent call, so collection stays cheap and a worker checks only the cases it runs
    (``BaseTask.check_case``).
    """

    name: ClassVar[str]
    default_agent: ClassVar[str]
    options: ClassVar[tuple[TaskOption, ...]]

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Every per-case metric key the task's scorer can emit, in report order."""
        ...

    @property
    def tools(self) -> tuple[str, ...]:
        """Names of the tools the task offers an agent (empty: none)."""
        ...

    @property
    def provides(self) -> frozenset[str]:
        """Capabilities offered to agents."""
        ...

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Task:
        """Build the task from option values (strings or typed values), keyed by option name.

        Raises:
            ConfigError: An unknown key or a bad value; the message names the task and the key.
        """
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


@cache
def site_catalog() -> Any:
    """The packaged site catalog (``groundeval.terminology.Catalog.load()``), read once per process.

    Raises:
        DatasetError: The catalog file is missing or malformed.
    """
    from groundeval.terminology import Catalog

    return Catalog.load()


def tools_of(task: Any, case: Case) -> Callable[[], list[Any]] | None:
    """What builds ``case``'s tools (``task.case_tools(case)``, called later and only if needed), or None.

    None when the task does not provide ``TOOLS`` or has no ``case_tools`` (a task written to the
    ``Task`` protocol without tools). The runner puts it in ``AgentRequest.tools``, so an agent
    or tool server gets the tools the task declares without reading the request context.
    """
    build = getattr(task, "case_tools", None)
    if TOOLS not in getattr(task, "provides", frozenset()) or not callable(build):
        return None

    def tools() -> list[Any]:
        built: list[Any] = build(case)
        return built

    return tools


def case_files(data_dir: Path, pattern: str = "*.json") -> list[Path]:
    """The case files of a data directory: ``pattern`` matches directly in it, sorted by name.

    Not recursive (a sibling directory of patient Bundles or notes is not read as cases), and a
    matching entry that is not a readable regular file (a directory named ``x.json``, a FIFO, a
    dangling symlink) is still listed, so that loading it reports a collection error naming it;
    manifest (``MANIFEST.json``, ``MANIFEST.<name>.json``: the fixture scripts' provenance files)
    is never a case.
    """
    return sorted(p for p in data_dir.glob(pattern) if not is_manifest(p))


def is_manifest(path: Path) -> bool:
    """True for ``MANIFEST.json`` and ``MANIFEST.<anything>.json``: descriptions, not cases."""
    return path.name == "MANIFEST.json" or (path.name.startswith("MANIFEST.") and path.suffix == ".json")


class BaseTask:
    """What every task shares; subclass it and supply the five task-specific pieces.

    Subclasses set ``name``, ``default_agent``, ``scorer`` (or override ``score``/``aggregate``
    and ``metric_names``), optionally ``options``, ``tools``, ``bundle_in_context``, ``data_dir`` and
    ``claims``, and
    implement ``load_case``, ``prompt``, ``truth`` and ``parse``. A subclass that is a
    dataclass gets one field per option (``from_options`` passes them as keyword arguments);
    otherwise the values are set as attributes.

    Attributes:
        data_dir: Directory of the task's own cases, used when ``--groundeval-data-dir`` is not
            given (None: the packaged ``fixtures/<name>`` of a built-in task).
        scorer: The task's ``Scorer``.
        bundle_in_context: True when ``context(case)["bundle"]`` is the case's FHIR Bundle (a
            dict): the task then provides ``FHIR_BUNDLE`` and ``TOOLS``.
    """

    __slots__ = ()

    name: ClassVar[str] = ""
    default_agent: ClassVar[str] = "claude"
    options: ClassVar[tuple[TaskOption, ...]] = ()
    tools: ClassVar[tuple[str, ...]] = ()
    bundle_in_context: ClassVar[bool] = False
    data_dir: ClassVar[Path | None] = None
    scorer: Any = None

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The scorer's ``metric_names``."""
        return tuple(self.scorer.metric_names) if self.scorer is not None else ()

    @property
    def metric_directions(self) -> Mapping[str, Direction]:
        """Metric name -> ``"lower"``/``"none"`` for metrics where higher is not better (optional).

        The scorer's ``metric_directions`` when it has one, else empty (every metric higher-is-better).
        Recorded in the run record; ``groundeval compare`` labels per-case changes by it.
        """
        return dict(getattr(self.scorer, "metric_directions", None) or {})

    @property
    def provides(self) -> frozenset[str]:
        """``TEXT_PROMPT``; ``TOOLS`` when ``tools`` is set; ``FHIR_BUNDLE`` and ``TOOLS`` if ``bundle_in_context``."""
        bundle = (FHIR_BUNDLE, TOOLS) if self.bundle_in_context else ()
        return frozenset({TEXT_PROMPT, *((TOOLS,) if self.tools else ()), *bundle})

    @classmethod
    def option_values(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """Every declared option's value: ``options`` converted, defaults for the rest.

        Raises:
            ConfigError: A key the task does not declare, or a bad value (naming task and key).
        """
        declared = {o.name: o for o in cls.options}
        unknown = sorted(set(options) - set(declared))
        if unknown:
            known = ", ".join(sorted(declared)) or "none"
            raise ConfigError(f"task {cls.name!r} has no option {unknown[0]!r} (its options: {known})")
        return {name: opt.parse(options.get(name), cls.name) for name, opt in declared.items()}

    @classmethod
    def from_options(cls, options: Mapping[str, Any], *, call_options: Mapping[str, Any] | None = None) -> Any:
        """Build the task from option values keyed by option name (see ``option_values``).

        Args:
            options: The task's declared options.
            call_options: The run's model-call policy (``models.retry.CALL_POLICY_OPTIONS``:
                ``max_retries``, ``timeout`` seconds), handed to a dataclass task with a
                ``call_options`` field (a task that calls a model itself: the summary task's judge).

        Raises:
            ConfigError: Unknown key or bad value.
        """
        values = cls.option_values(options)
        if is_dataclass(cls):
            names = {f.name for f in fields(cls)}
            chosen = {k: v for k, v in values.items() if k in names}
            if call_options is not None and "call_options" in names:
                chosen["call_options"] = dict(call_options)
            return cls(**chosen)
        task = cls()
        for key, value in values.items():
            setattr(task, key, value)
        return task

    @classmethod
    def claims(cls, data: Mapping[str, Any]) -> bool:
        """True when a parsed case file looks like this task's format (used only for hints)."""
        del data
        return False

    def case_files(self, data_dir: Path) -> list[Path]:
        """Every ``*.json`` directly in ``data_dir`` except manifests, sorted by name."""
        return case_files(data_dir)

    def load_case(self, path: Path) -> Case:
        """Read one case file (subclasses implement it).

        Raises:
            DatasetError: The file is malformed.
        """
        raise NotImplementedError

    def check_case(self, case: Case) -> None:
        """The case file's costly checks, run when its case is about to run; none by default.

        ``load_case`` runs at collection, in every process that collects (each pytest-xdist
        worker), for every file, selected or not: keep it to what the case id and the cheap
        shape checks need. Put checks that cost more (validating FHIR resources) here. The
        runner calls this before the truth and before any agent call; a ``DatasetError`` makes
        the case ``invalid_case`` (a pytest error, excluded from the means, counted), the agent
        is never called and the run goes on.

        Raises:
            DatasetError: The file fails a check; the message names the file, the value and the fix.
        """
        del case

    def prompt(self, case: Case) -> Prompt:
        """Render the prompt (subclasses implement it)."""
        raise NotImplementedError

    def case_tools(self, case: Case) -> list[Any]:
        """The LangChain tools this case offers a tool-using agent (in-process or over MCP).

        By default, with ``bundle_in_context``: the read-only FHIR tools over the case's Bundle
        (``groundeval.fhir.read_tools.make_read_tools`` over ``context(case)["bundle"]`` and the
        site catalog); otherwise none. A task that offers other tools overrides it (the write
        task: its catalog lookup, builder and validator).

        Raises:
            AgentError: The Bundle cannot back the read tools (not valid FHIR R4B for HealthChain;
                ``details["issues"]``).
        """
        if not self.bundle_in_context:
            return []
        from groundeval.fhir.read_tools import BundleToolsError, make_read_tools

        try:
            return make_read_tools(self.context(case)["bundle"], site_catalog())
        except BundleToolsError as exc:
            raise AgentError(f"{case.case_id}: the read tools cannot serve this case: {exc}",
                             details={"issues": exc.issues}) from exc

    def context(self, case: Case) -> dict[str, Any]:
        """No facts beyond the prompt (override to add some, JSON-safe)."""
        return {}

    def truth(self, case: Case) -> Any:
        """Derive the expected answer (subclasses implement it)."""
        raise NotImplementedError

    def parse(self, case: Case, raw: str) -> Parsed:
        """Parse the raw answer (subclasses implement it)."""
        raise NotImplementedError

    def score(self, case: Case, truth: Any, parsed: Parsed) -> Score:
        """Delegate to ``scorer.score``."""
        result: Score = self.scorer.score(case, truth, parsed)
        return result

    def aggregate(self, metrics: Sequence[Mapping[str, Metric]]) -> dict[str, Metric]:
        """Delegate to ``scorer.aggregate``."""
        result: dict[str, Metric] = self.scorer.aggregate(metrics)
        return result
