"""Calls MCP tools with and without a progress callback, with the official Python SDK (PyPI
`mcp`), for tests/all/mcp_server.rs.

Usage:
    progress_client.py CALLS_JSON stdio COMMAND [ARG...]
    progress_client.py CALLS_JSON http URL

CALLS_JSON is a list of {"name": ..., "arguments": {...}, "progress": true|false}. With
"progress", the call is made with a `progress_callback`, so the SDK sends a `progressToken`.
Prints one JSON object on stdout: {"calls": [...]}, one entry per call, in order:
{"result": <the CallToolResult as the SDK parsed it, or {"protocolError": ...}>,
 "heard": [<{"progress", "total", "message"} as the callback heard them, before the call
 returned>],
 "notifications": [<every notifications/progress the session received while the call was
 running, whatever its token: {"progressToken", "progress", "total", "message"}>]}.
Notifications received after the last call returned are under "late". Anything else goes to
stderr.
"""

import asyncio
import json
import sys

import httpx
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from client import dump


async def scenario(read, write, calls):
    # Every progress notification, in the list of the call running when it came.
    current = {"notifications": []}

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ProgressNotification
        ):
            current["notifications"].append(dump(message.root.params))

    async with ClientSession(read, write, message_handler=on_message) as session:
        await session.initialize()
        await session.list_tools()
        entries = []
        for call in calls:
            heard = []

            async def on_progress(progress, total, message, heard=heard):
                heard.append({"progress": progress, "total": total, "message": message})

            entry = {"notifications": []}
            current["notifications"] = entry["notifications"]
            try:
                result = await session.call_tool(
                    call["name"],
                    call.get("arguments", {}),
                    progress_callback=on_progress if call.get("progress") else None,
                )
                entry["result"] = dump(result)
            except McpError as error:
                entry["result"] = {
                    "protocolError": {"code": error.error.code, "message": error.error.message}
                }
            entry["heard"] = list(heard)
            current["notifications"] = []
            entries.append(entry)
        # Let anything sent after the last response arrive before the session closes.
        await asyncio.sleep(0.5)
        return {"calls": entries, "late": current["notifications"]}


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
        async with httpx.AsyncClient(trust_env=False, timeout=timeout) as client:
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
