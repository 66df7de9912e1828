//! Store URLs as they may be shown: never with a password.

/// `url` with its password (in the user part, or a `password` query parameter) replaced by
/// `***`, for messages and logs. Text that is not a URL is not shown at all: it may be a
/// connection string holding a password.
///
/// ```
/// assert_eq!(
///     sluice_store::redact_url("postgres://sluice:s3cret@db:5432/sluice?password=again&application_name=x"),
///     "postgres://sluice:***@db:5432/sluice?password=***&application_name=x"
/// );
/// assert_eq!(sluice_store::redact_url("host=db password=s3cret"), "(a store URL that is not a URL; not shown)");
/// ```
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = ::url::Url::parse(url) else {
        return "(a store URL that is not a URL; not shown)".to_owned();
    };
    if parsed.password().is_some() && parsed.set_password(Some("***")).is_err() {
        return "(a store URL that cannot be shown without its password)".to_owned();
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if k.eq_ignore_ascii_case("password") {
                    "***".to_owned()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        let query: Vec<String> = pairs
            .iter()
            .map(|(k, v)| {
                if v == "***" {
                    format!("{k}=***")
                } else {
                    ::url::form_urlencoded::Serializer::new(String::new())
                        .append_pair(k, v)
                        .finish()
                }
            })
            .collect();
        parsed.set_query(Some(&query.join("&")));
    }
    parsed.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_never_shown() {
        for (url, shown) in [
            (
                "postgres://u:p%40ss@127.0.0.1:5432/db",
                "postgres://u:***@127.0.0.1:5432/db",
            ),
            ("postgresql://u@h/db", "postgresql://u@h/db"),
            ("postgres://h/db?password=x", "postgres://h/db?password=***"),
            (
                "postgres://h/db?PASSWORD=x&a=b",
                "postgres://h/db?PASSWORD=***&a=b",
            ),
        ] {
            assert_eq!(redact_url(url), shown);
        }
        assert!(!redact_url("user=u password=secret").contains("secret"));
    }
}
