//! `acme:textstats`: text statistics as a WASI 0.2 component, written the way a third party
//! would write a tool: its own WIT package, plain Rust, no host-specific imports.
//!
//! Sluice's tests load it to check that any typed component is a tool: its schema, its
//! results, and the host's checking of arguments before the guest runs.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "textstats",
        path: "wit",
    });
}

use bindings::exports::acme::textstats::stats::{
    Guest, Separator, Summary, Token, TopRequest, Unit, WordCount,
};

struct TextStats;

impl Guest for TextStats {
    fn count(text: String, unit: Unit) -> u64 {
        let n = match unit {
            Unit::Bytes => text.len(),
            Unit::Chars => text.chars().count(),
            Unit::Words => text.split_whitespace().count(),
            Unit::Lines => text.lines().count(),
        };
        n as u64
    }

    fn summarize(text: String) -> Summary {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut longest: Option<&str> = None;
        let mut total_chars = 0usize;
        for word in &words {
            let len = word.chars().count();
            total_chars += len;
            if longest.is_none_or(|l| len > l.chars().count()) {
                longest = Some(word);
            }
        }
        Summary {
            bytes: text.len() as u64,
            chars: text.chars().count() as u64,
            words: words.len() as u64,
            lines: text.lines().count() as u64,
            longest_word: longest.map(str::to_string),
            mean_word_length: (!words.is_empty()).then(|| total_chars as f64 / words.len() as f64),
        }
    }

    fn top_words(request: TopRequest) -> Vec<WordCount> {
        let fold = request.ignore_case.unwrap_or(false);
        let norm = |w: &str| {
            if fold {
                w.to_lowercase()
            } else {
                w.to_string()
            }
        };
        let stop: Vec<String> = request
            .stop_words
            .unwrap_or_default()
            .iter()
            .map(|w| norm(w))
            .collect();
        let mut counts: Vec<WordCount> = Vec::new();
        for token in tokens(&request.text) {
            let Token::Word(word) = token else { continue };
            let word = norm(&word);
            if stop.contains(&word) {
                continue;
            }
            match counts.iter_mut().find(|c| c.word == word) {
                Some(c) => c.count += 1,
                None => counts.push(WordCount { word, count: 1 }),
            }
        }
        // A stable sort keeps ties in order of first appearance.
        counts.sort_by_key(|c| std::cmp::Reverse(c.count));
        counts.truncate(request.limit.unwrap_or(5) as usize);
        counts
    }

    fn split(text: String, by: Separator, max_parts: Option<u32>) -> Result<Vec<String>, String> {
        let spans: Vec<(usize, usize)> = match by {
            Separator::Whitespace => text
                .split_whitespace()
                .map(|w| {
                    let start = w.as_ptr() as usize - text.as_ptr() as usize;
                    (start, start + w.len())
                })
                .collect(),
            Separator::OnChar(c) => spans_of(&text, &c.to_string()),
            Separator::OnText(s) if s.is_empty() => {
                return Err("on-text must not be empty".to_string());
            }
            Separator::OnText(s) => spans_of(&text, &s),
            Separator::Every(0) => return Err("every must be at least 1".to_string()),
            Separator::Every(n) => {
                let starts: Vec<usize> = text
                    .char_indices()
                    .map(|(i, _)| i)
                    .step_by(n as usize)
                    .collect();
                starts
                    .iter()
                    .enumerate()
                    .map(|(k, &s)| (s, starts.get(k + 1).copied().unwrap_or(text.len())))
                    .collect()
            }
        };
        let mut spans = spans;
        match max_parts {
            Some(0) => return Err("max-parts must be at least 1".to_string()),
            Some(max) if spans.len() > max as usize => {
                let end = spans.last().map_or(text.len(), |s| s.1);
                spans.truncate(max as usize);
                if let Some(last) = spans.last_mut() {
                    last.1 = end;
                }
            }
            _ => {}
        }
        Ok(spans.iter().map(|&(s, e)| text[s..e].to_string()).collect())
    }

    fn tokenize(text: String) -> Vec<Token> {
        tokens(&text)
    }

    fn most_common_char(text: String) -> Option<char> {
        let mut counts: Vec<(char, u32)> = Vec::new();
        for c in text.chars().filter(|c| !c.is_whitespace()) {
            match counts.iter_mut().find(|(k, _)| *k == c) {
                Some((_, n)) => *n += 1,
                None => counts.push((c, 1)),
            }
        }
        let best = counts.iter().map(|(_, n)| *n).max()?;
        counts.iter().find(|(_, n)| *n == best).map(|(c, _)| *c)
    }

    fn add_counts(a: u8, b: u8, saturate: bool) -> u8 {
        if saturate {
            a.saturating_add(b)
        } else {
            a.wrapping_add(b)
        }
    }
}

/// The byte spans of the parts of `text` between occurrences of `sep` (not empty).
fn spans_of(text: &str, sep: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices(sep) {
        spans.push((start, i));
        start = i + sep.len();
    }
    spans.push((start, text.len()));
    spans
}

/// The words, numbers and punctuation of `text`.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts_number =
            c.is_ascii_digit() || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit));
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphabetic()
                    || (chars[i] == '\'' && chars.get(i + 1).is_some_and(|n| n.is_alphabetic())))
            {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else if starts_number {
            let negative = c == '-';
            if negative {
                i += 1;
            }
            let mut n: i64 = 0;
            while i < chars.len() && chars[i].is_ascii_digit() {
                let digit = i64::from(chars[i] as u8 - b'0');
                n = n.saturating_mul(10).saturating_add(digit);
                i += 1;
            }
            out.push(Token::Number(if negative { -n } else { n }));
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

bindings::export!(TextStats with_types_in bindings);
