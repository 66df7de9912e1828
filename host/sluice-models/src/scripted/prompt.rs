//! The directory and the search term a prompt names (see the [module docs](super)).

use std::sync::LazyLock;

use regex::Regex;

use super::step::MAX_QUOTED_CHARS;

/// Quoted spans: `"…"`, `“…”`, `` `…` ``, and `'…'` when the quotes are not inside a word.
#[allow(clippy::expect_used)] // A constant pattern: see the comment inside.
static QUOTED: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern, exercised by the prompt tests.
    Regex::new(r#""([^"\n]+)"|“([^”\n]+)”|`([^`\n]+)`|(?:^|[^\w'])'([^'\n]+)'(?:[^\w]|$)"#)
        .expect("a valid regex")
});

/// The directory and the quoted search term of a prompt (see the module docs).
pub(super) fn analyse_prompt(prompt: &str) -> (String, Option<String>) {
    let mut dir = None;
    let mut term = None;
    for captures in QUOTED.captures_iter(prompt) {
        let Some(quoted) = captures.iter().skip(1).flatten().next() else {
            continue;
        };
        let quoted = quoted.as_str().trim();
        if quoted.is_empty() {
            continue;
        }
        match as_path(quoted) {
            Some(path) if dir.is_none() => dir = Some(path),
            Some(_) => {}
            None if term.is_none() && quoted.chars().count() <= MAX_QUOTED_CHARS => {
                term = Some(quoted.to_string())
            }
            None => {}
        }
    }
    if dir.is_none() {
        dir = prompt.split_whitespace().find_map(|word| {
            let word = word.trim_start_matches(['"', '\'', '`', '(', '[', '{', '<', '“', '‘']);
            let word = word.trim_end_matches([
                '"', '\'', '`', ')', ']', '}', '>', ',', ';', ':', '!', '?', '”', '’',
            ]);
            // A sentence's full stop, but not the `.` of `./`.
            let word = if word.ends_with('.') && !word.ends_with("/.") {
                word.trim_end_matches('.')
            } else {
                word
            };
            as_path(word)
        });
    }
    (dir.unwrap_or_else(|| ".".to_string()), term)
}

/// `text` as a root-relative directory path, if it looks like one.
fn as_path(text: &str) -> Option<String> {
    let allowed = |c: char| c.is_alphanumeric() || "._-/@+".contains(c);
    if text.is_empty()
        || !(text.contains('/'))
        || text.starts_with('/')
        || text.contains("://")
        || !text.chars().all(allowed)
        || text.split('/').any(|part| part == "..")
    {
        return None;
    }
    let mut path = text;
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix("/.").unwrap_or(path);
    Some(if path.is_empty() || path == "." {
        ".".to_string()
    } else {
        path.to_string()
    })
}
