"""groundeval: deterministic evals for healthcare AI agents, as a pytest plugin.

Public API (imported lazily so that loading the pytest plugin stays cheap)::

    from groundeval import ExtractionTask, make_agent, score_medications, InfraError

Test doubles (``ScriptedAgent``, ``ScriptedChatModel``) live in ``groundeval.testing``; the
exception tree is documented in ``groundeval.errors`` and exported here.

Writing a task takes only names from here (see docs/tasks/writing-a-task.md)::

    from groundeval import BaseTask, Case, CodeSetScorer, Parsed, Prompt, TaskOption
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "RXNORM_SYSTEMS",
    "SNOMED_SYSTEM",
    "TEXT_PROMPT",
    "TOOLS",
    "Agent",
    "AgentConfig",
    "AgentError",
    "AgentLoopError",
    "AgentRequest",
    "AgentResult",
    "AgentReturnedWrongType",
    "AuthError",
    "BaseTask",
    "BaselineExtractionAgent",
    "BaselineWriteAgent",
    "Case",
    "CaseRecord",
    "CaseTooLargeError",
    "Catalog",
    "ClaudeAgent",
    "CodeSetScorer",
    "ConfigError",
    "DatasetError",
    "Direction",
    "ExtractionTask",
    "GroundevalError",
    "InfraError",
    "LangGraphAgent",
    "LangGraphFHIRAgent",
    "LangGraphWriteAgent",
    "OpenAICompatibleAgent",
    "Parsed",
    "Prompt",
    "RefusalError",
    "RunRecord",
    "RunStopError",
    "Score",
    "Scorer",
    "Task",
    "TaskOption",
    "TruncatedError",
    "WriteTask",
    "case_files",
    "choice",
    "codings_by_system",
    "describe_validation_error",
    "entry_resources",
    "extract_json",
    "find_patient",
    "load_json",
    "make_agent",
    "make_task",
    "patient_case_id",
    "patient_reference_matches",
    "score_medications",
    "score_write",
    "task_class",
    "unit_interval",
    "validate_entries",
    "validate_medication_statement",
    "wrong_task_error",
]

_WHERE = {
    "Agent": "groundeval.agents.base",
    "AgentConfig": "groundeval.agents.base",
    "make_agent": "groundeval.agents.base",
    "AgentRequest": "groundeval.agent_io",
    "AgentResult": "groundeval.agent_io",
    "Direction": "groundeval.scoring",
    "Parsed": "groundeval.scoring",
    "Prompt": "groundeval.agent_io",
    "Score": "groundeval.scoring",
    "Case": "groundeval.datasets",
    "ExtractionTask": "groundeval.tasks.extraction.task",
    "Task": "groundeval.tasks.base",
    "make_task": "groundeval.tasks",
    "score_medications": "groundeval.tasks.extraction.scorer",
    "BaselineExtractionAgent": "groundeval.agents.baselines.extraction",
    "BaselineWriteAgent": "groundeval.agents.baselines.write",
    "ClaudeAgent": "groundeval.agents.claude",
    "OpenAICompatibleAgent": "groundeval.agents.openai_compat",
    "LangGraphAgent": "groundeval.agents.langgraph_agent",
    "LangGraphFHIRAgent": "groundeval.agents.langgraph_agent",
    "LangGraphWriteAgent": "groundeval.agents.langgraph_agent",
    "Catalog": "groundeval.terminology",
    "WriteTask": "groundeval.tasks.write.task",
    "score_write": "groundeval.tasks.write.scorer",
    "validate_medication_statement": "groundeval.tasks.write.tools",
    "BaseTask": "groundeval.tasks.base",
    "Scorer": "groundeval.tasks.base",
    "TaskOption": "groundeval.task_options",
    "unit_interval": "groundeval.task_options",
    "choice": "groundeval.task_options",
    "case_files": "groundeval.tasks.base",
    "TEXT_PROMPT": "groundeval.tasks.base",
    "TOOLS": "groundeval.tasks.base",
    "CodeSetScorer": "groundeval.scorers.codes",
    "extract_json": "groundeval.parsing",
    "load_json": "groundeval.datasets",
    "find_patient": "groundeval.tasks.common",
    "patient_case_id": "groundeval.tasks.common",
    "describe_validation_error": "groundeval.tasks.common",
    "validate_entries": "groundeval.tasks.common",
    "wrong_task_error": "groundeval.tasks.common",
    "codings_by_system": "groundeval.fhir.bundle",
    "entry_resources": "groundeval.fhir.bundle",
    "patient_reference_matches": "groundeval.fhir.bundle",
    "SNOMED_SYSTEM": "groundeval.fhir.bundle",
    "RXNORM_SYSTEMS": "groundeval.fhir.bundle",
    "DatasetError": "groundeval.errors",
    "ConfigError": "groundeval.errors",
    "AgentError": "groundeval.errors",
    "AgentLoopError": "groundeval.errors",
    "AgentReturnedWrongType": "groundeval.errors",
    "AuthError": "groundeval.errors",
    "CaseTooLargeError": "groundeval.errors",
    "GroundevalError": "groundeval.errors",
    "InfraError": "groundeval.errors",
    "RefusalError": "groundeval.errors",
    "RunStopError": "groundeval.errors",
    "TruncatedError": "groundeval.errors",
    "CaseRecord": "groundeval.records.run_record",
    "RunRecord": "groundeval.records.run_record",
    "task_class": "groundeval.tasks",
}

if TYPE_CHECKING:
    from groundeval.agent_io import AgentRequest, AgentResult, Prompt
    from groundeval.agents.base import Agent, AgentConfig, make_agent
    from groundeval.agents.baselines.extraction import BaselineExtractionAgent
    from groundeval.agents.baselines.write import BaselineWriteAgent
    from groundeval.agents.claude import ClaudeAgent
    from groundeval.agents.langgraph_agent import LangGraphAgent, LangGraphFHIRAgent, LangGraphWriteAgent
    from groundeval.agents.openai_compat import OpenAICompatibleAgent
    from groundeval.datasets import Case, load_json
    from groundeval.errors import (
        AgentError,
        AgentLoopError,
        AgentReturnedWrongType,
        AuthError,
        CaseTooLargeError,
        ConfigError,
        DatasetError,
        GroundevalError,
        InfraError,
        RefusalError,
        RunStopError,
        TruncatedError,
    )
    from groundeval.fhir.bundle import (
        RXNORM_SYSTEMS,
        SNOMED_SYSTEM,
        codings_by_system,
        entry_resources,
        patient_reference_matches,
    )
    from groundeval.parsing import extract_json
    from groundeval.records.run_record import CaseRecord, RunRecord
    from groundeval.scorers.codes import CodeSetScorer
    from groundeval.scoring import Direction, Parsed, Score
    from groundeval.task_options import TaskOption, choice, unit_interval
    from groundeval.tasks import make_task, task_class
    from groundeval.tasks.base import TEXT_PROMPT, TOOLS, BaseTask, Scorer, Task, case_files
    from groundeval.tasks.common import (
        describe_validation_error,
        find_patient,
        patient_case_id,
        validate_entries,
        wrong_task_error,
    )
    from groundeval.tasks.extraction.scorer import score_medications
    from groundeval.tasks.extraction.task import ExtractionTask
    from groundeval.tasks.write.scorer import score_write
    from groundeval.tasks.write.task import WriteTask
    from groundeval.tasks.write.tools import validate_medication_statement
    from groundeval.terminology import Catalog


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'groundeval' has no attribute {name!r}")
