"""`fetch`: a Sluice tool in Python (componentize-py 0.25.1) that GETs a URL through wasi:http.

One request, so no event loop: the tool blocks on the response's pollable and reads the body
with `blocking_read`. (`poll_loop`, the asyncio loop for many requests at once that
componentize-py writes beside the bindings, cannot be imported in this world: it imports
`wit_world.imports.types`, and this world has two `types` interfaces, wasi:http's and
sluice:tools', so they are `wasi_http_types` and `sluice_tools_types`.)
"""

import re

import wit_world
from componentize_py_types import Err
from wit_world.imports import outgoing_handler
from wit_world.imports.page import FetchArgs, FetchPage
from wit_world.imports.sluice_tools_types import (
    ToolError_BinaryFile,
    ToolError_InvalidArgument,
    ToolError_Io,
)
from wit_world.imports.streams import StreamError_Closed
from wit_world.imports.wasi_http_types import (
    Fields,
    IncomingBody,
    OutgoingRequest,
    Scheme_Http,
    Scheme_Https,
)

DEFAULT_MAX_BYTES = 1024
MAX_MAX_BYTES = 4096
USER_AGENT = b"sluice-example-fetch/0.1"
CHUNK_BYTES = 65536


class WitWorld(wit_world.WitWorld):
    def fetch(self, args: FetchArgs) -> FetchPage:
        url = args.url
        max_bytes = DEFAULT_MAX_BYTES if args.max_bytes is None else args.max_bytes
        if not 1 <= max_bytes <= MAX_MAX_BYTES:
            raise Err(ToolError_InvalidArgument(
                f"maxBytes must be 1 to {MAX_MAX_BYTES}; got {max_bytes}"))
        status, content_type, head, total = get(url, max_bytes)
        cut = total > len(head)
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError as e:
            # A character the cut split is dropped; any other bad byte means it is not text.
            if not (cut and e.reason == "unexpected end of data"):
                raise Err(ToolError_BinaryFile(f"the body of {url} is not UTF-8 text"))
            text = head[:e.start].decode("utf-8")
        return FetchPage(url=url, status=status, content_type=content_type, bytes=total,
                         text=text, cut=cut)


def get(url: str, max_bytes: int) -> tuple[int, str | None, bytes, int]:
    """GETs `url`: its status, content type, first `max_bytes` bytes and length."""
    if url.startswith("https://"):
        scheme, rest = Scheme_Https(), url[len("https://"):]
    elif url.startswith("http://"):
        scheme, rest = Scheme_Http(), url[len("http://"):]
    else:
        raise Err(ToolError_InvalidArgument(
            f"url must start with http:// or https://; got {url}"))
    # The authority ends at the first `/`, `?` or `#`; the fragment is not sent.
    authority, path = re.match(r"([^/?#]*)([^#]*)", rest).groups()
    if not authority:
        raise Err(ToolError_InvalidArgument(f"url has no host: {url}"))
    request = OutgoingRequest(Fields.from_list([("user-agent", USER_AGENT)]))
    request.set_scheme(scheme)
    try:
        request.set_authority(authority)
        request.set_path_with_query(path if path.startswith("/") else "/" + path)
    except Err:
        raise Err(ToolError_InvalidArgument(f"url is not a valid URL: {url}"))
    try:
        future = outgoing_handler.handle(request, None)
    except Err as e:
        raise Err(ToolError_Io(f"GET {url} failed: {error_name(e.value)}"))
    future.subscribe().block()
    # Once it is ready, get() is Ok(Ok(response)) or Ok(Err(error-code)). A host the policy
    # does not list fails here too (HTTP-request-denied), but then the host ends the call with
    # its own `http-denied` error, whatever the tool answers.
    outcome = future.get().value
    if isinstance(outcome, Err):
        raise Err(ToolError_Io(f"GET {url} failed: {error_name(outcome.value)}"))
    response = outcome.value
    status = response.status()
    types = response.headers().get("content-type")  # its values, as bytes
    try:
        content_type = types[0].decode("utf-8") if types else None
    except UnicodeDecodeError:
        content_type = None
    body = response.consume()
    stream = body.stream()
    head = bytearray()
    total = 0
    while True:
        try:
            chunk = stream.blocking_read(CHUNK_BYTES)
        except Err as e:
            if isinstance(e.value, StreamError_Closed):
                break
            raise Err(ToolError_Io(
                f"reading the body of {url} failed: {e.value.value.to_debug_string()}"))
        total += len(chunk)
        if len(head) < max_bytes:
            head += chunk[:max_bytes - len(head)]
    stream.__exit__(None, None, None)  # the stream goes before its body
    IncomingBody.finish(body)
    return status, content_type, bytes(head), total


def error_name(code) -> str:
    """The WIT name of a `wasi:http` error code (`connection-refused`, `DNS-timeout`), and the
    message of an `internal-error`."""
    words = re.findall(r"[A-Z][a-z]*", type(code).__name__.removeprefix("ErrorCode_"))
    name = "-".join(w.upper() if w in ("Dns", "Ip", "Tls", "Http", "Uri") else w.lower()
                    for w in words)
    detail = getattr(code, "value", None)
    return f"{name}: {detail}" if isinstance(detail, str) else name
