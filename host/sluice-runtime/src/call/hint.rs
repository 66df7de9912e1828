//! The hint that ends a cut observation's marker (`… Ask for less: <hint>]`): the arguments
//! of the tool itself that ask for less, read from its JSON schema, never from its name
//! (docs/observations.md#hints). A third-party tool called `read_file` whose only argument
//! is `path` is not told to pass `lineCount`.

use serde_json::Value;

/// The hint of tools that have no paging arguments.
pub const DEFAULT_HINT: &str = "a narrower query";

/// The hint of the built-in `read_file` shape (`lineCount`, `startLine` and `offset`).
pub const READ_HINT: &str =
    "pass lineCount, or startLine with offset (from nextLine and nextOffset)";

/// The hint of the built-in `tail_file` shape (an integer `lines`).
pub const TAIL_HINT: &str = "ask for fewer lines";

/// The hint of the built-in `grep_files` shape (`pattern`, `maxResults` and `cursor`).
pub const GREP_HINT: &str =
    "pass a smaller maxResults, a narrower pattern, path or glob, or the nextCursor";

/// The hint of the built-in `list_dir` shape (`offset` and nothing else that pages).
pub const LIST_HINT: &str = "pass offset (from nextOffset)";

/// Arguments that bound how much comes back, compared without case, `_` and `-`
/// (`max_results`, `maxResults` and `max-results` are one).
const SIZE_ARGUMENTS: &[&str] = &[
    "linecount",
    "maxresults",
    "limit",
    "maxbytes",
    "maxitems",
    "maxlines",
    "pagesize",
    "perpage",
    "count",
    "top",
];

/// Arguments that say where a page starts.
const POSITION_ARGUMENTS: &[&str] = &[
    "offset",
    "cursor",
    "startline",
    "page",
    "pagetoken",
    "nextcursor",
    "after",
    "skip",
];

/// What the marker of a cut observation of a tool whose arguments have JSON schema `schema`
/// suggests. The built-in file tools' shapes keep their own wording ([`READ_HINT`],
/// [`TAIL_HINT`], [`GREP_HINT`], [`LIST_HINT`], whatever the tool is called); another
/// schema with size or position arguments (`limit`, `maxResults`, `offset`, `cursor`, …)
/// gets `pass a smaller <size>, or <position>` naming them as the schema spells them; a
/// schema with neither (or no schema) gets [`DEFAULT_HINT`], `a narrower query`.
pub fn paging_hint(schema: &Value) -> String {
    let names: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let has = |name: &str| names.contains(&name);
    let integer = |name: &str| {
        schema["properties"][name]["type"]
            .as_str()
            .is_some_and(|t| t == "integer")
            || schema["properties"][name]["type"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t == "integer"))
    };
    if has("lineCount") && has("startLine") && has("offset") {
        return READ_HINT.into();
    }
    if has("pattern") && has("maxResults") && has("cursor") {
        return GREP_HINT.into();
    }
    if has("lines") && integer("lines") {
        return TAIL_HINT.into();
    }
    let of_kind = |kind: &[&str]| -> Vec<&str> {
        names
            .iter()
            .copied()
            .filter(|n| kind.contains(&normalise(n).as_str()))
            .collect()
    };
    let sizes = of_kind(SIZE_ARGUMENTS);
    let positions = of_kind(POSITION_ARGUMENTS);
    match (sizes.as_slice(), positions.as_slice()) {
        ([], []) => DEFAULT_HINT.into(),
        ([], ["offset"]) => LIST_HINT.into(),
        ([], p) => format!("pass {}", either(p)),
        (s, []) => format!("pass a smaller {}", either(s)),
        (s, p) => format!("pass a smaller {}, or {}", either(s), either(p)),
    }
}

/// `name` lowercased without `_` and `-`.
fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// `a`, `a or b`, `a, b or c`.
fn either(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    #[test]
    fn the_built_in_shapes_keep_their_wording() {
        let int = json!({"type": "integer"});
        let s = json!({"type": "string"});
        let read = schema(
            json!({"path": s, "root": s, "startLine": int, "lineCount": int, "offset": int}),
        );
        assert_eq!(paging_hint(&read), READ_HINT);
        let tail = schema(json!({"path": s, "root": s, "lines": int}));
        assert_eq!(paging_hint(&tail), TAIL_HINT);
        let grep = schema(json!({
            "pattern": s, "path": s, "root": s, "glob": s,
            "caseSensitive": {"type": "boolean"}, "maxResults": int, "cursor": s
        }));
        assert_eq!(paging_hint(&grep), GREP_HINT);
        let list = schema(json!({"path": s, "root": s, "offset": int}));
        assert_eq!(paging_hint(&list), LIST_HINT);
    }

    /// A tool without paging arguments, such as wassette's filesystem-rs `read-file(path)`,
    /// is not told to pass `lineCount` or `offset`.
    #[test]
    fn a_tool_without_paging_arguments_gets_a_narrower_query() {
        assert_eq!(
            paging_hint(&schema(json!({"path": {"type": "string"}}))),
            "a narrower query"
        );
        assert_eq!(paging_hint(&json!({})), "a narrower query");
        assert_eq!(paging_hint(&Value::Null), "a narrower query");
        // `lines` that is not a count is not a paging argument.
        assert_eq!(
            paging_hint(&schema(json!({"lines": {"type": "array"}}))),
            "a narrower query"
        );
    }

    #[test]
    fn other_schemas_name_their_own_arguments() {
        let int = json!({"type": "integer"});
        assert_eq!(
            paging_hint(&schema(
                json!({"query": {}, "limit": int, "page_token": {}})
            )),
            "pass a smaller limit, or page_token"
        );
        assert_eq!(
            paging_hint(&schema(json!({"max-results": int, "max_bytes": int}))),
            "pass a smaller max-results or max_bytes"
        );
        assert_eq!(
            paging_hint(&schema(json!({"cursor": {}, "offset": int, "skip": int}))),
            "pass cursor, offset or skip"
        );
        assert_eq!(
            paging_hint(&schema(json!({"lineCount": int, "offset": int}))),
            "pass a smaller lineCount, or offset"
        );
    }
}
