"""The official MCP Python SDK calling a tool of `sluice mcp --listen` with a W3C
`traceparent` in the request's `_meta` (Streamable HTTP).

Usage: traceparent_client.py URL TOOL ARGUMENTS_JSON TRACEPARENT
Prints one JSON line: {"is_error": bool, "text": the first content's text}.
"""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, tool, arguments, traceparent = sys.argv[1:5]
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(
                tool, json.loads(arguments), meta={"traceparent": traceparent}
            )
    text = result.content[0].text if result.content else ""
    print(json.dumps({"is_error": bool(result.is_error), "text": text}), flush=True)


anyio.run(main)
