"""A client Sluice did not write: the official MCP Python SDK against `sluice mcp`.

Usage: python_client.py stdio|http discover|initialize TARGET [CALLS]
  stdio: TARGET is a JSON array, the command line of `sluice … mcp`
  http:  TARGET is the endpoint URL (`http://127.0.0.1:PORT/mcp`)
  CALLS: a JSON array of {"name": TOOL, "arguments": {…}}: after the handshake, lists the
         tools and makes these calls instead of the built-in tools' exercise; over stdio
         the server then runs with this process's whole environment and directory (not
         only the SDK's default variables), as the test sets them

Over http, the environment variable MCP_BEARER_TOKEN, when set, is sent as
`Authorization: Bearer …` on every request (an OAuth access token, say).

Prints one JSON line: what the server answered (the Rust test asserts it).
"""

import json
import os
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def handshake_with(session: ClientSession, handshake: str):
    """The handshake (`discover` or `initialize`): the server's name and its version(s)."""
    if handshake == "discover":
        result = await session.discover()
        # 2026-07-28 carries the server's identity in `_meta`.
        meta = result.meta or {}
        return meta["io.modelcontextprotocol/serverInfo"]["name"], result.supported_versions
    result = await session.initialize()
    return result.server_info.name, result.protocol_version


async def exercise(session: ClientSession, handshake: str) -> dict:
    server, version = await handshake_with(session, handshake)
    tools = await session.list_tools()
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    page = await session.call_tool(
        "read_file", {"path": "f.txt"}, progress_callback=on_progress
    )
    unknown = await session.call_tool("no_such_tool", {})
    grep = await session.call_tool(
        "grep_files", {"pattern": "error"}, progress_callback=on_progress
    )
    return {
        "server": server,
        "version": version,
        "tools": [t.name for t in tools.tools],
        "readOnly": [t.annotations.read_only_hint for t in tools.tools],
        "maxResultSizeChars": [
            (t.meta or {}).get("anthropic/maxResultSizeChars") for t in tools.tools
        ],
        "page": page.content[0].text,
        "pageIsError": page.is_error,
        "unknown": unknown.content[0].text,
        "unknownIsError": unknown.is_error,
        "grep": json.loads(grep.content[0].text)["result"]["count"],
        "progress": bool(progress),
    }


async def call_each(session: ClientSession, handshake: str, calls: list) -> dict:
    """The handshake, the tools listed, then each of `calls` as the client received it."""
    server, version = await handshake_with(session, handshake)
    tools = await session.list_tools()
    results = []
    for call in calls:
        r = await session.call_tool(call["name"], call["arguments"])
        results.append(
            {
                "content": [
                    {"type": c.type, "text": getattr(c, "text", None)}
                    for c in r.content
                ],
                "structuredContent": r.structured_content,
                "isError": r.is_error,
            }
        )
    return {
        "server": server,
        "version": version,
        "tools": [t.name for t in tools.tools],
        "calls": results,
    }


async def main() -> None:
    transport, handshake, target = sys.argv[1], sys.argv[2], sys.argv[3]
    calls = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None

    async def run(session: ClientSession) -> dict:
        if calls is None:
            return await exercise(session, handshake)
        return await call_each(session, handshake, calls)

    if transport == "stdio":
        argv = json.loads(target)
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        if calls is not None:
            params = StdioServerParameters(
                command=argv[0], args=argv[1:], env=dict(os.environ), cwd=os.getcwd()
            )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await run(session)
    else:
        bearer = os.environ.get("MCP_BEARER_TOKEN")
        client = (
            create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
            if bearer
            else None
        )
        async with streamable_http_client(target, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                out = await run(session)
    print(json.dumps(out, sort_keys=True), flush=True)


anyio.run(main)
