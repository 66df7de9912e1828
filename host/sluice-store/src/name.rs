//! Session names an operator may choose (`sluice run --session NAME`). They become ids, so
//! they appear in URLs (`/sessions/{id}`), file listings and shell commands: only characters
//! that need no quoting or escaping in any of them.

/// What a session name may be, as messages say it.
pub const SESSION_NAME_RULE: &str =
    "1 to 64 characters: ASCII letters, digits, `-`, `_` and `.`, starting with a letter or digit";

/// Whether `name` may name a session: [`SESSION_NAME_RULE`]. Generated ids (`s-` and 12
/// characters) satisfy it too.
pub fn valid_session_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["x", "fix-login.2", "s-04ddsvk0kh4g", "A_b", &"n".repeat(64)] {
            assert!(valid_session_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "-x",
            "_x",
            "a b",
            "a/b",
            "é",
            "a?",
            &"n".repeat(65),
        ] {
            assert!(!valid_session_name(bad), "{bad}");
        }
    }
}
