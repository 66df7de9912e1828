"""A client Sluice did not write: the official MCP Python SDK against `sluice mcp`.

Usage: python_client.py stdio|http|http-oauth discover|initialize TARGET [CALLS]
  stdio: TARGET is a JSON array, the command line of `sluice … mcp`
  http:  TARGET is the endpoint URL (`http://127.0.0.1:PORT/mcp`)
  http-oauth: as http, signed in by the SDK's own OAuth support (`OAuthClientProvider`):
         on the 401 it reads the protected-resource metadata (RFC 9728), the authorization
         server's metadata, and runs the authorization-code grant with PKCE and `resource`
         (RFC 8707) as the client `sluice-test-client` (pre-registered: no dynamic
         registration) with the redirect URI `http://127.0.0.1/callback`, which nobody
         serves: the authorization URL is fetched without following its redirect and the
         `code`/`state` of its Location are the callback. The answer also has `oauth`:
         {"requests": each HTTP request up to the first MCP answer that is not a 401, as
         "METHOD URL STATUS" (no query), "authorize": the authorization URL's query but
         `state` and `code_challenge`, "token": the token response's token_type and scope,
         "claims": the access token's iss, sub, aud, scope (decoded, not verified)}
  CALLS: a JSON array of {"name": TOOL, "arguments": {…}}: after the handshake, lists the
         tools and makes these calls instead of the built-in tools' exercise; over stdio
         the server then runs with this process's whole environment and directory (not
         only the SDK's default variables), as the test sets them

Over http, the environment variable MCP_BEARER_TOKEN, when set, is sent as
`Authorization: Bearer …` on every request (an OAuth access token, say).

Prints one JSON line: what the server answered (the Rust test asserts it).
"""

import base64
import json
import os
import sys
from urllib.parse import parse_qs, urlsplit, urlunsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

OAUTH_CLIENT_ID = "sluice-test-client"
OAUTH_REDIRECT_URI = "http://127.0.0.1/callback"


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


class PreRegistered:
    """The SDK's `TokenStorage`, in memory, holding a client registered beforehand."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id=OAUTH_CLIENT_ID,
            redirect_uris=[OAUTH_REDIRECT_URI],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code"],
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def without_query(url) -> str:
    parts = urlsplit(str(url))
    return urlunsplit(parts._replace(query="", fragment=""))


def claims_of(jwt: str) -> dict:
    payload = jwt.split(".")[1]
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return {k: decoded.get(k) for k in ("iss", "sub", "aud", "scope")}


async def signed_in_with_oauth(target: str, run) -> dict:
    """`run` over Streamable HTTP, the SDK signing in by itself (see the usage above)."""
    storage = PreRegistered()
    requests: list[str] = []
    signed_in = False
    authorize: dict = {}
    callback: dict = {}

    def note(response) -> None:
        nonlocal signed_in
        if signed_in:
            return
        request = response.request
        requests.append(f"{request.method} {without_query(request.url)} {response.status_code}")
        if without_query(request.url) == target and response.status_code != 401:
            signed_in = True

    async def on_response(response) -> None:
        note(response)

    async def redirect_handler(authorization_url: str) -> None:
        query = parse_qs(urlsplit(authorization_url).query)
        authorize.update(
            {k: v[0] for k, v in query.items() if k not in ("state", "code_challenge")}
        )
        # The user agent: one GET, its redirect not followed (nobody serves the redirect URI).
        async with httpx2.AsyncClient() as browser:
            response = await browser.get(authorization_url)
        note(response)
        location = parse_qs(urlsplit(response.headers["location"]).query)
        callback.update({k: v[0] for k, v in location.items()})

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=callback["code"], state=callback.get("state"), iss=callback.get("iss")
        )

    auth = OAuthClientProvider(
        server_url=target,
        client_metadata=OAuthClientMetadata(
            client_name="sluice tests",
            redirect_uris=[OAUTH_REDIRECT_URI],
            grant_types=["authorization_code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    client = create_mcp_http_client(auth=auth)
    client.event_hooks = {"response": [on_response]}
    async with client:
        async with streamable_http_client(target, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                out = await run(session)
    tokens = storage.tokens
    out["oauth"] = {
        "requests": requests,
        "authorize": authorize,
        "token": {"token_type": tokens.token_type, "scope": tokens.scope} if tokens else None,
        "claims": claims_of(tokens.access_token) if tokens else None,
    }
    return out


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
    elif transport == "http-oauth":
        out = await signed_in_with_oauth(target, run)
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
