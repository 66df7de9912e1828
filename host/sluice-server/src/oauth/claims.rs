//! The claims this server reads of an access token, as a JWT carries them or an
//! introspection answer (RFC 7662) states them: both the verifier and the introspector
//! read them, so they live below both.

use serde::Deserialize;

/// The claims this server reads, of a JWT or an introspection answer.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Claims {
    pub(super) iss: Option<String>,
    pub(super) sub: Option<String>,
    pub(super) aud: Option<OneOrMany>,
    pub(super) exp: Option<f64>,
    pub(super) nbf: Option<f64>,
    pub(super) scope: Option<OneOrMany>,
    pub(super) scp: Option<OneOrMany>,
    pub(super) client_id: Option<String>,
    pub(super) azp: Option<String>,
}

/// A string or a list of strings (`aud`; `scope` and `scp` as issuers write them).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    /// Each value; a single string is split at whitespace when `split`.
    pub(super) fn values(self, split: bool) -> Vec<String> {
        match self {
            OneOrMany::One(s) if split => s.split_whitespace().map(str::to_string).collect(),
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}
