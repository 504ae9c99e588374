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
    "Case",
    "ExtractionTask",
    "Parsed",
    "Prompt",
    "Score",
    "ScriptedAgent",
    "Task",
    "make_agent",
    "make_task",
    "score_medications",
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
}

if TYPE_CHECKING:
    from groundeval.agents.base import Agent, AgentConfig, make_agent
    from groundeval.agents.scripted import ScriptedAgent
    from groundeval.datasets import Case
    from groundeval.records import AgentRequest, AgentResult, Parsed, Prompt, Score
    from groundeval.scorers.extraction import score_medications
    from groundeval.tasks import make_task
    from groundeval.tasks.base import Task
    from groundeval.tasks.extraction import ExtractionTask


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'groundeval' has no attribute {name!r}")
