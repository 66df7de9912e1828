//! Where requests go: an Anthropic `base_url` with or without `/v1` (the Anthropic SDKs and
//! Claude Code take `ANTHROPIC_BASE_URL` without it) and with trailing slashes reaches
//! `/v1/messages`; a 404 from any provider names the URL tried, without credentials.

use sluice_models::provider::Provider;

use crate::{CODECS, backend, config, prompt};
use sluice_test_support::fake_provider::{Fake, Turn};

#[tokio::test]
async fn an_anthropic_base_url_with_or_without_v1_reaches_v1_messages() {
    for stream in [false, true] {
        let fake = Fake::start(vec![Turn::text("one"); 5]).await;
        let host = fake.base_url().trim_end_matches("/v1").to_string();
        let bases = [
            host.clone(),
            format!("{host}/"),
            format!("{host}/v1"),
            format!("{host}/v1/"),
            format!("{host}/v1//"),
        ];
        for base in &bases {
            let mut c = config(Provider::Anthropic, &fake, stream);
            c.base_url = Some(base.clone());
            let reply = backend(c).complete(&prompt("hi")).await.unwrap();
            assert_eq!(reply.content, "one", "{base} stream={stream}");
        }
        let paths: Vec<String> = fake.requests().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, vec!["/v1/messages"; bases.len()], "stream={stream}");
    }
}

#[tokio::test]
async fn a_404_names_the_url_that_was_tried_without_credentials() {
    for (provider, stream) in CODECS {
        let fake = Fake::start(vec![Turn::error(404, r#"{"detail":"Not Found"}"#)]).await;
        let host = fake.base_url().trim_end_matches("/v1").to_string();
        let mut c = config(provider, &fake, stream);
        // Credentials in the URL are sent, never shown.
        c.base_url = Some(format!(
            "{}/v1",
            host.replace("http://", "http://user:s3cret@")
        ));
        let e = backend(c).complete(&prompt("hi")).await.unwrap_err();
        let path = match provider {
            Provider::Anthropic => "/v1/messages",
            _ => "/v1/chat/completions",
        };
        assert_eq!(e.status, Some(404), "{provider:?}");
        assert_eq!(
            e.message,
            format!(
                r#"{{"detail":"Not Found"}} (HTTP 404 from POST {host}{path}: the server has no such endpoint or model there; check model.base_url and model.name)"#
            ),
            "{provider:?} stream={stream}"
        );
        assert!(!e.message.contains("s3cret"), "{}", e.message);
        assert_eq!(fake.requests().len(), 1, "a 404 is not retried");
    }
}
