//! Integer arguments (docs/observations.md#arguments): what the lowering accepts where a
//! tool's type is an integer, and how it shows what it refuses.
//!
//! - A JSON integer, or a string that is exactly the text of one (`"12"`, `"-3"`: what some
//!   clients send), within the type's bounds narrowed by `@minimum` / `@maximum`. Anything
//!   else (`2.0`, `"1e3"`, `" 12"`, `"0x10"`, `"12.0"`) is refused.
//! - Above the maximum, a field whose WIT doc says `@saturate` takes the maximum instead of
//!   refusing (a count the tool clamps anyway, such as `tail_file`'s `lines`).
//! - serde_json reads an integer beyond 64 bits as a float, which loses its digits; the
//!   argument text is scanned for such literals ([`Literals`]) so that a message shows the
//!   number exactly as it was written, and such a literal is still an integer.

use std::collections::HashMap;

use serde_json::Value;

use crate::component::argument_error::ArgumentError;

/// Integer literals of an argument text that do not fit in 64 bits, keyed by the argument
/// path the lowering names them by (`lines`, `items[2].n`, `by.val`), as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Literals {
    by_path: HashMap<String, String>,
    /// The argument text was scanned: a float found at a path without a literal was
    /// written as a float.
    scanned: bool,
}

impl Literals {
    /// No literals: for arguments that were never text (the lowering then judges a float
    /// by its value alone).
    pub fn none() -> Self {
        Literals::default()
    }

    /// The literals of `text`, which parsed as `parsed`. `text` is scanned only when
    /// `parsed` holds a float (a literal beyond 64 bits is one); text that is not the JSON
    /// of `parsed` gives no literals.
    pub fn of(text: &str, parsed: &Value) -> Self {
        if !has_float(parsed) {
            // No float anywhere: nothing to look up, and nothing to judge.
            return Literals {
                by_path: HashMap::new(),
                scanned: true,
            };
        }
        let mut scan = Scan {
            s: text.as_bytes(),
            i: 0,
            out: HashMap::new(),
        };
        match scan.value(String::new()) {
            Some(()) => Literals {
                by_path: scan.out,
                scanned: true,
            },
            None => Literals::none(),
        }
    }

    /// What the text says of the number at argument path `path`.
    pub(crate) fn get(&self, path: &str) -> Written<'_> {
        match self.by_path.get(path) {
            Some(lit) => Written::Literal(lit),
            None if self.scanned => Written::AsParsed,
            None => Written::Unknown,
        }
    }
}

/// What the argument text says of one number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written<'a> {
    /// An integer literal beyond 64 bits, as written.
    Literal(&'a str),
    /// What serde_json read is what was written (an integer within 64 bits, or a float).
    AsParsed,
    /// The text is not known: a float with no fraction at or above 2^64 may have been an
    /// integer literal.
    Unknown,
}

fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(obj) => obj.values().any(has_float),
        _ => false,
    }
}

/// A walk over JSON text already known to be valid, recording integer literals that do not
/// fit in 64 bits. `None` when the text is not as expected (then nothing is recorded).
struct Scan<'a> {
    s: &'a [u8],
    i: usize,
    out: HashMap<String, String>,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        let hit = self.s.get(self.i) == Some(&b);
        if hit {
            self.i += 1;
        }
        hit
    }

    /// A string literal, decoded.
    fn string(&mut self) -> Option<String> {
        self.ws();
        let start = self.i;
        (self.s.get(self.i) == Some(&b'"')).then_some(())?;
        self.i += 1;
        loop {
            match self.s.get(self.i)? {
                b'\\' => self.i += 2,
                b'"' => break,
                _ => self.i += 1,
            }
        }
        self.i += 1;
        serde_json::from_slice(self.s.get(start..self.i)?).ok()
    }

    fn value(&mut self, path: String) -> Option<()> {
        self.ws();
        match *self.s.get(self.i)? {
            b'{' => {
                self.i += 1;
                if self.eat(b'}') {
                    return Some(());
                }
                loop {
                    let key = self.string()?;
                    self.eat(b':').then_some(())?;
                    let inner = if path.is_empty() {
                        key
                    } else {
                        format!("{path}.{key}")
                    };
                    self.value(inner)?;
                    if self.eat(b'}') {
                        return Some(());
                    }
                    self.eat(b',').then_some(())?;
                }
            }
            b'[' => {
                self.i += 1;
                if self.eat(b']') {
                    return Some(());
                }
                for n in 0.. {
                    self.value(format!("{path}[{n}]"))?;
                    if self.eat(b']') {
                        return Some(());
                    }
                    self.eat(b',').then_some(())?;
                }
                Some(())
            }
            b'"' => self.string().map(drop),
            _ => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
                {
                    self.i += 1;
                }
                let token = std::str::from_utf8(self.s.get(start..self.i)?).ok()?;
                if is_integer_text(token)
                    && token.parse::<i64>().is_err()
                    && token.parse::<u64>().is_err()
                {
                    self.out.insert(path, token.to_string());
                }
                Some(())
            }
        }
    }
}

/// True when `s` is exactly the text of a JSON integer: `-?(0|[1-9][0-9]*)`.
fn is_integer_text(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    match digits.as_bytes() {
        [] => false,
        [b'0'] => true,
        [b'0', ..] => false,
        d => d.iter().all(u8::is_ascii_digit),
    }
}

/// The bounds of one integer argument.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    /// The least value allowed.
    pub min: i128,
    /// The greatest value allowed.
    pub max: i128,
    /// A larger integer counts as `max` (`@saturate`).
    pub saturate: bool,
}

/// What an argument holds, as an integer.
enum Given {
    /// An integer that fits in an `i128`.
    Int(i128),
    /// An integer with more digits than an `i128` holds; `true` when negative.
    Huge(bool),
    /// Not an integer.
    Not,
}

fn given_text(s: &str) -> Given {
    if !is_integer_text(s) {
        return Given::Not;
    }
    s.parse::<i128>()
        .map_or(Given::Huge(s.starts_with('-')), Given::Int)
}

/// The integer `json` holds (the argument `name`, as the text `written` says it was
/// written) within `b`.
///
/// # Errors
/// `<name> must be an integer of at least <min>; got <value>` below the minimum or for
/// what is not an integer, `… of at most <max>; …` above the maximum, the value as it was
/// given (a literal exactly as written), cut to 100 bytes.
pub(crate) fn integer(
    json: &Value,
    written: Written<'_>,
    name: &str,
    b: Bounds,
) -> Result<i128, ArgumentError> {
    let (given, shown) = match (json, written) {
        (Value::Number(_), Written::Literal(lit)) => (given_text(lit), lit.to_string()),
        (Value::Number(n), _) => {
            let int = n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
            let given = match int {
                Some(n) => Given::Int(n),
                // An integer too large for 64 bits read as a float with no fraction, where
                // its text is not known: too large, not a fraction.
                None if written == Written::Unknown
                    && n.as_f64()
                        .is_some_and(|f| f.fract() == 0.0 && f >= 18_446_744_073_709_551_616.0) =>
                {
                    Given::Huge(false)
                }
                None => Given::Not,
            };
            (given, json.to_string())
        }
        (Value::String(s), _) => (given_text(s), json.to_string()),
        _ => (Given::Not, json.to_string()),
    };
    let shown = sluice_text::cut_bytes(&shown, 100).into_owned();
    let at_least = || {
        ArgumentError::expected(
            name,
            format!("an integer of at least {}", b.min),
            shown.clone(),
        )
    };
    let above = || {
        if b.saturate {
            Ok(b.max)
        } else {
            Err(ArgumentError::expected(
                name,
                format!("an integer of at most {}", b.max),
                shown.clone(),
            ))
        }
    };
    match given {
        Given::Int(n) if n < b.min => Err(at_least()),
        Given::Int(n) if n > b.max => above(),
        Given::Int(n) => Ok(n),
        Given::Huge(false) => above(),
        Given::Huge(true) | Given::Not => Err(at_least()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U64: Bounds = Bounds {
        min: 0,
        max: u64::MAX as i128,
        saturate: false,
    };

    fn lower(text: &str, b: Bounds) -> Result<i128, String> {
        let v: Value = serde_json::from_str(text).unwrap();
        let lits = Literals::of(text, &v);
        integer(&v["n"], lits.get("n"), "n", b).map_err(|e| e.to_string())
    }

    #[test]
    fn decimal_strings_are_integers_and_nothing_else_is() {
        assert_eq!(lower(r#"{"n":"12"}"#, U64), Ok(12));
        let s32 = Bounds {
            min: i32::MIN.into(),
            max: i32::MAX.into(),
            saturate: false,
        };
        assert_eq!(lower(r#"{"n":"-3"}"#, s32), Ok(-3));
        assert_eq!(lower(r#"{"n":"0"}"#, U64), Ok(0));
        for bad in [
            "1e3", " 12", "12 ", "0x10", "12.0", "+1", "012", "", "-", "1_000",
        ] {
            assert_eq!(
                lower(&format!(r#"{{"n":{}}}"#, Value::from(bad)), U64),
                Err(format!(
                    "n must be an integer of at least 0; got {}",
                    Value::from(bad)
                )),
                "{bad:?}"
            );
        }
        assert_eq!(
            lower(r#"{"n":"-3"}"#, U64),
            Err(r#"n must be an integer of at least 0; got "-3""#.into())
        );
        assert_eq!(
            lower(r#"{"n":"18446744073709551616"}"#, U64),
            Err(r#"n must be an integer of at most 18446744073709551615; got "18446744073709551616""#.into())
        );
    }

    #[test]
    fn literals_beyond_64_bits_are_shown_as_written() {
        assert_eq!(
            lower(r#"{"n":18446744073709551616}"#, U64),
            Err(
                "n must be an integer of at most 18446744073709551615; got 18446744073709551616"
                    .into()
            )
        );
        let digits = "123456789".repeat(5);
        assert_eq!(
            lower(&format!(r#"{{"n":{digits}}}"#), U64),
            Err(format!(
                "n must be an integer of at most 18446744073709551615; got {digits}"
            ))
        );
        assert_eq!(
            lower(r#"{"n":-99999999999999999999}"#, U64),
            Err("n must be an integer of at least 0; got -99999999999999999999".into())
        );
        // A float stays a float, whatever its value.
        assert_eq!(
            lower(r#"{"n":1.5e30}"#, U64),
            Err("n must be an integer of at least 0; got 1.5e+30".into())
        );
    }

    #[test]
    fn saturating_fields_take_their_maximum() {
        let sat = Bounds {
            min: 1,
            max: u64::MAX as i128,
            saturate: true,
        };
        assert_eq!(
            lower(r#"{"n":18446744073709551616}"#, sat),
            Ok(u64::MAX.into())
        );
        assert_eq!(
            lower(&format!(r#"{{"n":"{}"}}"#, "9".repeat(60)), sat),
            Ok(u64::MAX.into())
        );
        assert_eq!(lower(r#"{"n":7}"#, sat), Ok(7));
        assert_eq!(
            lower(r#"{"n":0}"#, sat),
            Err("n must be an integer of at least 1; got 0".into())
        );
        assert_eq!(
            lower(r#"{"n":-18446744073709551617}"#, sat),
            Err("n must be an integer of at least 1; got -18446744073709551617".into())
        );
    }

    #[test]
    fn literals_are_found_by_their_argument_path() {
        let text = r#" { "a" : [ 1, {"b\u0022": 18446744073709551616 } ], "c": {"val": -9223372036854775809},"d":"18446744073709551616" } "#;
        let v: Value = serde_json::from_str(text).unwrap();
        let lits = Literals::of(text, &v);
        assert_eq!(
            lits.get("a[1].b\""),
            Written::Literal("18446744073709551616")
        );
        assert_eq!(lits.get("c.val"), Written::Literal("-9223372036854775809"));
        assert_eq!(lits.get("d"), Written::AsParsed);
        assert_eq!(lits.by_path.len(), 2);
        // Without the text, a float past 2^64 with no fraction is taken as too large.
        let v = serde_json::json!(1e20);
        assert_eq!(
            integer(&v, Literals::none().get("n"), "n", U64).map_err(|e| e.to_string()),
            Err("n must be an integer of at most 18446744073709551615; got 1e+20".into())
        );
    }
}
