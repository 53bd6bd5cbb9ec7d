"""Drives an MCP server with the official Python SDK (PyPI `mcp`), for tests/all/mcp_server.rs.

Usage:
    client.py CALLS_JSON stdio COMMAND [ARG...]
    client.py CALLS_JSON http URL

With LOCARA_BEARER in the environment, every HTTP request carries `Authorization: Bearer` and
its value.

CALLS_JSON is a list of {"name": ..., "arguments": {...}}. The client initializes a session,
lists the tools, makes each call in order, and prints one JSON object on stdout:
{"server": ..., "protocolVersion": ..., "tools": [...], "results": [...]}, where each result is
the CallToolResult as the SDK parsed it (camelCase, nulls left out) or, for a JSON-RPC error,
{"protocolError": {"code": ..., "message": ...}}. Anything else goes to stderr.
"""

import asyncio
import json
import os
import sys

import httpx
from mcp import ClientSession, McpError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def scenario(read, write, calls):
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        results = []
        for call in calls:
            try:
                result = await session.call_tool(call["name"], call.get("arguments", {}))
                results.append(dump(result))
            except McpError as error:
                results.append(
                    {"protocolError": {"code": error.error.code, "message": error.error.message}}
                )
        return {
            "server": dump(init.serverInfo),
            "protocolVersion": init.protocolVersion,
            "tools": [dump(tool) for tool in tools.tools],
            "results": results,
        }


async def main(argv):
    calls = json.loads(argv[1])
    transport = argv[2]
    if transport == "stdio":
        params = StdioServerParameters(command=argv[3], args=argv[4:])
        async with stdio_client(params) as (read, write):
            report = await scenario(read, write, calls)
    elif transport == "http":
        # No proxy from the environment: the server is on loopback.
        timeout = httpx.Timeout(30.0, read=300.0)
        bearer = os.environ.get("LOCARA_BEARER")
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        async with httpx.AsyncClient(trust_env=False, timeout=timeout, headers=headers) as client:
            async with streamable_http_client(argv[3], http_client=client) as (read, write, _):
                report = await scenario(read, write, calls)
    else:
        raise SystemExit(f"unknown transport {transport!r}: use stdio or http")
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv))
