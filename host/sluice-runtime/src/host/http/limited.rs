//! The body of a response as the guest reads it: counted into the call's log, and failed
//! past the policy's `http_max_response_bytes` (step 4 of [`crate::host::http`]), for a
//! connection's response and a recording's alike.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use wasmtime_wasi_http::Error;

use crate::host::http::{HttpLog, record};

/// A response body (`incoming`: a connection's, or a recording's) that counts its bytes
/// into the call's log and fails past `limit`.
pub(super) struct LimitedBody<B> {
    incoming: B,
    seen: u64,
    limit: u64,
    log: Arc<Mutex<HttpLog>>,
    index: usize,
}

impl<B> LimitedBody<B> {
    /// `incoming`, counted as the body of request `index` of `log`, failing past `limit`
    /// bytes.
    pub(super) fn new(incoming: B, limit: u64, log: Arc<Mutex<HttpLog>>, index: usize) -> Self {
        LimitedBody {
            incoming,
            seen: 0,
            limit,
            log,
            index,
        }
    }
}

impl<B> Body for LimitedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Error>,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                this.seen += len;
                let (seen, limit) = (this.seen, this.limit);
                record(&this.log, this.index, |l, i| {
                    l.requests[i].bytes = seen;
                    if seen > limit {
                        let r = &mut l.requests[i];
                        let message = format!(
                            "the response to the tool's {} request to {} is larger than {limit} bytes, the most one response may have (policy key http_max_response_bytes); it was cut there",
                            r.method, r.authority
                        );
                        r.error = Some(format!("body over {limit} bytes"));
                        l.refuse(message, "resource-limit");
                    }
                });
                if seen > limit {
                    return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(limit)))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.incoming.size_hint()
    }
}
