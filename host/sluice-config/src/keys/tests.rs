//! The declarations checked, rendered and compared with docs/configuration.md.

use super::*;

#[test]
fn every_key_is_declared_once_with_a_default_of_its_kind() {
    for (i, k) in KEYS.iter().enumerate() {
        assert!(!KEYS[..i].iter().any(|o| o.name == k.name), "{}", k.name);
        assert!(
            !KEYS[..i].iter().any(|o| o.env.is_some() && o.env == k.env),
            "{}",
            k.name
        );
        let fits = match (k.kind, k.default) {
            (Kind::Integer { min, max, .. }, Fallback::Integer(n)) => (min..=max).contains(&n),
            (Kind::Boolean, Fallback::Boolean(_)) => true,
            (_, Fallback::Described(_)) => !matches!(k.kind, Kind::Boolean),
            _ => false,
        };
        assert!(fits, "{}", k.name);
        if let Some(var) = k.env {
            let expected = format!("SLUICE_{}", k.name.replace('.', "_").to_uppercase());
            assert!(
                var == expected || k.name.starts_with("store."),
                "{var} for {}",
                k.name
            );
        }
    }
}

#[test]
fn rows_and_help_render_the_declaration() {
    assert_eq!(
        AGENT_MAX_TOOL_RESULT_BYTES.docs_row(),
        "| `agent.max_tool_result_bytes` (1,024 to 1,048,576 bytes) | `--max-tool-result-bytes` | `SLUICE_AGENT_MAX_TOOL_RESULT_BYTES` | 65,536 |"
    );
    assert_eq!(
        AGENT_SYSTEM_PROMPT.docs_row(),
        "| `agent.system_prompt` | | | a short prompt about paging |"
    );
    assert_eq!(
        RUNTIME_MAX_CONCURRENT_CALLS.help("Tool calls that may run at once"),
        "Tool calls that may run at once (1 to 1024; default 2 × the cores; env SLUICE_RUNTIME_MAX_CONCURRENT_CALLS)."
    );
    assert_eq!(
        STORE_URL.help("The session database in PostgreSQL"),
        "The session database in PostgreSQL (env SLUICE_STORE_URL)."
    );
    assert_eq!(grouped(68_719_476_736), "68,719,476,736");
    assert_eq!(grouped(0), "0");
    assert_eq!(STRICT.table(), "");
    assert_eq!(MCP_TOOLS_PER_PAGE.table(), "mcp");
}

/// docs/configuration.md#precedence's rows of the declared keys are exactly the rows
/// the declarations render, in their order (its other rows are prose of their own).
#[test]
fn the_precedence_table_of_the_docs_is_the_declarations() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md"),
    )
    .unwrap();
    let section = doc.split("\n## Precedence\n").nth(1).unwrap();
    let declared: Vec<&str> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|row| {
            KEYS.iter()
                .any(|k| row.starts_with(&format!("| `{}`", k.name)))
        })
        .collect();
    let rendered: Vec<String> = KEYS.iter().map(Key::docs_row).collect();
    assert_eq!(declared, rendered);
}

#[test]
fn a_bad_value_names_key_range_unit_and_origin() {
    let e = AGENT_MAX_TOOL_RESULT_BYTES
        .check_integer("1023", "--max-tool-result-bytes")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got 1023 (from --max-tool-result-bytes)"
    );
    let layers = Layers {
        env: &|k| (k == "SLUICE_STORE_URL").then(String::new),
        file_label: "f",
    };
    assert_eq!(STORE_URL.given(None, None, &layers), None);
    assert_eq!(
        STORE_PATH.given(Some("x.db"), None, &layers),
        Some(("x.db".to_string(), "--store".to_string()))
    );
}

/// The keys only the file sets: each named once (here and in [`KEYS`]), without a variable
/// or a flag, its default in its range, and a row in docs/configuration.md whose range, when
/// the row gives one, is the declared one; a bad value's message names key, range and unit.
#[test]
fn the_file_keys_are_declared_once_and_their_rows_give_their_ranges() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md"),
    )
    .unwrap();
    for (i, k) in FILE_KEYS.iter().enumerate() {
        let others = KEYS.iter().chain(&FILE_KEYS[..i]);
        assert!(!others.clone().any(|o| o.name == k.name), "{}", k.name);
        assert_eq!((k.env, k.flag), (None, None), "{}", k.name);
        let Kind::Integer { min, max, .. } = k.kind else {
            panic!("{} is no integer", k.name)
        };
        if let Fallback::Integer(n) = k.default {
            assert!((min..=max).contains(&n), "{}", k.name);
        }
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", k.name)))
            .unwrap_or_else(|| panic!("no row of {} in docs/configuration.md", k.name));
        // `| key | 1 to 1,000,000 | default |`: a second cell that starts with a number
        // gives the range (the registry's and the cache's rows say what the key bounds).
        let second = row.split(" | ").nth(1).unwrap_or_default();
        if second.starts_with(|c: char| c.is_ascii_digit()) {
            let range = format!("{} to {}", grouped(min), grouped(max));
            assert!(second.starts_with(&range), "{row} does not give {range}");
        }
    }
    assert_eq!(
        SERVER_OAUTH_LEEWAY_SECS
            .file_integer(Some(&Raw::Integer("301".into())), "sluice.toml line 9")
            .unwrap_err()
            .to_string(),
        "server.oauth.leeway_secs must be an integer from 0 to 300 (seconds); got 301 (from sluice.toml line 9)"
    );
}
