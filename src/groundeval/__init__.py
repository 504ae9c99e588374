"""groundeval: deterministic evals for healthcare AI agents, as a pytest plugin.

Public API (imported lazily so that loading the pytest plugin stays cheap)::

    from groundeval import ExtractionTask, ScriptedAgent, make_agent, score_medications
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentRequest",
    "AgentResult",
    "BaselineExtractionAgent",
    "BaselineWriteAgent",
    "Case",
    "Catalog",
    "ClaudeAgent",
    "ExtractionTask",
    "LangGraphWriteAgent",
    "OpenAICompatibleAgent",
    "Parsed",
    "Prompt",
    "Score",
    "ScriptedAgent",
    "ScriptedChatModel",
    "Task",
    "WriteTask",
    "make_agent",
    "make_task",
    "score_medications",
    "score_write",
    "validate_medication_statement",
]

_WHERE = {
    "Agent": "groundeval.agents.base",
    "AgentConfig": "groundeval.agents.base",
    "make_agent": "groundeval.agents.base",
    "AgentRequest": "groundeval.records",
    "AgentResult": "groundeval.records",
    "Parsed": "groundeval.records",
    "Prompt": "groundeval.records",
    "Score": "groundeval.records",
    "Case": "groundeval.datasets",
    "ExtractionTask": "groundeval.tasks.extraction",
    "Task": "groundeval.tasks.base",
    "make_task": "groundeval.tasks",
    "ScriptedAgent": "groundeval.agents.scripted",
    "score_medications": "groundeval.scorers.extraction",
    "BaselineExtractionAgent": "groundeval.agents.baseline",
    "BaselineWriteAgent": "groundeval.agents.baseline_write",
    "ClaudeAgent": "groundeval.agents.claude",
    "OpenAICompatibleAgent": "groundeval.agents.openai_compat",
    "LangGraphWriteAgent": "groundeval.agents.langgraph_agent",
    "ScriptedChatModel": "groundeval.agents.fake_chat",
    "Catalog": "groundeval.terminology",
    "WriteTask": "groundeval.tasks.write",
    "score_write": "groundeval.scorers.write",
    "validate_medication_statement": "groundeval.hc_tools",
}

if TYPE_CHECKING:
    from groundeval.agents.base import Agent, AgentConfig, make_agent
    from groundeval.agents.baseline import BaselineExtractionAgent
    from groundeval.agents.baseline_write import BaselineWriteAgent
    from groundeval.agents.claude import ClaudeAgent
    from groundeval.agents.fake_chat import ScriptedChatModel
    from groundeval.agents.langgraph_agent import LangGraphWriteAgent
    from groundeval.agents.openai_compat import OpenAICompatibleAgent
    from groundeval.agents.scripted import ScriptedAgent
    from groundeval.datasets import Case
    from groundeval.hc_tools import validate_medication_statement
    from groundeval.records import AgentRequest, AgentResult, Parsed, Prompt, Score
    from groundeval.scorers.extraction import score_medications
    from groundeval.scorers.write import score_write
    from groundeval.tasks import make_task
    from groundeval.tasks.base import Task
    from groundeval.tasks.extraction import ExtractionTask
    from groundeval.tasks.write import WriteTask
    from groundeval.terminology import Catalog


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'groundeval' has no attribute {name!r}")
