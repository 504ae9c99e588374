"""A scripted agent for tests and demos: answers come from a table, a list or a function."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.errors import AgentError

__all__ = ["ScriptedAgent"]

Script = Mapping[str, str | BaseException] | Sequence[str] | Callable[[AgentRequest], str]


class ScriptedAgent:
    """Replies from a script, with no model and no network.

    Args:
        script: Either a mapping ``case_id -> answer text`` (an exception value is raised
            instead), a sequence of answers used in order (it never wraps around: running out
            raises ``AgentError``), or a function of the request.
        name: Agent name for the run record.
        model: Model name to report.

    Attributes:
        max_concurrency: 1 for a sequence script (its answers go out in call order, so calls
            made ahead in threads would reorder them); None (no cap) otherwise.
    """

    network_calls = False
    """Never makes a network call: the first call of a process need not go alone."""

    def __init__(self, script: Script, name: str = "scripted", model: str | None = None) -> None:
        self._script = script
        self._next = 0
        self.name = name
        self.model = model
        self.max_concurrency: int | None = None if callable(script) or isinstance(script, Mapping) else 1

    def run(self, request: AgentRequest) -> AgentResult:
        """Return the scripted answer for ``request``.

        Raises:
            AgentError: No answer is scripted for this case, or the list ran out.
        """
        script = self._script
        if callable(script):
            return AgentResult(text=script(request), model=self.model)
        if isinstance(script, Mapping):
            if request.case_id not in script:
                raise AgentError(f"{request.case_id}: no scripted answer for this case")
            answer = script[request.case_id]
            if isinstance(answer, BaseException):
                raise answer
            return AgentResult(text=answer, model=self.model)
        if self._next >= len(script):
            raise AgentError(f"{request.case_id}: the script ran out after {self._next} answers")
        self._next += 1
        return AgentResult(text=script[self._next - 1], model=self.model)
