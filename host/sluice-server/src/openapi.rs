//! The OpenAPI 3.1 document served at `/openapi.json`, written by hand (every route of
//! [`crate::ROUTES`] is in it; a test checks that).

use serde_json::{Value, json};
use sluice_protocol::SessionStatus;

use crate::listing::MAX_LIMIT;

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

fn json_response(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

fn schema(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn session_id() -> Value {
    json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}, "description": "The session's id (`s-` and 12 characters)."})
}

fn wait() -> Value {
    json!({"name": "wait", "in": "query", "required": false, "schema": {"type": "boolean", "default": false}, "description": "Answer when the run has ended (200, with how it ended) instead of at once (202)."})
}

fn run_started() -> Value {
    json_response(
        "The run started; follow it at `events`.",
        json!({"type": "object", "required": ["runId", "session", "status", "events"], "properties": {
            "runId": {"type": "string"}, "session": {"type": "string"},
            "status": {"const": "running"}, "events": {"type": "string", "description": "The URL of the run's event stream."}
        }}),
    )
}

/// The run-time keys, from [`sluice_config::RUNTIME_KEYS`].
fn agent_config() -> Value {
    let properties: serde_json::Map<String, Value> = sluice_config::RUNTIME_KEYS
        .iter()
        .map(|k| {
            let description = match k.name {
                "max_tool_result_bytes" => "The cap on every tool result stored, in bytes.",
                "max_turns" => "The most model requests of one run.",
                _ => "Run destructive tools without waiting for approval.",
            };
            let schema = match k.allowed {
                sluice_config::Allowed::Integer { min, max, .. } => {
                    json!({"type": "integer", "minimum": min, "maximum": max, "description": description})
                }
                sluice_config::Allowed::Boolean => {
                    json!({"type": "boolean", "description": description})
                }
            };
            (k.name.to_string(), schema)
        })
        .collect();
    json!({"type": "object", "additionalProperties": false, "properties": properties})
}

/// One tool, as `sluice_wiring::report::ToolReport` serializes it.
fn tool_report() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    json!({"type": "object", "required": ["name", "source", "component", "digest", "signature", "grants", "limits", "annotations", "available", "reason"], "properties": {
        "name": {"type": "string", "description": "The tool's name as the model calls it; for a component that did not load, its configured name."},
        "source": {"enum": ["built-in", "file", "oci"]},
        "component": {"type": "string", "description": "The built-in's name, the file's path, or the `oci://` reference as configured."},
        "digest": {"type": ["string", "null"], "pattern": "^sha256:[0-9a-f]{64}$", "description": "The component's bytes' sha256 (for `oci://`, the manifest digest); null when it did not load."},
        "signature": {"type": "string", "description": "`built-in`, `none` (a file), `not checked` (`oci://` without `verify.key`), or `verified with KEY`."},
        "grants": {"type": "object", "properties": {
            "read": {"allOf": [strings.clone()], "description": "Roots it may read, as `NAME=DIR`."},
            "write": {"allOf": [strings.clone()], "description": "Roots it may write, as `NAME=DIR`."},
            "http": {"allOf": [strings.clone()], "description": "Hosts its HTTP requests may go to; empty: none."},
            "httpMethods": {"allOf": [strings], "description": "The HTTP methods allowed; empty: any."},
            "toolCalls": {"type": "boolean", "description": "Whether it may call the other tools."}
        }},
        "limits": {"type": "object", "properties": {
            "memoryMib": {"type": "integer", "description": "Linear memory, in MiB."},
            "timeoutMs": {"type": "integer", "description": "Wall-clock time of one call, in ms."},
            "httpMaxResponseBytes": {"type": "integer", "description": "The most body bytes of one HTTP response."}
        }},
        "annotations": {"type": "object", "properties": {
            "destructive": {"type": "boolean", "description": "Calls wait for approval."},
            "readOnly": {"type": "boolean"}, "openWorld": {"type": "boolean"}
        }},
        "available": {"type": "boolean"},
        "reason": {"type": ["string", "null"], "description": "Why it did not load; null when it did."}
    }})
}

/// The document, with the guard's answers ([`crate::guard`]) on every operation.
///
/// With `mcp`, also `POST /mcp` ([`crate::MCP_ROUTES`]), which [`crate::Server::with_mcp`]
/// mounts.
pub(crate) fn document(mcp: bool) -> Value {
    let mut doc = routes();
    if mcp && let Some(paths) = doc["paths"].as_object_mut() {
        paths.insert("/mcp".into(), mcp_route());
    }
    let forbidden = error_response(
        "The `Host` is not one the server answers to (`host`, `allowedHosts`), the request is cross-origin (`origin`) and the server has no token, or the principal lacks the operation's `x-sluice-scope` (`scope`, `principal`).",
    );
    let unsupported = error_response(
        "The body is not declared `Content-Type: application/json` (`contentType`, `allowed`).",
    );
    let too_large = error_response("The body is over the limit (`limitBytes`).");
    for route in crate::ROUTES.iter().chain(crate::MCP_ROUTES) {
        let op = doc
            .get_mut("paths")
            .and_then(|p| p.get_mut(route.path))
            .and_then(|p| p.get_mut(route.method.to_ascii_lowercase()))
            .and_then(Value::as_object_mut);
        if let (Some(scope), Some(op)) = (route.scope, op) {
            op.insert("x-sluice-scope".into(), Value::from(scope.as_str()));
        }
    }
    if let Some(paths) = doc["paths"].as_object_mut() {
        for operation in paths.values_mut().filter_map(Value::as_object_mut) {
            for op in operation.values_mut() {
                let has_body = op.get("requestBody").is_some();
                if let Some(responses) = op["responses"].as_object_mut() {
                    responses.insert("403".into(), forbidden.clone());
                    if has_body {
                        responses.insert("415".into(), unsupported.clone());
                        responses.entry("413").or_insert_with(|| too_large.clone());
                    }
                }
            }
        }
    }
    doc
}

/// `POST /mcp`: MCP over Streamable HTTP. Its messages are JSON-RPC 2.0, described by the
/// MCP schema rather than here.
fn mcp_route() -> Value {
    let message = json!({
        "type": "object",
        "required": ["jsonrpc"],
        "properties": {"jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer"]}, "method": {"type": "string"}},
        "description": "A JSON-RPC 2.0 message of the Model Context Protocol (https://modelcontextprotocol.io/specification): `server/discover`, `initialize`, `tools/list`, `tools/call`, notifications."
    });
    json!({"post": {
        "summary": "MCP over Streamable HTTP: the same tools as `sluice mcp`",
        "description": "Protocol 2026-07-28 (stateless) and, after `initialize`, 2025-11-25 and 2025-06-18. A `tools/call` answers with the observation `sluice call` prints (one text block within the cap, `isError` for tool errors). The answer is JSON, or an event stream (`text/event-stream`) when the call reports progress; closing it cancels the call. A body that is not JSON-RPC gets a JSON-RPC error (parse error -32700, invalid request -32600) with HTTP 400.",
        "requestBody": {"required": true, "content": {"application/json": {"schema": message.clone()}}},
        "responses": {
            "200": {"description": "The JSON-RPC response.", "content": {
                "application/json": {"schema": message.clone()},
                "text/event-stream": {"schema": {"type": "string", "description": "Server-sent events, each a JSON-RPC message: progress notifications, then the response."}}
            }},
            "202": {"description": "A notification or a response was accepted (no body)."},
            "400": {"description": "The body is not a JSON-RPC message (a JSON-RPC error).", "content": {"application/json": {"schema": message.clone()}}},
            "401": error_response("No bearer token, or the wrong one (when the server has a token)."),
            "413": {"description": "The body is over the limit (a JSON-RPC error naming it).", "content": {"application/json": {"schema": message}}}
        }
    }})
}

/// `GET /sessions`'s query parameters.
fn session_window() -> Value {
    json!([
        {"name": "q", "in": "query", "required": false, "schema": {"type": "string"}},
        {"name": "status", "in": "query", "required": false, "schema": schema("SessionStatus")},
        {"name": "offset", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0, "default": 0}},
        {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}}
    ])
}

/// `GET /sessions/{id}`'s parameters.
fn transcript_window() -> Value {
    json!([
        session_id(),
        {"name": "from", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "default": 1}},
        {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}}
    ])
}

/// The routes and their own answers.
fn routes() -> Value {
    let unauthorized =
        error_response("No bearer token, or the wrong one (when the server has a token).");
    let not_found = error_response("No such session.");
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Sluice operator API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Drive Sluice agent sessions over HTTP: create sessions, post prompts (one run per session), stream run events, cancel runs, resolve approvals of destructive tool calls, read transcripts and audits, and change run-time configuration. Every error is JSON: {\"error\": \"…\"} with more fields where they help. Every request first passes a guard: a `Host` other than the listening address, a loopback name on a loopback server, or a name allowed with --allowed-host answers 403 (against DNS rebinding); a cross-origin request (an `Origin` other than the server's own) answers 403 unless the server has a bearer token and the request carries it; a body must be sent with `Content-Type: application/json` (else 415); bodies over the server's limit (default 1 MiB) answer 413."
        },
        "security": [{"bearer": []}],
        "paths": {
            "/healthz": {"get": {
                "summary": "Liveness and the session store's state (checked at most once a second, for at most 2 s), and the number of runs in progress",
                "responses": {"200": json_response("Alive, and the store answers.", json!({"type": "object", "properties": {"ok": {"const": true}, "store": {"type": "object", "properties": {"ok": {"const": true}, "location": {"type": "string"}}}, "runsInProgress": {"type": "integer"}, "eventStreams": {"type": "integer"}}})), "503": json_response("The session store does not answer (the database is down, the file is gone).", json!({"type": "object", "properties": {"ok": {"const": false}, "error": {"type": "string"}, "store": {"type": "object", "properties": {"ok": {"const": false}, "location": {"type": "string"}, "error": {"type": "string"}}}, "runsInProgress": {"type": "integer"}, "eventStreams": {"type": "integer"}}})), "401": unauthorized}
            }},
            "/openapi.json": {"get": {
                "summary": "This document",
                "responses": {"200": json_response("The OpenAPI document.", json!({"type": "object"})), "401": unauthorized}
            }},
            "/sessions": {
                "post": {
                    "summary": "Create a session (status idle, no messages)",
                    "responses": {"201": json_response("Created; `Location` is its URL.", schema("Session")), "401": unauthorized}
                },
                "get": {
                    "summary": "List sessions, newest first",
                    "description": format!("Without parameters, every session. `q` keeps the sessions whose id contains it (case-insensitively), `status` those with that status; then `offset` skips and `limit` (1 to {MAX_LIMIT}) keeps a page of them. `total` counts the sessions that match."),
                    "parameters": session_window(),
                    "responses": {"200": json_response("The sessions.", json!({"type": "object", "required": ["sessions", "total", "offset", "limit"], "properties": {"sessions": {"type": "array", "items": schema("Session")}, "total": {"type": "integer"}, "offset": {"type": "integer"}, "limit": {"type": ["integer", "null"]}}})), "400": error_response("A parameter out of range (`parameter`, `allowed`)."), "401": unauthorized}
                }
            },
            "/sessions/{id}": {"get": {
                "summary": "A session, its transcript, and its latest run",
                "description": format!("Without parameters, the whole transcript. `from` (a message's `seq`, from 1) and `limit` (1 to {MAX_LIMIT}) give a window of it; `nextFrom` is the `seq` after the window, `null` at the end."),
                "parameters": transcript_window(),
                "responses": {
                    "200": json_response("The session.", json!({"type": "object", "properties": {
                        "session": schema("Session"),
                        "messages": {"type": "array", "items": schema("Message")},
                        "run": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {"runId": {"type": "string"}, "running": {"type": "boolean"}}}]},
                        "nextFrom": {"type": ["integer", "null"]}
                    }})),
                    "400": error_response("`from` or `limit` out of range (`parameter`, `allowed`)."),
                    "401": unauthorized, "404": not_found
                }
            }},
            "/sessions/{id}/prompts": {"post": {
                "summary": "Add a prompt and start a run",
                "description": "Claims the session's run and stores the prompt in one transaction of the session store (so a 202 means the prompt is stored, and a session run by another process answers 409), appends it as a user message and runs the agent loop until the model answers, `max_turns` runs out, a destructive call waits for approval, the run is cancelled, or the model fails.",
                "parameters": [session_id(), wait()],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["prompt"], "additionalProperties": false, "properties": {"prompt": {"type": "string", "minLength": 1}, "model": {"type": "string", "description": "One of `GET /models`; absent: the default."}}}}}},
                "responses": {
                    "200": json_response("With `wait=true`: the run ended.", schema("RunEnded")),
                    "202": run_started(),
                    "400": error_response("The body is not `{\"prompt\": \"…\"}`, `model` is not one of `GET /models` (`allowed`), or `wait` is not a boolean."),
                    "401": unauthorized, "404": not_found,
                    "409": error_response("The session has a run in progress (in this or another process sharing the session store: nothing was stored), or a destructive call waits for a decision (`callId`)."),
                    "413": error_response("The body is over the limit (`limitBytes`).")
                }
            }},
            "/sessions/{id}/resume": {"post": {
                "summary": "Run a session on without a new prompt",
                "description": "Runs decided (approved or denied) calls first, then goes on with the loop. Use after an approval, or to continue a session stopped by `max_turns`, an error or a cancellation.",
                "parameters": [session_id(), wait()],
                "responses": {
                    "200": json_response("With `wait=true`: the run ended.", schema("RunEnded")),
                    "202": run_started(),
                    "401": unauthorized, "404": not_found,
                    "409": error_response("The session has a run in progress.")
                }
            }},
            "/sessions/{id}/events": {"get": {
                "summary": "A run's events, as server-sent events",
                "description": "Without `runId`: the run in progress, else the session's next run. With `runId`: that run (the session's latest), replayed from its first event even when it has ended. Each message has `event: <type>`, `id: <seq>`, `data: <RunEvent JSON>`; the stream ends after the `finished` event.",
                "parameters": [session_id(), {"name": "runId", "in": "query", "required": false, "schema": {"type": "string"}}],
                "responses": {
                    "200": {"description": "The event stream.", "content": {"text/event-stream": {"schema": schema("RunEvent")}}},
                    "401": unauthorized,
                    "404": error_response("No such session, or `runId` is not its latest run.")
                }
            }},
            "/sessions/{id}/cancel": {"post": {
                "summary": "Cancel the run in progress",
                "description": "The run ends `aborted`: a model request in flight is dropped and nothing is appended for it; a tool call in flight finishes and its observation is stored.",
                "parameters": [session_id(), wait()],
                "responses": {
                    "200": json_response("With `wait=true`: the run ended.", schema("RunEnded")),
                    "202": json_response("Cancelling.", json!({"type": "object", "properties": {"runId": {"type": "string"}, "session": {"type": "string"}, "status": {"const": "cancelling"}}})),
                    "401": unauthorized, "404": not_found,
                    "409": error_response("The session has no run in progress.")
                }
            }},
            "/sessions/{id}/approvals": {"get": {
                "summary": "Calls of destructive tools that wait for a decision",
                "parameters": [session_id()],
                "responses": {
                    "200": json_response("The calls, with any decision made.", json!({"type": "object", "properties": {"session": {"type": "string"}, "approvals": {"type": "array", "items": schema("Approval")}}})),
                    "401": unauthorized, "404": not_found
                }
            }},
            "/sessions/{id}/approvals/{call_id}": {"post": {
                "summary": "Approve or deny a waiting call",
                "description": "Records the decision; `POST /sessions/{id}/resume` then runs the call (or stores a denial as its result): exactly one observation.",
                "parameters": [session_id(), {"name": "call_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["decision"], "additionalProperties": false, "properties": {"decision": {"enum": ["approve", "deny"]}}}}}},
                "responses": {
                    "200": json_response("Recorded.", json!({"type": "object", "properties": {"session": {"type": "string"}, "callId": {"type": "string"}, "tool": {"type": "string"}, "decision": {"enum": ["approve", "deny"]}, "next": {"type": "string"}}})),
                    "400": error_response("The body is not `{\"decision\": \"approve\"|\"deny\"}`."),
                    "401": unauthorized,
                    "404": error_response("No such session, or no such call waiting."),
                    "409": error_response("The session has a run in progress."),
                    "413": error_response("The body is over the limit.")
                }
            }},
            "/sessions/{id}/audit": {"get": {
                "summary": "The originals of changed (shrunk) messages, oldest first",
                "parameters": [session_id()],
                "responses": {
                    "200": json_response("The audit: every change to a message, what each tool call cost, and who did what (`actions`).", json!({"type": "object", "required": ["session", "audit", "calls", "actions"], "properties": {"session": {"type": "string"}, "audit": {"type": "array", "items": schema("AuditEntry")}, "calls": {"type": "array", "items": schema("CallRecord")}, "actions": {"type": "array", "items": schema("ActionRecord")}}})),
                    "401": unauthorized, "404": not_found
                }
            }},
            "/tools": {"get": {
                "summary": "The tools being served, as `sluice doctor` lists them",
                "description": "Every tool offered (in the order the model sees them), then every configured component that did not load (`available: false`, with `reason`). A live reload that swaps the tools swaps this list with them; a reload that fails changes neither.",
                "responses": {
                    "200": json_response("The tools.", json!({"type": "object", "required": ["tools"], "properties": {"tools": {"type": "array", "items": schema("ToolReport")}}})),
                    "401": unauthorized
                }
            }},
            "/models": {"get": {
                "summary": "The models a prompt may name",
                "description": "The model of `[model]` (or `--model`), the default of every run: `scripted`, `replay:FILE` or `PROVIDER:MODEL`.",
                "responses": {
                    "200": json_response("The models.", json!({"type": "object", "required": ["models"], "properties": {"models": {"type": "array", "items": {"type": "object", "required": ["name", "default"], "properties": {"name": {"type": "string"}, "default": {"type": "boolean"}}}}}})),
                    "401": unauthorized
                }
            }},
            "/agent/config": {
                "get": {
                    "summary": "The run-time configuration",
                    "responses": {"200": json_response("The run-time keys and their values.", schema("AgentConfig")), "401": unauthorized}
                },
                "put": {
                    "summary": "Change run-time keys (all or none)",
                    "description": "Every key is checked first, by the same rules as at boot; then all are applied at once, to runs that start afterwards. Changes last until the server restarts. Unknown keys and keys read only at boot (roots, tools, store, model, system_prompt) are refused.",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": schema("AgentConfigChange")}}},
                    "responses": {
                        "200": json_response("Applied; the whole run-time configuration.", schema("AgentConfig")),
                        "400": error_response("A value out of range or of the wrong type (`key`, `value`, `allowed`, `min`, `max`), an unknown or boot-only key (`key`, `runtimeKeys`); further errors in `more`. Nothing was changed."),
                        "401": unauthorized,
                        "413": error_response("The body is over the limit.")
                    }
                }
            },
            "/agent/config/changes": {"get": {
                "summary": "Every change of the run-time configuration, oldest first",
                "responses": {
                    "200": json_response("Who changed what, when (`detail`: the values set, as JSON).", json!({"type": "object", "required": ["changes"], "properties": {"changes": {"type": "array", "items": schema("ActionRecord")}}})),
                    "401": unauthorized
                }
            }}
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "Required on every route when the server has a token (always when it listens beyond loopback): SLUICE_SERVER_TOKEN or --token-file."}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string", "description": "What was wrong and what to do."}}, "additionalProperties": true},
                "SessionStatus": {"enum": SessionStatus::ALL.map(SessionStatus::as_str)},
                "Session": {"type": "object", "properties": {
                    "id": {"type": "string"}, "createdAt": {"type": "string", "format": "date-time"}, "updatedAt": {"type": "string", "format": "date-time"},
                    "status": schema("SessionStatus"), "lastError": {"type": ["string", "null"]}, "messageCount": {"type": "integer"},
                    "owner": {"type": "string", "description": "The principal that created it (docs/api.md#tenancy)."}
                }},
                "ActionRecord": {"type": "object", "required": ["actor", "action", "at"], "properties": {
                    "session": {"type": ["string", "null"]}, "actor": {"type": "string", "description": "The principal that acted."},
                    "action": {"enum": ["create", "prompt", "resume", "cancel", "approve", "deny", "config"]},
                    "detail": {"type": ["string", "null"], "description": "The run id (prompt, resume, cancel), the call id (approve, deny), the values set (config)."},
                    "at": {"type": "string", "format": "date-time"}
                }},
                "Message": {"type": "object", "required": ["seq", "role", "content", "createdAt"], "properties": {
                    "seq": {"type": "integer", "minimum": 1}, "role": {"enum": ["user", "assistant", "tool"]},
                    "content": {"type": "string", "description": "For a tool message: the observation, at most max_tool_result_bytes bytes."},
                    "toolCalls": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "arguments": {"type": "string"}}}},
                    "toolCallId": {"type": "string"}, "createdAt": {"type": "string", "format": "date-time"}
                }},
                "RunEnded": {"type": "object", "properties": {
                    "runId": {"type": "string"}, "session": {"type": "string"},
                    "status": {"enum": ["completed", "awaiting_approval", "aborted", "error"]},
                    "lastError": {"type": ["string", "null"]}, "answer": {"type": ["string", "null"]},
                    "requests": {"type": "integer", "description": "HTTP requests sent to the model: retries and unstreamed re-sends included, a request refused by the pre-send estimate not (a model without HTTP counts one per request)."}
                }},
                "RunEvent": {"type": "object", "required": ["type", "runId", "seq"], "properties": {
                    "type": {"enum": ["started", "model_request", "model_reply", "tool_started", "tool_finished", "shrunk", "awaiting_approval", "finished"]},
                    "runId": {"type": "string"}, "seq": {"type": "integer", "minimum": 1},
                    "session": {"type": "string"}, "prompt": {"type": ["string", "null"]},
                    "bytes": {"type": "integer", "description": "model_request: the request's size; tool_finished: the observation's size, in bytes."},
                    "toolCalls": {"type": "integer"}, "callId": {"type": "string"}, "name": {"type": "string"},
                    "fullBytes": {"type": "integer", "description": "The result's size before the cap, in bytes."},
                    "truncated": {"type": "boolean"}, "paged": {"type": "boolean"}, "error": {"type": "boolean"},
                    "seqs": {"type": "array", "items": {"type": "integer"}}, "fromBytes": {"type": "integer"}, "toBytes": {"type": "integer"},
                    "status": {"enum": ["completed", "awaiting_approval", "aborted", "error"]},
                    "lastError": {"type": ["string", "null"]}, "answer": {"type": ["string", "null"]}, "requests": {"type": "integer"}
                }},
                "Approval": {"type": "object", "properties": {
                    "callId": {"type": "string"}, "tool": {"type": "string"}, "arguments": {"type": "string", "description": "The arguments as the model wrote them (JSON text)."},
                    "decision": {"enum": ["approve", "deny", null]}
                }},
                "AuditEntry": {"type": "object", "properties": {
                    "sessionId": {"type": "string"}, "seq": {"type": "integer"}, "changedAt": {"type": "string", "format": "date-time"},
                    "reason": {"type": "string"}, "original": {"type": "string"}, "replacement": {"type": "string"}
                }},
                "CallRecord": {"type": "object", "required": ["seq", "tool", "recordedAt", "facts"], "properties": {
                    "seq": {"type": "integer", "description": "The message holding the call's observation."},
                    "tool": {"type": "string"}, "recordedAt": {"type": "string", "format": "date-time"},
                    "facts": {"type": "object", "description": "What the call cost in its sandbox (docs/telemetry.md#sandbox-facts).", "properties": {
                        "outcome": {"type": "string"}, "queueWaitUs": {"type": "integer"}, "guestUs": {"type": "integer"},
                        "peakMemoryBytes": {"type": "integer"}, "peakDescriptors": {"type": "integer"},
                        "httpRequests": {"type": "integer"}, "httpDenied": {"type": "integer"}, "digest": {"type": "string"}
                    }}
                }},
                "ToolReport": tool_report(),
                "AgentConfig": agent_config(),
                "AgentConfigChange": {"allOf": [schema("AgentConfig")], "description": "Any subset of the run-time keys (also accepted with the `agent.` prefix of sluice.toml)."}
            }
        }
    })
}
