//! What a message rmcp cannot take is answered, over stdio and HTTP alike (JSON-RPC 2.0's
//! error codes; `docs/mcp.md#malformed-input`):
//!
//! | message | answer |
//! |---|---|
//! | not JSON | -32700 parse error, `id` null |
//! | JSON but not an object, or an `id` that is not a string or a number | -32600, `id` null |
//! | a request (`id`, `method`) whose `params` is not an object | -32602 invalid params, its `id` |
//! | any other shape, with an `id` | -32600, its `id` |
//! | any other shape, without an `id`, with a `method` | nothing (a notification) |
//! | any other shape, without either | -32600, `id` null |

use serde_json::{Value, json};

/// What a request is, for error messages.
pub(crate) const REQUEST_SHAPE: &str =
    "a request is {\"jsonrpc\":\"2.0\",\"id\":…,\"method\":…,\"params\":{…}}";

/// JSON-RPC's parse error.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's invalid params.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// An error answer that rmcp would not have sent: raw JSON-RPC, so `id` may be null.
#[derive(Debug, PartialEq)]
pub(crate) struct Rejection {
    /// The request's `id`, or null when it has none this server can echo.
    pub(crate) id: Value,
    /// The JSON-RPC error code.
    pub(crate) code: i64,
    /// What was wrong and what is allowed.
    pub(crate) message: String,
}

impl Rejection {
    /// The answer as a JSON-RPC error object.
    pub(crate) fn to_json(&self) -> Value {
        json!({"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}})
    }
}

/// The JSON type of `v`, in words.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The answer to `bytes`, which rmcp failed to read as a message with `error`; `None` for
/// a malformed notification, which gets no answer.
pub(crate) fn reject(bytes: &[u8], error: &serde_json::Error) -> Option<Rejection> {
    if error.is_syntax() || error.is_eof() {
        return Some(Rejection {
            id: Value::Null,
            code: PARSE_ERROR,
            message: format!("parse error: {error}"),
        });
    }
    let value: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let invalid = |id: Value, why: String| Rejection {
        id,
        code: INVALID_REQUEST,
        message: format!("invalid request: {why}; {REQUEST_SHAPE}"),
    };
    let Value::Object(object) = &value else {
        let why = format!("a message is a JSON object, not {}", kind(&value));
        return Some(invalid(Value::Null, why));
    };
    match object.get("id") {
        Some(id) if !(id.is_string() || id.is_number()) => {
            let why = format!("`id` must be a string or a number, not {}", kind(id));
            Some(invalid(Value::Null, why))
        }
        Some(id) => {
            let method = object.get("method").and_then(Value::as_str);
            match (method, object.get("params")) {
                (Some(method), Some(params)) if !params.is_object() => Some(Rejection {
                    id: id.clone(),
                    code: INVALID_PARAMS,
                    message: format!(
                        "invalid params: the `params` of {method} must be an object, not {}",
                        kind(params)
                    ),
                }),
                // A request (or a response to one) the server cannot take: say why.
                _ => Some(invalid(id.clone(), error.to_string())),
            }
        }
        // A notification gets no answer, whatever is wrong with it.
        None if object.contains_key("method") => {
            tracing::debug!("ignoring a malformed notification: {error}");
            None
        }
        None => Some(invalid(Value::Null, error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::RoleServer;
    use rmcp::service::RxJsonRpcMessage;

    /// What `line` gets when rmcp cannot read it (panics when rmcp can).
    fn answer(line: &str) -> Option<Rejection> {
        let error = serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line)
            .expect_err("rmcp refuses it");
        reject(line.as_bytes(), &error)
    }

    #[test]
    fn each_shape_gets_its_code_and_id() {
        let a = answer("{not json").unwrap();
        assert_eq!((a.id, a.code), (Value::Null, PARSE_ERROR));

        let a = answer(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#).unwrap();
        assert_eq!((a.id, a.code), (Value::Null, INVALID_REQUEST));
        assert!(
            a.message
                .starts_with("invalid request: `id` must be a string or a number, not an object;"),
            "{}",
            a.message
        );
        let a = answer(r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#).unwrap();
        assert_eq!((a.id, a.code), (Value::Null, INVALID_REQUEST));

        let a = answer(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"x"}"#).unwrap();
        assert_eq!(
            a,
            Rejection {
                id: json!(5),
                code: INVALID_PARAMS,
                message:
                    "invalid params: the `params` of tools/call must be an object, not a string"
                        .into(),
            }
        );
        let a = answer(r#"{"jsonrpc":"2.0","id":"p","method":"tools/call","params":7}"#).unwrap();
        assert_eq!((a.id, a.code), (json!("p"), INVALID_PARAMS));

        let a = answer(r#"[1,2]"#).unwrap();
        assert_eq!((a.id, a.code), (Value::Null, INVALID_REQUEST));
        assert!(a.message.contains("not an array"), "{}", a.message);

        let a = answer(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#).unwrap();
        assert_eq!((a.id, a.code), (json!(3), INVALID_REQUEST));

        assert_eq!(answer(r#"{"jsonrpc":"1.0","method":"x"}"#), None);
        let a = answer(r#"{"hello":1}"#).unwrap();
        assert_eq!((a.id, a.code), (Value::Null, INVALID_REQUEST));
    }
}
