"""An agent that is its own process and finds its tools over MCP (``--groundeval-tools=mcp``).

Run it under groundeval (the file next to where you run, or on ``PYTHONPATH``)::

    pytest --groundeval-task=extraction --groundeval-option=bundle_in_prompt=false \\
        --groundeval-agent=mcp_agent:agent --groundeval-tools=mcp

For each case groundeval starts the case's MCP server and calls ``agent.run(request)``, which starts
this file as a separate process: ``python mcp_agent.py URL``, the prompt on stdin, the answer on
stdout. The process knows nothing of groundeval: it opens an MCP session with the official SDK
(``mcp.ClientSession`` over ``streamable_http_client``), calls ``get_resources`` for the
MedicationRequests, and answers with the RxNorm coding of every active one (a naive reader: it
checks neither the subject nor the intent). Any MCP client in any language can take its place; the
server records its tool calls, so grounding, lookup recall, ``tool_errors`` and ``repeated_calls``
are scored as for the built-in agents.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"


async def answer(url: str) -> str:
    """Read the active MedicationRequests through the case's MCP server and return the JSON answer."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        found = await session.call_tool("get_resources", {"resource_type": "MedicationRequest"})
    entries = json.loads(found.content[0].text).get("entries", [])
    items = []
    for entry in entries:
        request = entry["resource"]
        if request.get("status") != "active":
            continue
        concept = request.get("medicationCodeableConcept", {})
        coding = next((c for c in concept.get("coding", []) if c.get("system") == RXNORM), None)
        if coding:
            items.append({"rxnorm_code": coding["code"], "display": coding.get("display")})
    return json.dumps(items)


class ProcessAgent:
    """The groundeval side: runs this file as a process per case, given the case's MCP URL."""

    name = "mcp-process-example"
    model = None
    requires = frozenset({"tools"})  # it answers through the task's tools, not from the prompt alone

    def run(self, request: Any) -> str:
        if request.tool_server is None:
            raise RuntimeError("run with --groundeval-tools=mcp: this agent reaches its tools over MCP")
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), request.tool_server.url],
            input=request.prompt.text, capture_output=True, text=True, timeout=120, check=True,
        )
        return done.stdout.strip()


agent = ProcessAgent()

if __name__ == "__main__":
    sys.stdin.read()  # the prompt; this naive reader does not need it
    print(asyncio.run(answer(sys.argv[1])))
