//! The guest's stderr as the host keeps it for a failed call's message: the LAST
//! [`STDERR_BYTES`] bytes written (the failure shows the end of stderr), never refusing a
//! write. Where older bytes were dropped the buffer's start is a cut, and the secret scan
//! withholds a part of a secret found there ([`Secrets::withhold_cut`](crate::secrets::Secrets::withhold_cut)).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// Bytes of a guest's stderr kept for error messages: the last 64 KiB.
pub(crate) const STDERR_BYTES: usize = 64 * 1024;

/// A call's stderr: the last `capacity` bytes written. Clones share the buffer.
#[derive(Clone, Debug)]
pub(crate) struct StderrTail {
    inner: Arc<Mutex<Tail>>,
}

#[derive(Debug)]
struct Tail {
    capacity: usize,
    bytes: VecDeque<u8>,
    /// True once older bytes were dropped.
    cut: bool,
}

impl StderrTail {
    /// An empty stderr that keeps the last `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Self {
        StderrTail {
            inner: Arc::new(Mutex::new(Tail {
                capacity,
                bytes: VecDeque::new(),
                cut: false,
            })),
        }
    }

    fn push(&self, data: &[u8]) {
        let mut tail = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let capacity = tail.capacity;
        let data = if data.len() > capacity {
            tail.cut = true;
            &data[data.len() - capacity..]
        } else {
            data
        };
        let over = (tail.bytes.len() + data.len()).saturating_sub(capacity);
        if over > 0 {
            tail.cut = true;
            tail.bytes.drain(..over);
        }
        tail.bytes.extend(data);
    }

    /// The bytes kept, and whether older bytes were dropped before them. When they were,
    /// the bytes start at a character boundary (UTF-8 continuation bytes at the cut are
    /// dropped too).
    pub(crate) fn contents(&self) -> (Vec<u8>, bool) {
        let tail = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut bytes: Vec<u8> = tail.bytes.iter().copied().collect();
        if tail.cut {
            let continuation = bytes
                .iter()
                .take(3)
                .take_while(|b| (0x80..0xc0).contains(*b))
                .count();
            bytes.drain(..continuation);
        }
        (bytes, tail.cut)
    }
}

impl IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrTail {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for StderrTail {
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl OutputStream for StderrTail {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(STDERR_BYTES)
    }
}

impl tokio::io::AsyncWrite for StderrTail {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_and_says_where_it_was_cut() {
        let tail = StderrTail::new(8);
        tail.push(b"abc");
        assert_eq!(tail.contents(), (b"abc".to_vec(), false));
        tail.push(b"defgh");
        assert_eq!(tail.contents(), (b"abcdefgh".to_vec(), false));
        tail.push(b"ij");
        assert_eq!(tail.contents(), (b"cdefghij".to_vec(), true));
        tail.push(b"0123456789");
        assert_eq!(tail.contents(), (b"23456789".to_vec(), true));
    }

    #[test]
    fn a_cut_inside_a_character_drops_its_rest() {
        let tail = StderrTail::new(5);
        // `é` is 0xc3 0xa9: the cut keeps 0xa9, which is dropped.
        tail.push("xxé1234".as_bytes());
        assert_eq!(tail.contents(), (b"1234".to_vec(), true));
    }
}
