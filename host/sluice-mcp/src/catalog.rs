//! `tools/list`: every tool the configuration grants, as MCP tools with annotations derived
//! from their policies, in a deterministic order, a page at a time.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{CacheScope, ListToolsResult, MetaObject, Tool, ToolAnnotations};
use sluice_runtime::ToolInfo;

/// How long a client may keep a `tools/list` page (`ttlMs`), in ms. The tools change only
/// when live reload replaces them (`sluice serve`, `sluice mcp`), which clients that can
/// receive it are told with `notifications/tools/list_changed`; others see the change
/// within this time.
pub const TOOLS_TTL_MS: u64 = 60_000;

/// The `_meta` key of a tool by which Claude Code takes results up to that many characters
/// whole (it saves a larger one to a file and shows the model a 2 KB preview, from 50,000
/// characters unless a tool declares more). Every tool declares the cap: the cap counts
/// bytes of UTF-8, and a text has at most as many characters as bytes, so no result the
/// cap lets through is over it.
pub const MAX_RESULT_SIZE_CHARS_KEY: &str = "anthropic/maxResultSizeChars";

/// The tools served over MCP, in load order (the built-ins, then `[tools.*]`, then the tools
/// directory: the order of `sluice tools`).
pub(crate) struct Catalog {
    tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    per_page: usize,
}

/// The annotations of a tool, from its policy:
/// - `readOnlyHint`: the tool can change nothing: no `write` grant, and the operator did
///   not mark it `destructive` (MCP ignores `destructiveHint` on a read-only tool, so a tool
///   the operator calls destructive is not called read-only either);
/// - `destructiveHint`: a `write` grant or `destructive = true`;
/// - `idempotentHint`: true for the built-in file tools (reading twice reads the same);
///   left out for other components, whose code Sluice does not know;
/// - `openWorldHint`: an `http` grant (the tool may reach hosts outside Sluice); false
///   for a tool without one, which sees only its roots.
///
/// An `http` grant of a method other than GET, HEAD and OPTIONS (or of any method) makes
/// the tool destructive unless its policy says `destructive = false` (sluice-config
/// derives it; docs/mcp.md#annotations).
///
/// A tool whose scripts call the other tools (`run_script`) may do what they may: `reach`
/// is what the tools its scripts can call may do together, and it is neither read-only nor
/// idempotent when they are not.
pub(crate) fn annotations(info: &ToolInfo, reach: Reach) -> ToolAnnotations {
    let builtin = info.source == format!("built-in {}", info.name);
    let (destructive, open_world) = if info.calls_tools {
        (
            info.destructive || reach.destructive,
            info.open_world || reach.open_world,
        )
    } else {
        (info.destructive, info.open_world)
    };
    let mut a = ToolAnnotations::new()
        .read_only(!destructive)
        .destructive(destructive)
        .open_world(open_world);
    if builtin && !info.calls_tools {
        a = a.idempotent(true);
    }
    a
}

/// What the tools a script may call may do, together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reach {
    /// One of them is destructive (and scripts may call it: `mcp.allow_destructive`).
    pub(crate) destructive: bool,
    /// One of them is open-world.
    pub(crate) open_world: bool,
}

impl Catalog {
    /// The tools of `infos`; destructive ones only when `allow_destructive`. `per_page` is
    /// at least 1. Each tool's `_meta` declares `cap` (bytes) as
    /// [`MAX_RESULT_SIZE_CHARS_KEY`].
    pub(crate) fn new<'a>(
        infos: impl IntoIterator<Item = &'a ToolInfo>,
        allow_destructive: bool,
        per_page: usize,
        cap: u32,
    ) -> Self {
        let meta = MetaObject(serde_json::Map::from_iter([(
            MAX_RESULT_SIZE_CHARS_KEY.to_string(),
            serde_json::Value::from(cap),
        )]));
        let served: Vec<&ToolInfo> = infos
            .into_iter()
            .filter(|info| allow_destructive || !info.destructive)
            .collect();
        // A script may call every served tool but another script tool; a destructive one
        // only under allow_destructive, which is when it is served.
        let reach =
            served
                .iter()
                .filter(|info| !info.calls_tools)
                .fold(Reach::default(), |r, info| Reach {
                    destructive: r.destructive || info.destructive,
                    open_world: r.open_world || info.open_world,
                });
        let tools: Vec<Tool> = served
            .into_iter()
            .map(|info| {
                let schema = match &info.input_schema {
                    serde_json::Value::Object(o) => o.clone(),
                    _ => serde_json::Map::new(),
                };
                let mut tool = Tool::new(
                    info.name.clone(),
                    info.description.clone(),
                    Arc::new(schema),
                )
                .with_annotations(annotations(info, reach));
                tool.meta = Some(meta.clone());
                tool
            })
            .collect();
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.to_string(), i))
            .collect();
        Catalog {
            tools,
            by_name,
            per_page: per_page.max(1),
        }
    }

    /// True when tool `name` is served.
    pub(crate) fn serves(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Every served tool.
    pub(crate) fn all(&self) -> &[Tool] {
        &self.tools
    }

    /// The page starting at `cursor` (`None`: the first). A cursor is the index of the next
    /// tool, in decimal, as the previous page's `nextCursor` gave it.
    ///
    /// # Errors
    /// Invalid params (-32602) for a cursor this server did not give.
    pub(crate) fn page(&self, cursor: Option<&str>) -> Result<ListToolsResult, McpError> {
        let start = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|&i| i > 0 && i < self.tools.len())
                .ok_or_else(|| {
                    McpError::invalid_params(
                        format!(
                            "cursor {c:?} is not one this server gave: pass the nextCursor of the previous tools/list page, or no cursor for the first page"
                        ),
                        None,
                    )
                })?,
        };
        let end = (start + self.per_page).min(self.tools.len());
        let mut result = ListToolsResult::with_all_items(self.tools[start..end].to_vec())
            .with_ttl_ms(TOOLS_TTL_MS);
        result.cache_scope = Some(CacheScope::Private);
        if end < self.tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(name: &str, source: &str, destructive: bool) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: format!("{name} does things"),
            input_schema: json!({"type": "object", "properties": {}}),
            source: source.into(),
            destructive,
            open_world: false,
            calls_tools: false,
        }
    }

    fn infos() -> Vec<ToolInfo> {
        vec![
            info("read_file", "built-in read_file", false),
            info("tail_file", "built-in tail_file", false),
            info("write_note", "notes.wasm", true),
            info("wc", "wc.wasm", false),
        ]
    }

    #[test]
    fn annotations_follow_the_policy() {
        let a = serde_json::to_value(annotations(
            &info("read_file", "built-in read_file", false),
            Reach::default(),
        ))
        .unwrap();
        assert_eq!(
            a,
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        );
        let a = serde_json::to_value(annotations(
            &info("write_note", "notes.wasm", true),
            Reach::default(),
        ))
        .unwrap();
        assert_eq!(
            a,
            json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false})
        );
        // An `http` grant: the open world (sluice-config made a grant of POST destructive).
        let fetch = ToolInfo {
            open_world: true,
            ..info("fetch", "fetch.wasm", false)
        };
        assert_eq!(
            serde_json::to_value(annotations(&fetch, Reach::default())).unwrap(),
            json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": true})
        );
        let post = ToolInfo {
            open_world: true,
            ..info("post", "post.wasm", true)
        };
        assert_eq!(
            serde_json::to_value(annotations(&post, Reach::default())).unwrap(),
            json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": true})
        );
        // A component that names itself like a built-in is not one.
        let a = serde_json::to_value(annotations(
            &info("read_file", "read_file.wasm", false),
            Reach::default(),
        ))
        .unwrap();
        assert_eq!(a.get("idempotentHint"), None);
    }

    /// `run_script` may do what the tools it calls may: read-only and closed-world over the
    /// file tools; destructive once a destructive tool is served (allow_destructive); open-
    /// world beside a network tool; never idempotent.
    #[test]
    fn a_script_tool_reaches_what_its_scripts_may_call() {
        let script = ToolInfo {
            calls_tools: true,
            ..info("run_script", "built-in run_script", false)
        };
        let hints = |infos: &[ToolInfo], allow: bool| {
            let catalog = Catalog::new(infos, allow, 100, 65_536);
            let tool = catalog
                .all()
                .iter()
                .find(|t| t.name == "run_script")
                .unwrap();
            serde_json::to_value(tool.annotations.as_ref().unwrap()).unwrap()
        };
        let mut tools = infos();
        tools.push(script.clone());
        assert_eq!(
            hints(&tools, false),
            json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false})
        );
        assert_eq!(
            hints(&tools, true),
            json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false})
        );
        tools.push(ToolInfo {
            open_world: true,
            ..info("fetch", "fetch.wasm", false)
        });
        assert_eq!(
            hints(&tools, false),
            json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": true})
        );
    }

    #[test]
    fn destructive_tools_are_listed_only_when_allowed() {
        let names = |c: &Catalog| {
            c.all()
                .iter()
                .map(|t| t.name.to_string())
                .collect::<Vec<_>>()
        };
        let hidden = Catalog::new(&infos(), false, 100, 65_536);
        assert_eq!(names(&hidden), ["read_file", "tail_file", "wc"]);
        assert!(!hidden.serves("write_note"));
        let shown = Catalog::new(&infos(), true, 100, 65_536);
        assert_eq!(
            names(&shown),
            ["read_file", "tail_file", "write_note", "wc"]
        );
        assert!(shown.serves("write_note"));
    }

    #[test]
    fn every_tool_declares_the_cap_as_its_largest_result() {
        let catalog = Catalog::new(&infos(), true, 100, 120_000);
        for tool in catalog.all() {
            let listed = serde_json::to_value(tool).unwrap();
            assert_eq!(
                listed["_meta"],
                json!({"anthropic/maxResultSizeChars": 120_000}),
                "{}",
                tool.name
            );
        }
    }

    #[test]
    fn pages_follow_the_cursor_to_the_end() {
        let catalog = Catalog::new(&infos(), true, 3, 65_536);
        let first = catalog.page(None).unwrap();
        assert_eq!(first.tools.len(), 3);
        assert_eq!(first.next_cursor.as_deref(), Some("3"));
        assert_eq!(first.ttl_ms, Some(TOOLS_TTL_MS));
        assert_eq!(first.cache_scope, Some(CacheScope::Private));
        let second = catalog.page(Some("3")).unwrap();
        assert_eq!(second.tools.len(), 1);
        assert_eq!(second.tools[0].name, "wc");
        assert_eq!(second.next_cursor, None);
        for bad in ["0", "4", "x", "-1", ""] {
            let e = catalog.page(Some(bad)).unwrap_err();
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
            assert!(e.message.contains("is not one this server gave"), "{bad}");
        }
    }
}
