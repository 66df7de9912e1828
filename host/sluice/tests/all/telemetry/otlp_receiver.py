"""A real OTLP/HTTP receiver for the telemetry tests: decodes each `POST /v1/traces`
(protobuf) with the official definitions (PyPI `opentelemetry-proto`) and appends every
span to a file as one JSON line.

Usage: otlp_receiver.py OUT_FILE
Prints the port it listens on (127.0.0.1, picked by the system) as its first line.
A span line: {"trace_id", "span_id", "parent_span_id" (hex, "" for a root), "name",
"kind", "status" ({"code", "message"}), "attributes" ({key: value}), "events"
([{"name", "attributes"}]), "resource" ({key: value})}.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUT = sys.argv[1]


def value(v) -> object:
    """An AnyValue as plain JSON."""
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind is None:
        return None
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attrs(kvs) -> dict:
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for rs in request.resource_spans:
            resource = attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    lines.append(
                        {
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "name": s.name,
                            "kind": MessageToDict(s).get("kind", ""),
                            "status": {
                                "code": MessageToDict(s.status).get("code", "STATUS_CODE_UNSET"),
                                "message": s.status.message,
                            },
                            "attributes": attrs(s.attributes),
                            "events": [
                                {"name": e.name, "attributes": attrs(e.attributes)}
                                for e in s.events
                            ],
                            "resource": resource,
                        }
                    )
        with open(OUT, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, sort_keys=True) + "\n")
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
