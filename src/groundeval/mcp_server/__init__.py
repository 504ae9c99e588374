"""A case's tools over the Model Context Protocol (``--groundeval-tools=mcp``).

* ``tools``: ``CaseToolServer``, an MCP server (the official SDK's low-level ``Server``) over the
  same LangChain tools the in-process agents get, recording every call it answers;
* ``http_host``: ``HttpHost``, that server on loopback over Streamable HTTP (uvicorn, starlette);
* ``serving``: ``MCPToolsAgent``, the wrapper that gives each case its own server, hands the agent
  its URL and stdio command, stops it when the case ends and records the server's trace;
* ``stdio``: ``python -m groundeval.mcp_server.stdio URL``, MCP over stdin/stdout relayed to a case's
  server, for agents that start their own server process.

The SDK, starlette and uvicorn are imported on first use only (the ``mcp`` extra).
"""
