//! Fuzz target: the stdio line decoder, fed the input in random chunks.
//!
//! The first byte picks the line limit, the next two seed the chunking; the rest
//! is the stream. Invariants: never panics; the items equal those of a simple
//! reference splitter over the whole input; the buffered bytes never exceed the
//! limit plus one; the frame decoder yields one item per line and never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_protocol::codec::{FrameDecoder, LineDecoder, LineError, PEEK_BYTES};
use switchboard_protocol::jsonrpc::{peek, peek_tail, Batching};

/// Cuts `data` into chunks of 0 to 31 bytes, driven by `seed`.
fn chunks(data: &[u8], seed: u16) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 1;
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (state % 32) as usize;
        let (head, tail) = rest.split_at(n.min(rest.len()));
        out.push(head);
        rest = tail;
    }
    out
}

/// The rules, applied to the whole input at once.
fn reference(data: &[u8], max: usize) -> Vec<Result<String, LineError>> {
    let mut out = Vec::new();
    let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let last = parts.pop().unwrap_or(&[]);
    // `raw`: the line as received (a `\r` before its `\n` included), whose ends a
    // line too long is peeked at; `line`: without that `\r`.
    let mut push = |raw: &[u8], line: &[u8]| {
        if line.len() > max {
            let mut peeked = peek(&raw[..raw.len().min(PEEK_BYTES)]);
            if peeked.id.is_none() {
                peeked.id = peek_tail(&raw[raw.len().saturating_sub(PEEK_BYTES)..]);
            }
            out.push(Err(LineError::LineTooLong {
                limit: max,
                len: line.len(),
                peeked,
            }));
        } else if !line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            out.push(
                String::from_utf8(line.to_vec()).map_err(|e| LineError::InvalidUtf8 {
                    valid_up_to: e.utf8_error().valid_up_to(),
                }),
            );
        }
    };
    for part in parts {
        push(part, part.strip_suffix(b"\r").unwrap_or(part));
    }
    // End of input: an unterminated last line counts, with its `\r` if any.
    push(last, last);
    out
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let max = match input[0] {
        0..=199 => usize::from(input[0] % 48),
        _ => 16 * 1024 * 1024,
    };
    let seed = u16::from_le_bytes([input[1], input[2]]);
    let data = &input[3..];

    let mut dec = LineDecoder::with_max_line_len(max);
    let mut got = Vec::new();
    for chunk in chunks(data, seed) {
        got.extend(dec.feed(chunk));
        assert!(dec.buffered_len() <= max + 1);
    }
    got.extend(dec.finish());
    assert_eq!(got, reference(data, max));
    for line in got.iter().flatten() {
        assert!(!line.contains('\n'));
    }

    let mut frames = FrameDecoder::with_max_line_len(Batching::Allowed, max);
    let mut n = 0;
    for chunk in chunks(data, seed.rotate_left(7)) {
        n += frames.feed(chunk).count();
    }
    n += frames.finish().count();
    assert_eq!(n, got.len());
});
