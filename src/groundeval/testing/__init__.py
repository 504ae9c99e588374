"""Test doubles that ship with groundeval, like inspect_ai's mock model or httpx's ``MockTransport``.

* ``ScriptedAgent``: an agent whose answers come from a table, a list or a function (no model,
  no network), for testing tasks, scorers and the plugin.
* ``ScriptedModel``: a ``groundeval.models.base.Model`` whose replies come from a list or a
  function: what an agent or a judge calling the model layer gets, offline.
* ``ScriptedChatModel`` (needs the ``write`` extra): a LangChain chat model that replays scripted
  messages and tool calls, so a tool-using agent's real LangGraph loop runs offline; with the
  helpers ``call``, ``answer_with_last_result`` and ``reply``.
* ``junit_cases``: a run's junit XML read back as ``{testcase: {property: value}}``.
* ``groundeval.testing.one_case.run_case``: one case run in the calling thread (prepare, the
  agent call, the outcome policy) to its ``CaseRun``, for tests of a task or an agent.

Imported lazily: ``import groundeval.testing`` loads neither LangChain nor a model SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["ScriptedAgent", "ScriptedChatModel", "ScriptedModel", "answer_with_last_result", "call", "junit_cases"]

_WHERE = {
    "ScriptedAgent": "groundeval.testing.scripted_agent",
    "ScriptedChatModel": "groundeval.testing.scripted_chat",
    "ScriptedModel": "groundeval.testing.scripted_model",
    "answer_with_last_result": "groundeval.testing.scripted_chat",
    "call": "groundeval.testing.scripted_chat",
    "junit_cases": "groundeval.testing.junit",
}

if TYPE_CHECKING:
    from groundeval.testing.junit import junit_cases
    from groundeval.testing.scripted_agent import ScriptedAgent
    from groundeval.testing.scripted_chat import ScriptedChatModel, answer_with_last_result, call
    from groundeval.testing.scripted_model import ScriptedModel


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'groundeval.testing' has no attribute {name!r}")
