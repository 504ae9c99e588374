"""groundeval's own tasks and agents, declared as any package declares its own.

Each declaration here is registered by one line in groundeval's ``pyproject.toml``
(``[project.entry-points."groundeval.tasks"]`` / ``"groundeval.agents"``), the same line another
package writes for its own. Standard library only: reading a declaration imports no task, agent
or SDK (the plugin reads the tasks' ``options`` at ``pytest_addoption``, in every pytest session).
The task classes point their ``options`` and ``default_agent`` at their declaration here.
"""

from __future__ import annotations

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
    options=EXTRACTION_OPTIONS,
)
write = TaskEntry("groundeval.tasks.write.task:WriteTask", default_agent="langgraph", offline_agent="baseline-write")
reconcile = TaskEntry(
    "groundeval.tasks.reconcile.task:ReconcileTask", default_agent="claude", offline_agent="baseline-reconcile",
)
labs = TaskEntry("groundeval.tasks.labs:LabsTask", default_agent="claude", offline_agent="baseline-labs")
summary = TaskEntry("groundeval.tasks.summary:SummaryTask", default_agent="claude", offline_agent="baseline-summary",
                    options=SUMMARY_OPTIONS)

# Agents, in the order messages list them ("agents that serve write: claude, openai-compatible, ...").
ANY_TASK = ("extraction", "write", "reconcile", "labs", "summary")
BUNDLE_TASKS = ("extraction", "reconcile", "labs", "summary")
"""The tasks whose context holds the case's FHIR Bundle (``fhir_bundle``)."""

claude = AgentEntry("groundeval.agents.claude:ClaudeAgent", ANY_TASK)
openai_compatible = AgentEntry("groundeval.agents.openai_compat:OpenAICompatibleAgent", ANY_TASK)
local = AgentEntry("groundeval.agents.local:LocalAgent", ANY_TASK)
baseline = AgentEntry(
    "groundeval.agents.baselines.extraction:BaselineExtractionAgent", ("extraction",), needs_extra="healthchain",
)
naive = AgentEntry(
    "groundeval.agents.baselines.extraction:NaiveExtractionAgent", ("extraction",), needs_extra="healthchain",
)
priors = AgentEntry("groundeval.agents.baselines.priors:PriorsExtractionAgent", ("extraction",))
langgraph = AgentEntry("groundeval.agents.langgraph_agent:LangGraphAgent", ANY_TASK)
langgraph_fhir = AgentEntry("groundeval.agents.langgraph_agent:LangGraphFHIRAgent", BUNDLE_TASKS)
langgraph_mcp = AgentEntry("groundeval.agents.langgraph_mcp:LangGraphMCPAgent", ANY_TASK, needs_extra="mcp")
langgraph_rest = AgentEntry(
    "groundeval.agents.langgraph_rest:LangGraphRestAgent", ANY_TASK, needs_extra="fhir-client",
)
"""Reads the record over FHIR REST only (``--groundeval-fhir``)."""
baseline_write = AgentEntry(
    "groundeval.agents.baselines.write:BaselineWriteAgent", ("write",), needs_extra="healthchain",
)
naive_write = AgentEntry("groundeval.agents.baselines.write:NaiveWriteAgent", ("write",))
baseline_reconcile = AgentEntry("groundeval.agents.baselines.reconcile:BaselineReconcileAgent", ("reconcile",))
naive_reconcile = AgentEntry("groundeval.agents.baselines.reconcile:NaiveReconcileAgent", ("reconcile",))
hedge_reconcile = AgentEntry("groundeval.agents.baselines.reconcile:HedgingReconcileAgent", ("reconcile",))
baseline_labs = AgentEntry("groundeval.agents.baselines.labs:BaselineLabsAgent", ("labs",))
naive_labs = AgentEntry("groundeval.agents.baselines.labs:NaiveLabsAgent", ("labs",))
baseline_summary = AgentEntry("groundeval.agents.baselines.summary:BaselineSummaryAgent", ("summary",))
naive_summary = AgentEntry("groundeval.agents.baselines.summary:NaiveSummaryAgent", ("summary",))
hedge_summary = AgentEntry("groundeval.agents.baselines.summary:HedgingSummaryAgent", ("summary",))
hedge_all_summary = AgentEntry("groundeval.agents.baselines.summary:HedgeAllSummaryAgent", ("summary",))
baseline_rest = AgentEntry(
    "groundeval.agents.baselines.rest:BaselineRestAgent", ("extraction",), needs_extra="healthchain",
)
"""The ``*-rest`` baselines read the record over FHIR REST only (``--groundeval-fhir``)."""
baseline_labs_rest = AgentEntry("groundeval.agents.baselines.rest:BaselineLabsRestAgent", ("labs",))
baseline_reconcile_rest = AgentEntry("groundeval.agents.baselines.rest:BaselineReconcileRestAgent", ("reconcile",))
baseline_summary_rest = AgentEntry("groundeval.agents.baselines.rest:BaselineSummaryRestAgent", ("summary",))
baseline_write_rest = AgentEntry(
    "groundeval.agents.baselines.rest:BaselineWriteRestAgent", ("write",), needs_extra="healthchain",
)
replay = AgentEntry("groundeval.agents.replay:ReplayAgent", ANY_TASK)
"""``replay:RUN.json``: a built-in that takes an argument (its class builds itself with ``from_argument``)."""
