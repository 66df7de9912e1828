//! AWS event-stream frames, encoded here (the decoder under test is `aws-smithy-eventstream`'s):
//! what Bedrock's `ConverseStream` sends, for [`crate::fake_bedrock`].

use serde_json::{Value, json};

/// One event-stream message: the prelude (total and header lengths) and its CRC, string
/// headers (type 7), the payload and the message CRC.
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(u8::try_from(name.len()).unwrap());
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&u16::try_from(value.len()).unwrap().to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = u32::try_from(16 + head.len() + payload.len()).unwrap();
    let mut out = Vec::new();
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&u32::try_from(head.len()).unwrap().to_be_bytes());
    let prelude_crc = crc32(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let message_crc = crc32(&out);
    out.extend_from_slice(&message_crc.to_be_bytes());
    out
}

/// CRC-32 (IEEE), written out here so the tests do not share the decoder's crate.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// An `event` message of type `kind` with a JSON payload.
pub fn event(kind: &str, payload: Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An `exception` message of type `kind` whose payload is `{"message": message}`.
pub fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

/// `frames` concatenated and cut into pieces of `size` bytes (so frames straddle chunks).
pub fn pieces(frames: &[Vec<u8>], size: usize) -> Vec<Vec<u8>> {
    frames.concat().chunks(size).map(<[u8]>::to_vec).collect()
}
