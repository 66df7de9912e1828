//! What an error body says: its fields, read once ([`Fields`]), whatever the provider's
//! envelope.

use serde_json::Value;

/// What the body says, collected once.
#[derive(Debug, Default)]
pub(super) struct Fields {
    /// `error.code` or top-level `code`, as text (integers included).
    pub(super) code: Option<String>,
    /// The code when it is an integer HTTP status (400–599).
    pub(super) code_status: Option<u16>,
    /// `error.type` or top-level `type` (except the envelope marker `error`).
    pub(super) kind: Option<String>,
    /// Gemini's `error.status` (`INVALID_ARGUMENT`).
    pub(super) status_name: Option<String>,
    /// The provider's message, in preference order.
    pub(super) message: Option<String>,
    /// Other message texts (top-level messages when `error.message` exists).
    pub(super) other_texts: Vec<String>,
    /// OpenRouter's `metadata.raw`.
    pub(super) raw: Option<String>,
    /// Bedrock's exception name (`x-amzn-ErrorType` or `__type`, without a `…#` prefix or `:…` suffix).
    pub(super) aws_type: Option<String>,
    /// llama.cpp's `n_prompt_tokens` and `n_ctx` (in `error` or at the top level).
    pub(super) llama_sizes: Option<(u64, u64)>,
}

impl Fields {
    pub(super) fn from_value(value: &Value) -> Fields {
        let value = match value {
            Value::Array(items) => items.first().unwrap_or(&Value::Null),
            other => other,
        };
        let mut fields = Fields::default();
        let mut texts = Vec::new();
        fields.llama_sizes = [value.get("error"), Some(value)]
            .into_iter()
            .flatten()
            .find_map(|v| {
                let number = |k: &str| v.get(k).and_then(Value::as_u64);
                Some((number("n_prompt_tokens")?, number("n_ctx")?))
            });
        match value.get("error") {
            Some(error @ Value::Object(_)) => {
                fields.set_code(error.get("code"));
                fields.kind = text_of(error.get("type"));
                fields.status_name = text_of(error.get("status"));
                texts.extend(text_of(error.get("message")));
                fields.raw = error.pointer("/metadata/raw").and_then(raw_text);
            }
            Some(Value::String(s)) => texts.push(s.clone()),
            _ => {}
        }
        if fields.code.is_none() {
            fields.set_code(value.get("code"));
        }
        if fields.kind.is_none() {
            fields.kind = text_of(value.get("type")).filter(|t| t != "error");
        }
        texts.extend(text_of(value.get("message")));
        texts.extend(text_of(value.get("Message")));
        if fields.raw.is_none() {
            fields.raw = value.pointer("/metadata/raw").and_then(raw_text);
        }
        fields.aws_type = text_of(value.get("__type")).map(|t| aws_name(&t));
        let mut texts = texts.into_iter().filter(|t| !t.trim().is_empty());
        fields.message = texts.next();
        fields.other_texts = texts.collect();
        fields
    }

    fn set_code(&mut self, code: Option<&Value>) {
        match code {
            Some(Value::String(s)) => self.code = Some(s.clone()),
            Some(Value::Number(n)) => {
                self.code = Some(n.to_string());
                self.code_status = n
                    .as_u64()
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|n| (400..=599).contains(n));
            }
            _ => {}
        }
    }

    /// Every text the wording checks look at.
    pub(super) fn texts<'a>(&'a self, body: &'a str) -> Vec<&'a str> {
        let mut texts: Vec<&str> = self
            .message
            .iter()
            .chain(&self.other_texts)
            .chain(&self.raw)
            .map(String::as_str)
            .collect();
        if texts.is_empty() {
            texts.push(body);
        }
        texts
    }

    /// The names (code, type, status, exception) the type checks look at.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        [&self.code, &self.kind, &self.status_name, &self.aws_type]
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    pub(super) fn has_name(&self, wanted: &str) -> bool {
        self.names().any(|n| n.eq_ignore_ascii_case(wanted))
    }
}

pub(super) fn parse_json(text: &str) -> Option<Value> {
    serde_json::from_str(text.trim()).ok()
}

/// A string field, or a number's text.
fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// OpenRouter's `metadata.raw`: a string, or any JSON shown compactly.
fn raw_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A Bedrock exception payload in JSON form: `{"validationException":{"message":…}}`.
pub(super) fn aws_exception(value: &Value) -> Option<(String, &Value)> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    let (name, inner) = object.iter().next()?;
    if !name.ends_with("Exception") || !inner.is_object() {
        return None;
    }
    let mut chars = name.chars();
    let first = chars.next()?.to_ascii_uppercase();
    Some((std::iter::once(first).chain(chars).collect(), inner))
}

/// An AWS error type name: `ValidationException:http://…` and
/// `com.amazon.coral.validate#ValidationException` both give `ValidationException`.
pub(super) fn aws_name(value: &str) -> String {
    let value = value.split(':').next().unwrap_or(value);
    value.rsplit('#').next().unwrap_or(value).trim().to_string()
}
