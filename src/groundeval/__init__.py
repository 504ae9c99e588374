"""groundeval: deterministic evals for healthcare AI agents, as a pytest plugin.

Public API (imported lazily so that loading the pytest plugin stays cheap)::

    from groundeval import ExtractionTask, make_agent, score_medications, InfraError

Test doubles (``ScriptedAgent``, ``ScriptedChatModel``) live in ``groundeval.testing``; the
exception tree is documented in ``groundeval.errors`` and exported here.

Writing a task takes only names from here (see docs/tasks/writing-a-task.md)::

    from groundeval import BaseTask, Case, CodeSetScorer, Parsed, Prompt, TaskOption
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The public API is listed once, in the block below: each name and the module that defines it.
# At run time nothing is imported from it; the first access of a name reads this block (from this
# file's source) and imports only that name's module, so loading the pytest plugin stays cheap.
if TYPE_CHECKING:
    from groundeval.agent_io import (
        AgentRequest as AgentRequest,
        AgentResult as AgentResult,
        Prompt as Prompt,
    )
    from groundeval.agents.base import (
        Agent as Agent,
        AgentConfig as AgentConfig,
        make_agent as make_agent,
    )
    from groundeval.agents.baselines.extraction import (
        BaselineExtractionAgent as BaselineExtractionAgent,
    )
    from groundeval.agents.baselines.write import (
        BaselineWriteAgent as BaselineWriteAgent,
    )
    from groundeval.agents.claude import (
        ClaudeAgent as ClaudeAgent,
    )
    from groundeval.agents.langgraph_agent import (
        LangGraphAgent as LangGraphAgent,
        LangGraphFHIRAgent as LangGraphFHIRAgent,
        LangGraphWriteAgent as LangGraphWriteAgent,
    )
    from groundeval.agents.openai_compat import (
        OpenAICompatibleAgent as OpenAICompatibleAgent,
    )
    from groundeval.datasets import (
        Case as Case,
        load_json as load_json,
    )
    from groundeval.errors import (
        AgentError as AgentError,
        AgentLoopError as AgentLoopError,
        AgentReturnedWrongType as AgentReturnedWrongType,
        AuthError as AuthError,
        CaseTooLargeError as CaseTooLargeError,
        ConfigError as ConfigError,
        DatasetError as DatasetError,
        GroundevalError as GroundevalError,
        InfraError as InfraError,
        RefusalError as RefusalError,
        RunStopError as RunStopError,
        TruncatedError as TruncatedError,
    )
    from groundeval.export import (
        load_runs as load_runs,
    )
    from groundeval.fhir.bundle import (
        RXNORM_SYSTEMS as RXNORM_SYSTEMS,
        SNOMED_SYSTEM as SNOMED_SYSTEM,
        codings_by_system as codings_by_system,
        entry_resources as entry_resources,
        patient_reference_matches as patient_reference_matches,
    )
    from groundeval.options import (
        TaskOption as TaskOption,
        choice as choice,
        unit_interval as unit_interval,
    )
    from groundeval.parsing import (
        extract_json as extract_json,
    )
    from groundeval.records.run_record import (
        CaseRecord as CaseRecord,
        RunRecord as RunRecord,
    )
    from groundeval.registry import (
        AgentEntry as AgentEntry,
        TaskEntry as TaskEntry,
    )
    from groundeval.scorers.codes import (
        CodeSetScorer as CodeSetScorer,
    )
    from groundeval.scoring import (
        Direction as Direction,
        Parsed as Parsed,
        Score as Score,
    )
    from groundeval.tasks import (
        make_task as make_task,
        task_class as task_class,
    )
    from groundeval.tasks.base import (
        TEXT_PROMPT as TEXT_PROMPT,
        TOOLS as TOOLS,
        BaseTask as BaseTask,
        Scorer as Scorer,
        Task as Task,
        case_files as case_files,
    )
    from groundeval.tasks.common import (
        describe_validation_error as describe_validation_error,
        find_patient as find_patient,
        patient_case_id as patient_case_id,
        validate_entries as validate_entries,
        wrong_task_error as wrong_task_error,
    )
    from groundeval.tasks.extraction.scorer import (
        score_medications as score_medications,
    )
    from groundeval.tasks.extraction.task import (
        ExtractionTask as ExtractionTask,
    )
    from groundeval.tasks.write.scorer import (
        score_write as score_write,
    )
    from groundeval.tasks.write.task import (
        WriteTask as WriteTask,
    )
    from groundeval.tasks.write.tools import (
        validate_medication_statement as validate_medication_statement,
    )
    from groundeval.terminology import (
        Catalog as Catalog,
    )



@cache
def _where() -> dict[str, str]:
    """Public name -> defining module, read from this module's ``if TYPE_CHECKING:`` block."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return sorted(_where())
    if name in _where():
        return getattr(importlib.import_module(_where()[name]), name)
    raise AttributeError(f"module 'groundeval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_where()})
