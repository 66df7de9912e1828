//! The secrets a policy grants a component: where each comes from ([`SecretSource`]), how
//! it is read when the component loads (`read`), and the scan that withholds every secret
//! value of a component from its observations (docs/observations.md#secrets-are-withheld).
//! The secrets of its `http_credentials` are read the same way, into no store: only the
//! host's `wasi:http` hooks hold them ([`crate::host::http`]), and the scan withholds them as
//! well. The `wasi:config/store` they go in is the host's (`host::config_store`).

pub use sluice_grants::SecretSource;

/// The `wasi:config` release the host provides (wasmtime-wasi-config 48).
pub const WASI_CONFIG_VERSION: &str = "0.2.0-rc.1";

/// The shortest secret, in bytes. A shorter one refuses its component at load: replacing
/// every occurrence of a 1-byte secret in an observation would mangle it, and leaving short
/// secrets unscanned would let them leak (docs/configuration.md#config-and-secrets).
pub const MIN_SECRET_BYTES: usize = 8;

/// The marker that replaces each occurrence of the secret of config key `key` in an
/// observation: `[secret withheld: KEY]`.
pub fn withheld_marker(key: &str) -> String {
    format!("[secret withheld: {key}]")
}

/// A secret value. It has no `Display`, and its `Debug` prints `Secret(***)`, so that it
/// cannot reach a log line or an error message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value itself, for the config store and the scan only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The secrets of one component, longest first (so that a secret holding another is
/// withheld whole), shared by its calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets(Vec<(String, Secret)>);

impl Secrets {
    /// The secrets `(config key, value)`.
    pub fn new(mut secrets: Vec<(String, Secret)>) -> Secrets {
        secrets.sort_by(|a, b| {
            b.1.expose()
                .len()
                .cmp(&a.1.expose().len())
                .then(a.0.cmp(&b.0))
        });
        Secrets(secrets)
    }

    /// Every secret of every set in `sets`, once (a set shared by several tools counts
    /// once), longest first.
    pub fn union<'a>(sets: impl IntoIterator<Item = &'a Secrets>) -> Secrets {
        let mut all: Vec<(String, Secret)> = Vec::new();
        for (key, secret) in sets.into_iter().flat_map(|s| s.0.iter()) {
            if !all
                .iter()
                .any(|(k, s)| k == key && s.expose() == secret.expose())
            {
                all.push((key.clone(), secret.clone()));
            }
        }
        Secrets::new(all)
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The secrets `(config key, value)`, longest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(String, Secret)> {
        self.0.iter()
    }

    /// `text` with every occurrence of every secret replaced by [`withheld_marker`], and the
    /// keys withheld (in the order scanned; empty when none occurred). Each secret is looked
    /// for as it is and as it appears inside a JSON string (escaped), since observations are
    /// JSON. For text that is still whole (an observation is withheld before the cap cuts
    /// it); for text that was already cut, [`Secrets::withhold_cut`].
    pub fn withhold(&self, text: &str) -> (String, Vec<String>) {
        self.withhold_cut(text, Cut::default())
    }

    /// [`Secrets::withhold`] for `text` that was cut where `cut` says (a buffer that kept
    /// only the last or the first bytes written): besides every whole occurrence, the
    /// longest part of a secret that the cut left at the text's start (an end of a secret,
    /// 1 byte or more) or at its end (a beginning of a secret) is replaced by the same
    /// marker. A single byte is withheld too, so text that merely ends like a secret's
    /// beginning loses those bytes: no cut can leave a part of a secret to read.
    pub fn withhold_cut(&self, text: &str, cut: Cut) -> (String, Vec<String>) {
        let mut out = text.to_string();
        let mut keys = Vec::new();
        let note = |key: &String, keys: &mut Vec<String>| {
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        };
        for (key, secret) in &self.0 {
            for form in forms(secret) {
                if out.contains(form.as_str()) {
                    out = out.replace(form.as_str(), &withheld_marker(key));
                    note(key, &mut keys);
                }
            }
        }
        for at_start in [true, false] {
            if (at_start && !cut.start) || (!at_start && !cut.end) {
                continue;
            }
            if let Some((len, key)) = self.longest_part(&out, at_start) {
                let range = if at_start {
                    0..len
                } else {
                    out.len() - len..out.len()
                };
                out.replace_range(range, &withheld_marker(key));
                note(key, &mut keys);
            }
        }
        (out, keys)
    }

    /// The longest proper part of a secret (in either form) that `text` starts with (an
    /// end of the secret, when `at_start`) or ends with (a beginning of it), on a
    /// character boundary: (its length in bytes, the secret's key).
    fn longest_part(&self, text: &str, at_start: bool) -> Option<(usize, &String)> {
        let mut best: Option<(usize, &String)> = None;
        let t = text.as_bytes();
        for (key, secret) in &self.0 {
            for form in forms(secret) {
                let f = form.as_bytes();
                let longest = (f.len() - 1).min(t.len());
                let shortest = best.map_or(1, |(n, _)| n + 1);
                for len in (shortest..=longest).rev() {
                    let found = if at_start {
                        t.starts_with(&f[f.len() - len..]) && text.is_char_boundary(len)
                    } else {
                        t.ends_with(&f[..len]) && text.is_char_boundary(t.len() - len)
                    };
                    if found {
                        best = Some((len, key));
                        break;
                    }
                }
            }
        }
        best
    }
}

/// Where a text given to [`Secrets::withhold_cut`] was cut: at its start (older bytes were
/// dropped), at its end (later bytes were), both, or neither (the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cut {
    /// Bytes before the text were dropped.
    pub start: bool,
    /// Bytes after the text were dropped.
    pub end: bool,
}

/// The forms a secret is looked for in: as it appears inside a JSON string (escaped), and
/// as it is, when that differs.
pub(crate) fn forms(secret: &Secret) -> Vec<String> {
    let raw = secret.expose();
    let quoted = serde_json::Value::from(raw).to_string();
    let escaped = quoted[1..quoted.len() - 1].to_string();
    if escaped == raw {
        vec![escaped]
    } else {
        vec![escaped, raw.to_string()]
    }
}

/// Why a component's config could not be resolved (its component is unavailable).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("its secret {key:?} cannot be read from {from}: {reason}")]
pub struct SecretError {
    /// The config key.
    pub key: String,
    /// Where it was to come from.
    pub from: SecretSource,
    /// What went wrong (never the value).
    pub reason: String,
}

/// The secret of config key `key` (a label, for a credential) from `source`: at least
/// [`MIN_SECRET_BYTES`].
///
/// # Errors
/// [`SecretError`] as [`resolve`] says.
pub(crate) fn read(
    key: &str,
    source: &SecretSource,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Secret, SecretError> {
    let fail = |reason: String| SecretError {
        key: key.to_string(),
        from: source.clone(),
        reason,
    };
    let value = source.read(env).map_err(|e| fail(e.to_string()))?;
    if value.len() < MIN_SECRET_BYTES {
        return Err(fail(format!(
            "it is {} bytes; a secret must be at least {MIN_SECRET_BYTES} bytes so that it can be withheld from observations (put a shorter value that is not secret in `config`)",
            value.len()
        )));
    }
    Ok(Secret::new(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(pairs: &[(&str, &str)]) -> Secrets {
        Secrets::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Secret::new(v.to_string())))
                .collect(),
        )
    }

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::new("hunter2hunter2".into());
        assert_eq!(format!("{s:?}"), "Secret(***)");
        let all = secrets(&[("token", "hunter2hunter2")]);
        assert_eq!(format!("{all:?}"), r#"Secrets([("token", Secret(***))])"#);
    }

    #[test]
    fn withholds_every_occurrence_raw_and_escaped() {
        let all = secrets(&[("token", "s3cr3t-t0ken"), ("quoted", "a\"b\\c-long")]);
        let (text, keys) =
            all.withhold(r#"{"a":"s3cr3t-t0ken and s3cr3t-t0ken","b":"a\"b\\c-long"}"#);
        assert_eq!(
            text,
            r#"{"a":"[secret withheld: token] and [secret withheld: token]","b":"[secret withheld: quoted]"}"#
        );
        assert_eq!(keys, vec!["token".to_string(), "quoted".to_string()]);
        let (text, keys) = all.withhold("nothing here");
        assert_eq!(text, "nothing here");
        assert!(keys.is_empty());
    }

    #[test]
    fn a_part_of_a_secret_at_a_cut_is_withheld() {
        let all = secrets(&[("token", "QXZ-0123456789"), ("other", "abcdefgh-ij")]);
        // Text that kept the last bytes: it starts with the secret's last 5 bytes.
        let start = Cut {
            start: true,
            end: false,
        };
        assert_eq!(
            all.withhold_cut("56789\ntrap", start),
            (
                "[secret withheld: token]\ntrap".to_string(),
                vec!["token".to_string()]
            )
        );
        // One byte is enough, and the longest part of any secret wins.
        assert_eq!(
            all.withhold_cut("9 then QXZ-0123456789", start),
            (
                "[secret withheld: token] then [secret withheld: token]".to_string(),
                vec!["token".to_string()]
            )
        );
        assert_eq!(
            all.withhold_cut("h-ij.", start),
            (
                "[secret withheld: other].".to_string(),
                vec!["other".to_string()]
            )
        );
        // Text that kept the first bytes: it ends with the secret's first 4 bytes.
        let end = Cut {
            start: false,
            end: true,
        };
        assert_eq!(
            all.withhold_cut("log: QXZ-", end),
            (
                "log: [secret withheld: token]".to_string(),
                vec!["token".to_string()]
            )
        );
        // Where the text was not cut, a part is left alone (it is no secret).
        assert_eq!(
            all.withhold("56789 QXZ-"),
            ("56789 QXZ-".to_string(), Vec::<String>::new())
        );
        assert_eq!(
            all.withhold_cut(
                "nothing",
                Cut {
                    start: true,
                    end: true
                }
            ),
            ("nothing".to_string(), Vec::<String>::new())
        );
    }

    #[test]
    fn a_secret_holding_another_is_withheld_whole() {
        let all = secrets(&[("short", "abcdefgh"), ("long", "abcdefgh-ijklmnop")]);
        let (text, keys) = all.withhold("x abcdefgh-ijklmnop y abcdefgh");
        assert_eq!(text, "x [secret withheld: long] y [secret withheld: short]");
        assert_eq!(keys, vec!["long".to_string(), "short".to_string()]);
    }
}
