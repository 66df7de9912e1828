//! Tool names: what `sluice new NAME` accepts ([`NAME_RULE`]) and the forms the templates
//! need ([`ToolName`]).

use crate::KitError;

/// What a tool name may be: one name that works unchanged as a WIT package, world and function
/// name, a Cargo package, and (in snake_case or camelCase) a Rust, Python, C and JavaScript
/// identifier, and as the Sluice tool name (snake_case).
pub const NAME_RULE: &str = "1 to 64 characters: lowercase words of a-z and 0-9, each starting with a letter, joined by single hyphens (`notes`, `csv-pager`, `wc2`), and not a keyword of WIT, Rust, Python or JavaScript or a name the template uses";

/// The longest tool name, in characters: the longest tool name the model APIs take
/// (`sluice_protocol::MAX_TOOL_NAME_BYTES`).
pub const MAX_NAME_CHARS: usize = 64;

/// Names that cannot be a tool name: keywords of WIT (the world and function), Rust (the
/// `Guest` method), Python (the `WitWorld` method) and JavaScript (the exported function),
/// Cargo's built-in crate names, and the names the template's world already uses.
const RESERVED: &[&str] = &[
    // WIT.
    "as",
    "async",
    "bool",
    "borrow",
    "char",
    "constructor",
    "enum",
    "error-context",
    "export",
    "f32",
    "f64",
    "flags",
    "float32",
    "float64",
    "from",
    "func",
    "future",
    "import",
    "include",
    "interface",
    "list",
    "option",
    "own",
    "package",
    "record",
    "resource",
    "result",
    "s16",
    "s32",
    "s64",
    "s8",
    "static",
    "stream",
    "string",
    "tuple",
    "type",
    "u16",
    "u32",
    "u64",
    "u8",
    "use",
    "variant",
    "with",
    "world",
    // Rust, and Cargo's built-in crates.
    "abstract",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "crate",
    "do",
    "dyn",
    "else",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "pub",
    "ref",
    "return",
    "self",
    "struct",
    "super",
    "trait",
    "true",
    "try",
    "typeof",
    "unsafe",
    "unsized",
    "virtual",
    "where",
    "while",
    "yield",
    "alloc",
    "core",
    "proc-macro",
    "std",
    "test",
    // Python.
    "and",
    "assert",
    "class",
    "def",
    "del",
    "elif",
    "except",
    "finally",
    "global",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    // JavaScript.
    "arguments",
    "case",
    "catch",
    "debugger",
    "default",
    "delete",
    "eval",
    "extends",
    "function",
    "implements",
    "instanceof",
    "new",
    "null",
    "private",
    "protected",
    "public",
    "switch",
    "this",
    "throw",
    "var",
    "void",
    // The template's world: its interface and types.
    "lines",
    "page",
    "page-args",
    "tool-error",
];

/// A tool name that follows [`NAME_RULE`], in the forms the templates use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolName(String);

impl ToolName {
    /// Checks `name` against [`NAME_RULE`].
    ///
    /// # Errors
    /// [`KitError::BadName`], saying what is wrong: empty, too long, a character that is not
    /// allowed, a word that does not start with a letter, or a reserved word.
    pub fn parse(name: &str) -> Result<ToolName, KitError> {
        let bad = |problem: String| KitError::BadName {
            name: name.to_string(),
            problem,
        };
        let chars = name.chars().count();
        if chars == 0 {
            return Err(bad("it is empty".to_string()));
        }
        if chars > MAX_NAME_CHARS {
            return Err(bad(format!(
                "it is {chars} characters, more than {MAX_NAME_CHARS}"
            )));
        }
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Err(bad(format!("it holds {c:?}")));
        }
        if name.split('-').any(str::is_empty) {
            return Err(bad(
                "a hyphen starts or ends it, or two hyphens are side by side".to_string(),
            ));
        }
        if let Some(word) = name
            .split('-')
            .find(|w| !w.starts_with(|c: char| c.is_ascii_lowercase()))
        {
            return Err(bad(format!("its word `{word}` starts with a digit")));
        }
        if RESERVED.contains(&name) {
            return Err(bad(format!(
                "it is a keyword of WIT, Rust, Python or JavaScript, or a name the template uses (try `{name}-tool`)"
            )));
        }
        Ok(ToolName(name.to_string()))
    }

    /// The name as given, in kebab-case: the WIT package, world and function, the Cargo and
    /// npm package (`csv-pager`).
    pub fn kebab(&self) -> &str {
        &self.0
    }

    /// In snake_case: the tool name the model calls, the component file, Rust, Python and C
    /// identifiers (`csv_pager`).
    pub fn snake(&self) -> String {
        self.0.replace('-', "_")
    }

    /// In camelCase: the JavaScript export componentize-js expects (`csvPager`).
    pub fn camel(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for (i, word) in self.0.split('-').enumerate() {
            let mut chars = word.chars();
            if i > 0
                && let Some(first) = chars.next()
            {
                out.push(first.to_ascii_uppercase());
            }
            out.extend(chars);
        }
        out
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let name = ToolName::parse("csv-pager2-x").unwrap();
        assert_eq!(name.kebab(), "csv-pager2-x");
        assert_eq!(name.snake(), "csv_pager2_x");
        assert_eq!(name.camel(), "csvPager2X");
        assert_eq!(ToolName::parse("notes").unwrap().camel(), "notes");
    }

    #[test]
    fn longest_name() {
        assert!(ToolName::parse(&"a".repeat(64)).is_ok());
        assert_eq!(
            ToolName::parse(&"a".repeat(65)).unwrap_err().to_string(),
            format!(
                "bad tool name `{}`: it is 65 characters, more than 64; a tool name is {NAME_RULE}",
                "a".repeat(65)
            )
        );
    }

    #[test]
    fn reserved_words_are_valid_words() {
        // Each reserved word would pass the other rules: it is there for a reason.
        for word in RESERVED {
            let bad = ToolName::parse(word).unwrap_err().to_string();
            assert!(bad.contains("it is a keyword"), "{word}: {bad}");
        }
    }
}
