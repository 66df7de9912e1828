//! A small parser for server-sent events (the `text/event-stream` format OpenAI and Anthropic
//! stream replies in), fed with the bytes of the body as they arrive.
//!
//! It follows the WHATWG rules that matter here:
//!
//! - a line ends with `\n`, `\r\n` or `\r` (also when the `\r` and the `\n` arrive in two
//!   chunks); a UTF-8 sequence split across chunks is reassembled before it is decoded;
//! - a line starting with `:` is a comment (keep-alives such as OpenRouter's
//!   `: OPENROUTER PROCESSING`) and is ignored;
//! - `field: value` lines set `event` or append to `data` (one space after the colon is
//!   dropped; several `data` lines are joined with `\n`); `id`, `retry` and unknown fields are
//!   ignored; a line without a colon is a field with an empty value;
//! - a blank line dispatches the event, if it has data (an event with only an `event:` line is
//!   dropped, as the standard says).
//!
//! One leniency: [`SseParser::finish`] dispatches an event whose blank line never came (the
//! body ended right after its last `data:` line), since a reply is better than an error.
//! A line longer than [`MAX_LINE_BYTES`] is an error (a broken or hostile server), not
//! unbounded memory.

/// The longest line accepted, in bytes (16 MiB: well above any real event).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, if the event had one (Anthropic names every event; OpenAI Chat
    /// sends unnamed `data:` lines).
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The incremental parser: [`push`](SseParser::push) bytes, collect the events.
#[derive(Debug, Default)]
pub struct SseParser {
    /// The bytes of the line being read.
    line: Vec<u8>,
    /// The last byte pushed was a `\r` that ended a line: a `\n` right after it belongs to
    /// the same line end.
    after_cr: bool,
    /// The event being built.
    event: Option<String>,
    data: String,
    has_data: bool,
}

/// The stream broke the format (a line over [`MAX_LINE_BYTES`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("an event-stream line is longer than {MAX_LINE_BYTES} bytes")]
pub struct LineTooLong;

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds the next bytes of the body; returns the events they complete, in order.
    ///
    /// # Errors
    /// [`LineTooLong`] when a line grows past [`MAX_LINE_BYTES`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, LineTooLong> {
        let mut events = Vec::new();
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..end]);
            self.check_len()?;
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.take_line(&line) {
                events.push(event);
            }
            let was_cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if was_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
        self.check_len()?;
        Ok(events)
    }

    /// Ends the stream: the event still being built, if it has data (see the module docs).
    pub fn finish(mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty()
            && let Some(event) = self.take_line(&line)
        {
            return Some(event);
        }
        self.dispatch()
    }

    fn check_len(&self) -> Result<(), LineTooLong> {
        if self.line.len() > MAX_LINE_BYTES {
            Err(LineTooLong)
        } else {
            Ok(())
        }
    }

    /// Handles one complete line; a blank line dispatches.
    fn take_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(b":") {
            return None;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event: event.filter(|e| !e.is_empty()),
            data: std::mem::take(&mut self.data),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    /// Every event of `text`, fed in one piece.
    fn parse(text: &str) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut events = p.push(text.as_bytes()).unwrap();
        events.extend(p.finish());
        events
    }

    /// Every event of `bytes`, fed in pieces of `n` bytes.
    fn parse_in_pieces(bytes: &[u8], n: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut events = Vec::new();
        for piece in bytes.chunks(n) {
            events.extend(p.push(piece).unwrap());
        }
        events.extend(p.finish());
        events
    }

    #[test]
    fn openai_style_data_lines_and_done() {
        let text = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
        assert_eq!(
            parse(text),
            [
                ev(None, r#"{"a":1}"#),
                ev(None, r#"{"b":2}"#),
                ev(None, "[DONE]")
            ]
        );
    }

    #[test]
    fn named_events_comments_and_other_fields() {
        let text = ": keep-alive\nevent: ping\ndata: {\"type\": \"ping\"}\nid: 7\nretry: 100\n\n:OPENROUTER PROCESSING\n\nevent: message_stop\ndata:{}\n\n";
        assert_eq!(
            parse(text),
            [
                ev(Some("ping"), r#"{"type": "ping"}"#),
                ev(Some("message_stop"), "{}")
            ]
        );
    }

    #[test]
    fn multi_line_data_and_only_one_space_dropped() {
        assert_eq!(
            parse("data: one\ndata:  two\ndata\n\n"),
            [ev(None, "one\n two\n")]
        );
    }

    #[test]
    fn an_event_without_data_is_dropped_and_its_name_does_not_leak() {
        assert_eq!(parse("event: lonely\n\ndata: x\n\n"), [ev(None, "x")]);
    }

    #[test]
    fn every_line_ending_in_every_split() {
        let text = "event: a\r\ndata: 1\r\n\r\ndata: é✓\rdata: 2\r\rdata: 3\n\n";
        let expected = [ev(Some("a"), "1"), ev(None, "é✓\n2"), ev(None, "3")];
        assert_eq!(parse(text), expected);
        for n in 1..=text.len() {
            assert_eq!(
                parse_in_pieces(text.as_bytes(), n),
                expected,
                "pieces of {n}"
            );
        }
    }

    #[test]
    fn a_cr_at_the_end_of_a_chunk_then_a_lf() {
        let mut p = SseParser::new();
        assert_eq!(p.push(b"data: x\r").unwrap(), []);
        // The `\n` completes the `\r\n` of the data line, not a blank line.
        assert_eq!(p.push(b"\n").unwrap(), []);
        assert_eq!(p.push(b"\r\n").unwrap(), [ev(None, "x")]);
    }

    #[test]
    fn finish_dispatches_an_unterminated_event() {
        assert_eq!(parse("data: tail"), [ev(None, "tail")]);
        assert_eq!(parse("data: tail\n"), [ev(None, "tail")]);
        assert_eq!(parse(": only a comment"), []);
        assert_eq!(parse(""), []);
    }

    #[test]
    fn a_line_too_long_is_an_error() {
        let mut p = SseParser::new();
        let big = vec![b'x'; MAX_LINE_BYTES / 2 + 1];
        assert!(p.push(&big).is_ok());
        assert_eq!(p.push(&big), Err(LineTooLong));
    }
}
