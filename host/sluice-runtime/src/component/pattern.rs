//! A `pattern` refinement of a string argument ([`Pattern`]): JSON Schema's dialect, checked
//! with the `regex` crate.

/// A regular expression of a `pattern` refinement: JSON Schema's dialect (ECMA-262), as the
/// model is shown it, translated to the `regex` crate's syntax as the `jsonschema` crate does
/// (`\d` is `[0-9]`, `\w` is `[A-Za-z0-9_]`, `.` matches anything but a line terminator).
/// It matches anywhere in a string, as JSON Schema's `pattern` does: `^…$` anchors it.
/// Matching takes time linear in the string (the `regex` crate has no backtracking).
#[derive(Clone)]
pub struct Pattern {
    source: String,
    regex: regex::Regex,
}

/// What a `pattern` may be.
pub const PATTERN_RULE: &str = "a regular expression as JSON Schema's pattern takes it (ECMA-262 syntax, without look-around or backreferences)";

impl Pattern {
    /// Compiles `source`.
    ///
    /// # Errors
    /// [`PatternError`]: why it is not [`PATTERN_RULE`].
    pub fn new(source: &str) -> Result<Pattern, PatternError> {
        let regex = match jsonschema_regex::to_rust_regex(source) {
            Ok(rust) => regex::Regex::new(&rust).map_err(PatternError::Regex)?,
            Err(()) => {
                return Err(match regex::Regex::new(source) {
                    Err(e) => PatternError::Regex(e),
                    Ok(_) => PatternError::NotEcma,
                });
            }
        };
        Ok(Pattern {
            source: source.to_string(),
            regex,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when `s` has a match.
    pub fn is_match(&self, s: &str) -> bool {
        self.regex.is_match(s)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.source == other.source
    }
}

impl Eq for Pattern {}

impl std::fmt::Debug for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

/// Why a `pattern` is not [`PATTERN_RULE`], in one line (`unclosed group`; `look-around,
/// including look-ahead and look-behind, is not supported`).
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// The `regex` crate refused it (or its translation): the last line of its message, or
    /// the size it compiles to.
    #[error("{}", regex_reason(.0))]
    Regex(#[source] regex::Error),
    /// The `regex` crate takes it, but it is not ECMA-262 syntax.
    #[error("it is not ECMA-262 syntax")]
    NotEcma,
}

/// The `regex` crate's refusal in one line.
fn regex_reason(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => s.lines().last().map_or_else(
            || s.clone(),
            |l| l.trim_start_matches("error: ").to_string(),
        ),
        regex::Error::CompiledTooBig(n) => format!("it compiles to more than {n} bytes"),
        other => other.to_string(),
    }
}
