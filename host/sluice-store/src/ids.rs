//! Fresh ids for sessions and runs.

/// No id could be made: the OS gave no random bytes.
#[derive(Debug, thiserror::Error)]
#[error("cannot read random bytes for an id: {0}")]
pub(crate) struct IdError(#[source] getrandom::Error);

/// A fresh id: `prefix`, `-` and 12 characters of lowercase Crockford base32 (digits and
/// letters without i, l, o, u), 60 random bits from the OS.
pub(crate) fn new_id(prefix: char) -> Result<String, IdError> {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(IdError)?;
    let mut bits = u64::from_le_bytes(bytes);
    let mut id = String::with_capacity(14);
    id.push(prefix);
    id.push('-');
    for _ in 0..12 {
        id.push(char::from(ALPHABET[(bits & 31) as usize]));
        bits >>= 5;
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_url_safe_and_distinct() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..10_000 {
            let id = new_id('s').unwrap();
            assert_eq!(id.len(), 14);
            assert!(id.starts_with("s-"));
            assert!(
                id[2..]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
                "{id}"
            );
            assert!(seen.insert(id));
        }
        assert!(new_id('r').unwrap().starts_with("r-"));
    }
}
