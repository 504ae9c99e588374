"""groundeval's own tasks and agents, declared as any package declares its own.

Each declaration here is registered by one line in groundeval's ``pyproject.toml``
(``[project.entry-points."groundeval.tasks"]`` / ``"groundeval.agents"``), the same line another
package writes for its own. Standard library only: reading a declaration imports no task, agent
or SDK (the plugin reads the tasks' ``options`` at ``pytest_addoption``, in every pytest session).
The task classes point their ``options`` and ``default_agent`` at their declaration here.
"""

from __future__ import annotations

from typing import Any

from groundeval.options import Option, boolean, choice, positive_int, text, unit_interval
from groundeval.registry import AgentEntry, TaskEntry

EXTRACTION_OPTIONS: tuple[Option, ...] = (
    Option("min_f1", unit_interval, 1.0, "Extraction: RxNorm F1 a case needs to pass.", "X"),
    Option("min_display_accuracy", unit_interval, 1.0, "Extraction: display accuracy a case needs to pass.", "X"),
    Option(
        "case_ids", choice("name", "file", why="must be 'name' (the file stem, UUID cut to 8 characters) or "
                           "'file' (the whole file stem)"), "name",
        "Extraction: case ids from the file stem with a trailing UUID cut to 8 characters ('name') or from "
        "the whole file stem ('file').", "name|file",
    ),
    Option(
        "bundle_in_prompt", boolean, True,
        "Extraction: paste the Bundle into the prompt (true), or leave it out so that only a tool-using agent "
        "reading it through the FHIR read tools (langgraph, langgraph-fhir) can answer (false).", "true|false",
    ),
)

SUMMARY_OPTIONS: tuple[Option, ...] = (
    Option(
        "judge", text, "baseline",
        "Summary: who decides the rubric criteria text matching cannot: baseline (rule-based, no model), a model "
        "spec (anthropic/<model>, openai-compatible/<name>@<url>, local/<gguf>) or package.module:attribute.",
        "JUDGE",
    ),
    Option(
        "judge_card", text, None,
        "Summary: the judge card (groundeval calibrate -o CARD.json) giving the judge's measured kappa. Default: "
        "the packaged card of the same judge and prompt, else the scores are marked judge not calibrated.",
        "CARD.json",
    ),
    Option(
        "judge_cache", text, None,
        "Summary: keep a model judge's replies in DIR (SQLite), keyed by the judge's settings, prompt SHA-256 and "
        "the full request, so a rerun asks the judge only what changed. Default: off.", "DIR",
    ),
    Option("max_words", positive_int, 250, "Summary: the word limit the prompt states and a passing summary keeps.",
           "N"),
    Option("min_rubric_score", unit_interval, 0.8, "Summary: rubric score a case needs to pass.", "X"),
)

# Tasks, in the order messages list them.
extraction = TaskEntry(
    "groundeval.tasks.extraction.task:ExtractionTask", default_agent="claude", offline_agent="baseline",
    options=EXTRACTION_OPTIONS, bundle_in_context=True, about="read the active medications from a FHIR Bundle",
)
write = TaskEntry("groundeval.tasks.write.task:WriteTask", default_agent="langgraph", offline_agent="baseline-write",
                  about="write an R4B MedicationStatement from a note")
reconcile = TaskEntry(
    "groundeval.tasks.reconcile.task:ReconcileTask", default_agent="claude", offline_agent="baseline-reconcile",
    bundle_in_context=True, about="check a patient's admission medication report against the record",
)
labs = TaskEntry("groundeval.tasks.labs:LabsTask", default_agent="claude", offline_agent="baseline-labs",
                 bundle_in_context=True, about="interpret lab and vital-sign results against a cited threshold table")
summary = TaskEntry("groundeval.tasks.summary:SummaryTask", default_agent="claude", offline_agent="baseline-summary",
                    options=SUMMARY_OPTIONS, bundle_in_context=True,
                    about="a handoff summary, scored criterion by criterion with a measured judge")

# Agents, in the order messages list them ("agents that serve write: claude, openai-compatible, ...").
_TASKS = {attr.replace("_", "-"): value for attr, value in dict(globals()).items() if isinstance(value, TaskEntry)}
ANY_TASK = tuple(_TASKS)
"""Every task declared above, in order: what an agent that answers any prompt serves."""
BUNDLE_TASKS = tuple(name for name, entry in _TASKS.items() if entry.bundle_in_context)
"""The tasks declared above whose context holds the case's FHIR Bundle (``fhir_bundle``)."""

claude = AgentEntry(
    "groundeval.agents.claude:ClaudeAgent", ANY_TASK,
    about='Claude through the Messages API',
)
openai_compatible = AgentEntry(
    "groundeval.agents.openai_compat:OpenAICompatibleAgent", ANY_TASK,
    about='any OpenAI-compatible chat server, model@URL',
)
local = AgentEntry(
    "groundeval.agents.local:LocalAgent", ANY_TASK,
    about='a llama.cpp server it starts on a GGUF model',
)
baseline = AgentEntry(
     "groundeval.agents.baselines.extraction:BaselineExtractionAgent", ("extraction",), needs_extra="healthchain",
    about='rule-based reader of the record',
)
naive = AgentEntry(
     "groundeval.agents.baselines.extraction:NaiveExtractionAgent", ("extraction",), needs_extra="healthchain",
    about='negative control: every MedicationRequest, whatever its status',
)
priors = AgentEntry(
    "groundeval.agents.baselines.priors:PriorsExtractionAgent", ("extraction",),
    about='remembered answers, never the record: the counterfactual control',
)
langgraph = AgentEntry(
    "groundeval.agents.langgraph_agent:LangGraphAgent", ANY_TASK,
    about="tool-using LangGraph agent over the case's tools",
)
langgraph_fhir = AgentEntry(
    "groundeval.agents.langgraph_agent:LangGraphFHIRAgent", BUNDLE_TASKS,
    about='the LangGraph agent with the FHIR read tools only',
)
langgraph_mcp = AgentEntry(
    "groundeval.agents.langgraph_mcp:LangGraphMCPAgent", ANY_TASK, needs_extra="mcp",
    about='the LangGraph agent reaching the tools over MCP',
)
langgraph_rest = AgentEntry(
    "groundeval.agents.langgraph_rest:LangGraphRestAgent", ANY_TASK, needs_extra="fhir-client",
    about="the LangGraph agent reading the record over FHIR REST (--groundeval-fhir)",
)
baseline_write = AgentEntry(
     "groundeval.agents.baselines.write:BaselineWriteAgent", ("write",), needs_extra="healthchain",
    about='rule-based MedicationStatement writer',
)
naive_write = AgentEntry(
    "groundeval.agents.baselines.write:NaiveWriteAgent", ("write",),
    about="negative control: one constant statement for every note",
)
baseline_reconcile = AgentEntry(
    "groundeval.agents.baselines.reconcile:BaselineReconcileAgent", ("reconcile",),
    about='rule-based reconciler',
)
naive_reconcile = AgentEntry(
    "groundeval.agents.baselines.reconcile:NaiveReconcileAgent", ("reconcile",),
    about='negative control: every drug called matched',
)
hedge_reconcile = AgentEntry(
    "groundeval.agents.baselines.reconcile:HedgingReconcileAgent", ("reconcile",),
    about='negative control: each drug under every status',
)
baseline_labs = AgentEntry(
    "groundeval.agents.baselines.labs:BaselineLabsAgent", ("labs",),
    about='rule-based reader of the results',
)
naive_labs = AgentEntry(
    "groundeval.agents.baselines.labs:NaiveLabsAgent", ("labs",),
    about="negative control: each test's earliest result, not its latest",
)
baseline_summary = AgentEntry(
    "groundeval.agents.baselines.summary:BaselineSummaryAgent", ("summary",),
    about='rule-based summary from the record',
)
naive_summary = AgentEntry(
    "groundeval.agents.baselines.summary:NaiveSummaryAgent", ("summary",),
    about='negative control: every condition and drug listed as current',
)
hedge_summary = AgentEntry(
    "groundeval.agents.baselines.summary:HedgingSummaryAgent", ("summary",),
    about='negative control: a summary that names nothing',
)
hedge_all_summary = AgentEntry(
    "groundeval.agents.baselines.summary:HedgeAllSummaryAgent", ("summary",),
    about='negative control: everything labelled both past and current',
)
baseline_rest = AgentEntry(
    "groundeval.agents.baselines.rest:BaselineRestAgent", ("extraction",), needs_extra="healthchain",
    about="the extraction baseline reading over FHIR REST (--groundeval-fhir)",
)
"""The ``*-rest`` baselines read the record over FHIR REST only (``--groundeval-fhir``)."""
baseline_labs_rest = AgentEntry(
    "groundeval.agents.baselines.rest:BaselineLabsRestAgent", ("labs",),
    about="the labs baseline reading over FHIR REST (--groundeval-fhir)",
)
baseline_reconcile_rest = AgentEntry(
    "groundeval.agents.baselines.rest:BaselineReconcileRestAgent", ("reconcile",),
    about="the reconcile baseline reading over FHIR REST (--groundeval-fhir)",
)
baseline_summary_rest = AgentEntry(
    "groundeval.agents.baselines.rest:BaselineSummaryRestAgent", ("summary",),
    about="the summary baseline reading over FHIR REST (--groundeval-fhir)",
)
baseline_write_rest = AgentEntry(
    "groundeval.agents.baselines.rest:BaselineWriteRestAgent", ("write",), needs_extra="healthchain",
    about="the write baseline writing over FHIR REST (--groundeval-fhir)",
)
replay = AgentEntry(
    "groundeval.agents.replay:ReplayAgent", ANY_TASK,
    about='replay:RUN.json re-scores a recorded run, no model call',
)
"""``replay:RUN.json``: a built-in that takes an argument (its class builds itself with ``from_argument``)."""


def declared(kind: type[Any]) -> list[tuple[str, Any]]:
    """``(name, declaration)`` of every declaration of ``kind`` here, in declaration order.

    The name is the attribute's with ``_`` as ``-``: the name ``pyproject.toml`` registers it
    under (``tests/test_registry.py`` checks the two agree), read without ``importlib.metadata``.
    """
    return [(attr.replace("_", "-"), value) for attr, value in globals().items() if isinstance(value, kind)]


def task_names() -> list[str]:
    """The built-in tasks' names, in declaration order."""
    return [name for name, _ in declared(TaskEntry)]


def task_choices() -> str:
    """The built-in tasks as help text: ``"extraction (read ...), write (write ...), ..."``."""
    return ", ".join(f"{name} ({entry.about})" for name, entry in declared(TaskEntry))


def agent_choices() -> str:
    """The built-in agents as help text: ``"claude (Claude ...), baseline-write (write: ...), ..."``.

    An agent serving only some tasks names them before its ``about``.
    """
    every = {name for name, _ in declared(TaskEntry)}
    return ", ".join(
        f"{name} ({entry.about})" if set(entry.tasks) == every else f"{name} ({', '.join(entry.tasks)}: {entry.about})"
        for name, entry in declared(AgentEntry)
    )


def default_agents() -> str:
    """Each built-in task's default agent as help text: ``"claude for extraction, ...; langgraph for write"``."""
    by_agent: dict[str, list[str]] = {}
    for name, entry in declared(TaskEntry):
        by_agent.setdefault(str(entry.default_agent), []).append(name)
    return "; ".join(f"{agent} for {', '.join(tasks)}" for agent, tasks in by_agent.items())
