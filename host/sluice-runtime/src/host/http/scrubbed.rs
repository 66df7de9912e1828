//! A response body as a guest holding `http_credentials` reads it: each credential's secret
//! replaced by its marker, also where it is split across chunks
//! ([`crate::host::http::credentials`]).
//!
//! Each chunk is joined to the bytes held back from the one before and scanned whole; then
//! the longest end of it that begins a secret (at most the longest secret's length less
//! one byte) is held back again, and the rest goes to the guest. At the body's end what is
//! held goes too (it is no whole secret); when the body fails, it is dropped with the
//! failure, so a secret cut off by a failed connection leaves no beginning to read.
//! Trailers are scrubbed as headers are, after the held bytes.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, WasiBody};

use crate::host::http::credentials::Credentials;

/// `inner` with the secrets of `credentials` withheld.
pub(crate) struct ScrubbedBody<B> {
    inner: B,
    credentials: Arc<Credentials>,
    /// The end of what was read that may begin a secret.
    held: Vec<u8>,
    /// Trailers that wait for `held` to go first.
    trailers: Option<HeaderMap>,
    /// `inner` has ended.
    done: bool,
    /// What to name in the event of the first secret withheld: `METHOD host:port`.
    request: String,
    noted: bool,
}

impl<B> ScrubbedBody<B> {
    /// `inner`, the body of the response to `request` (`METHOD host:port`), with the
    /// secrets of `credentials` withheld.
    pub(crate) fn new(inner: B, credentials: Arc<Credentials>, request: String) -> Self {
        ScrubbedBody {
            inner,
            credentials,
            held: Vec::new(),
            trailers: None,
            done: false,
            request,
            noted: false,
        }
    }

    /// Logs, once per body, that a secret was withheld from it.
    fn note(&mut self) {
        if !self.noted {
            self.noted = true;
            tracing::warn!(
                request = %self.request,
                "a response held a credential's secret; withheld before the tool read it"
            );
        }
    }
}

impl<B> Body for ScrubbedBody<B>
where
    B: Body<Data = Bytes, Error = Error> + Unpin,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        loop {
            if this.done || this.trailers.is_some() {
                if !this.held.is_empty() {
                    let rest = std::mem::take(&mut this.held);
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
                }
                if let Some(trailers) = this.trailers.take() {
                    return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                }
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.done = true,
                Poll::Ready(Some(Err(e))) => {
                    this.held.clear();
                    this.done = true;
                    return Poll::Ready(Some(Err(this.credentials.scrub_error(e))));
                }
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let patterns = this.credentials.patterns();
                        let mut joined = std::mem::take(&mut this.held);
                        joined.extend_from_slice(&data);
                        let (mut out, n) = patterns.replace(&joined);
                        if n > 0 {
                            this.note();
                        }
                        let keep = patterns.pending(&out);
                        this.held = out.split_off(out.len() - keep);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                        }
                    }
                    Err(frame) => {
                        if let Ok(mut trailers) = frame.into_trailers() {
                            if this.credentials.scrub_headers(&mut trailers) {
                                this.note();
                            }
                            this.trailers = Some(trailers);
                        }
                    }
                },
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_empty() && self.trailers.is_none() && (self.done || self.inner.is_end_stream())
    }
}

/// The response as the guest gets it: its body `limited` (counted against
/// `http_max_response_bytes`), and when the component holds credentials, their secrets
/// withheld from its headers and body (`content-length` dropped: withholding changes the
/// length). `request_line` (`METHOD host:port`) names it in the event of a withheld secret.
pub(super) fn deliver<B, L>(
    response: http::Response<B>,
    credentials: &Arc<Credentials>,
    request_line: String,
    limited: impl FnOnce(B) -> L,
) -> http::Response<WasiBody>
where
    L: Body<Data = Bytes, Error = Error> + Send + Unpin + 'static,
{
    let (mut parts, body) = response.into_parts();
    let body = limited(body);
    if credentials.is_empty() {
        return http::Response::from_parts(parts, body.boxed_unsync());
    }
    parts.headers.remove(http::header::CONTENT_LENGTH);
    if credentials.scrub_headers(&mut parts.headers) {
        tracing::warn!(
            request = %request_line,
            "a response's headers held a credential's secret; withheld before the tool read them"
        );
    }
    let body = ScrubbedBody::new(body, credentials.clone(), request_line);
    http::Response::from_parts(parts, body.boxed_unsync())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{HttpAllow, HttpCredential, HttpHost};
    use crate::secrets::{Secret, SecretSource};

    const SECRET: &str = "QXZ-credential-0123";
    const MARKER: &str = "[secret withheld: http_credentials.127.0.0.1:8080]";

    fn credentials() -> Arc<Credentials> {
        let list = [HttpCredential {
            entry: HttpAllow {
                host: HttpHost::Ip([127, 0, 0, 1].into()),
                port: Some(8080),
            },
            header: "authorization".into(),
            value: "Bearer {secret}".into(),
            secret: SecretSource::Env("T".into()),
        }];
        Arc::new(Credentials::resolve(&list, |_, _| Ok(Secret::new(SECRET.to_string()))).unwrap())
    }

    /// A body of these frames, one per poll.
    struct Frames(std::collections::VecDeque<Result<Frame<Bytes>, Error>>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
            Poll::Ready(self.0.pop_front())
        }
    }

    /// A body of these chunks (`Err` for a failure), read to its end through the scrub: the
    /// data frames' sizes, the bytes read, and the error if any.
    fn read(chunks: Vec<Result<&'static [u8], ()>>) -> (Vec<usize>, String, Option<Error>) {
        let frames = chunks
            .into_iter()
            .map(|f| match f {
                Ok(b) => Ok(Frame::data(Bytes::from_static(b))),
                Err(()) => Err(Error::InternalError(Some(format!("cut after {SECRET}")))),
            })
            .collect();
        let mut body =
            ScrubbedBody::new(Frames(frames), credentials(), "GET 127.0.0.1:8080".into());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let (mut sizes, mut bytes, mut error) = (Vec::new(), Vec::new(), None);
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(f) => {
                        let data = f.into_data().unwrap();
                        sizes.push(data.len());
                        bytes.extend_from_slice(&data);
                    }
                    Err(e) => error = Some(e),
                }
            }
            (sizes, String::from_utf8(bytes).unwrap(), error)
        })
    }

    #[test]
    fn a_secret_split_across_chunks_is_withheld() {
        let (_, text, error) = read(vec![
            Ok(b"{\"authorization\": \"Bearer QXZ-cr"),
            Ok(b"edential"),
            Ok(b"-0123\"}"),
        ]);
        assert_eq!(text, format!("{{\"authorization\": \"Bearer {MARKER}\"}}"));
        assert!(error.is_none());
        // One byte at a time.
        let bytes: &'static [u8] = b"x QXZ-credential-0123 y";
        let frames = (0..bytes.len()).map(|i| Ok(&bytes[i..=i])).collect();
        let (_, text, _) = read(frames);
        assert_eq!(text, format!("x {MARKER} y"));
    }

    #[test]
    fn a_beginning_is_held_back_only_while_it_may_be_a_secret() {
        // "QXZ-c" may begin the secret: held until the next chunk says it does not.
        let (sizes, text, _) = read(vec![Ok(b"abc QXZ-c"), Ok(b"at"), Ok(b" end QXZ")]);
        assert_eq!(text, "abc QXZ-cat end QXZ");
        assert_eq!(sizes, [4, 7, 5, 3]);
    }

    #[test]
    fn a_failure_drops_what_was_held_and_its_text_loses_the_secret() {
        let (_, text, error) = read(vec![Ok(b"echo: Bearer QXZ-credential-01"), Err(())]);
        assert_eq!(text, "echo: Bearer ");
        let error = error.unwrap();
        assert!(
            matches!(&error, Error::InternalError(Some(s)) if *s == format!("cut after {MARKER}")),
            "{error:?}"
        );
    }
}
