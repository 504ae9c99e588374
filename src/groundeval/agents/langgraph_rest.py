"""``langgraph-rest``: the LangGraph agent whose tools are FHIR REST calls against the case's FHIR server.

The same graph, model guard, retries, stops, trace and answer as ``langgraph`` (``LangGraphAgent``);
only the tools differ. Under ``--groundeval-fhir`` each case's record is served at
``request.fhir`` (the sandbox, or the user's server behind groundeval's recording proxy) and the
prompt names the server and the patient instead of holding the record. Per case this agent builds
``fhir.rest_tools.make_rest_tools`` over that endpoint: ``fhir_search`` and ``fhir_read`` always,
``fhir_create`` and ``fhir_update`` on a task that writes (its context holds a
``patient_reference``: the write task), and, there, the write task's ``lookup_rxnorm`` over the
site catalog (terminology, not the record: a deployed agent would ask a terminology server).

The HTTP client is fhirpy's synchronous client (``fhirpy.SyncFHIRClient``: maintained, searches
with plain parameter dicts, follows ``next`` links, raises per-status exceptions carrying the
OperationOutcome), so this is what an integrator would write. The bearer token goes in every
request's ``Authorization`` header and nowhere else.

Tool calls of one model turn run one after another in the order the model gave them
(``max_concurrency`` 1), so the server's access log has the order of the trace.

How failures are reported, beyond ``langgraph``'s:

* no ``request.fhir`` (the run is not ``--groundeval-fhir``): ``RunStopError`` (``config_error``);
  the plugin refuses that combination before any case (``record_access``);
* the server answers 4xx/5xx (an unknown parameter, an invalid resource, a 404): the tool returns
  ``{"ok": false, "status", "error", "issues"}`` for the model to read; the trace marks it
  ``ok: false``;
* the server cannot be reached: ``InfraError`` (``infra_error``: excluded and counted).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from groundeval.agent_io import AgentRequest, AgentResult
from groundeval.agents.base import AgentConfig
from groundeval.agents.langgraph_agent import LangGraphAgent
from groundeval.errors import RunStopError
from groundeval.extras import EXTRAS, require_extra

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

__all__ = ["NO_ENDPOINT", "LangGraphRestAgent"]

NO_ENDPOINT = (
    "the request carries no FHIR endpoint (request.fhir): the 'langgraph-rest' agent reads the record over the "
    "FHIR REST API; add --groundeval-fhir=sandbox (CLI: --fhir sandbox) or --groundeval-fhir=URL of your server"
)


class LangGraphRestAgent(LangGraphAgent):
    """``langgraph-rest``: ``langgraph`` with FHIR REST tools over ``request.fhir`` (see the module docstring).

    Args:
        config: As ``LangGraphAgent``.
        chat_model: As ``LangGraphAgent`` (tests pass ``ScriptedChatModel``).
        sleep: As ``LangGraphAgent``.

    Raises:
        ConfigError: The ``fhir-client`` extra is missing, or as ``LangGraphAgent``.
    """

    name = "langgraph-rest"
    requires: frozenset[str] = frozenset({"text_prompt"})
    """Only a prompt from the task: the record is read over FHIR, the tools are the agent's own."""
    record_access = "fhir"
    """Reads the record over FHIR REST at ``request.fhir`` (``agents.base.check_record_access``)."""
    needs_extra = ("fhir-client", "fhirpy")
    """``(extra, module)``: fhirpy, named in the missing-extra message."""

    @classmethod
    def check_config(cls, config: AgentConfig) -> None:
        """As ``LangGraphAgent.check_config``, and the ``fhir-client`` extra must be installed.

        Raises:
            ConfigError: An extra is missing, ``ANTHROPIC_API_KEY`` is not set, or an option is out of range.
        """
        _require_client(cls.name)
        super().check_config(config)

    def __init__(self, config: AgentConfig | None = None, *, chat_model: Any = None, sleep: Any = None) -> None:
        _require_client(self.name)
        super().__init__(config, chat_model=chat_model, sleep=sleep)
        self._local = threading.local()

    def warmup(self) -> None:
        """``LangGraphAgent.warmup``, and import fhirpy (and requests)."""
        import fhirpy  # noqa: F401

        super().warmup()

    def _tools_for(self, request: AgentRequest) -> list[BaseTool]:
        """The REST tools over ``request.fhir``; with the write task's ``lookup_rxnorm`` when the task writes.

        Raises:
            RunStopError: The request carries no FHIR endpoint.
        """
        from groundeval.fhir.rest_tools import make_rest_tools

        endpoint = request.fhir
        if endpoint is None:
            raise RunStopError(f"{request.case_id}: {NO_ENDPOINT}")
        writes = isinstance(request.context.get("patient_reference"), str)
        tools = make_rest_tools(endpoint, request.case_id, writes=writes, timeout_s=self.settings.retry.timeout_s)
        if writes:
            from groundeval.tasks.write.tools import make_tools

            tools += [t for t in make_tools(self._site_catalog(), endpoint.patient) if t.name == "lookup_rxnorm"]
        return tools

    def _stream_config(self) -> dict[str, Any]:
        return {**super()._stream_config(), "max_concurrency": 1}

    def run(self, request: AgentRequest) -> AgentResult:
        """Run the graph on the case's FHIR REST tools (``LangGraphAgent.run``).

        Raises:
            RunStopError: The request carries no FHIR endpoint.
            InfraError: The FHIR server could not be reached.
            AgentError: As ``LangGraphAgent.run``.
        """
        if request.fhir is None:
            raise RunStopError(f"{request.case_id}: {NO_ENDPOINT}")
        return super().run(request)


def _require_client(name: str) -> None:
    for module in EXTRAS["fhir-client"]:
        require_extra("fhir-client", module, f"the agent {name!r}")
