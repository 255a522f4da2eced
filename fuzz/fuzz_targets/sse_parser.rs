//! Fuzz target: the SSE parser, fed the input in random chunks.
//!
//! The first byte picks the event size limit, the next two seed the chunking;
//! the rest is the stream. Invariants: never panics; chunking never changes the
//! items, the last event id, the retry time or whether an incomplete event was
//! dropped; every parsed event can be written and parses back identical.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_protocol::codec::{SseError, SseItem, SseParser};

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

type Outcome = (Vec<Result<SseItem, SseError>>, String, Option<u64>, bool);

fn parse(chunks: &[&[u8]], max: usize) -> Outcome {
    let mut parser = SseParser::with_max_event_len(max).with_comments(true);
    let mut items = Vec::new();
    for chunk in chunks {
        items.extend(parser.feed(chunk));
    }
    let dropped = parser.finish();
    items.extend(std::iter::from_fn(|| parser.next_item()));
    (
        items,
        parser.last_event_id().to_owned(),
        parser.retry(),
        dropped,
    )
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let max = match input[0] {
        0..=199 => usize::from(input[0] % 64),
        _ => 16 * 1024 * 1024,
    };
    let seed = u16::from_le_bytes([input[1], input[2]]);
    let data = &input[3..];

    let whole = parse(&[data], max);
    let split = parse(&chunks(data, seed), max);
    assert_eq!(whole, split, "chunking changed the result");

    for item in &whole.0 {
        let Ok(SseItem::Event(event)) = item else {
            continue;
        };
        assert!(!event.event.is_empty());
        let bytes = event.encode().expect("a parsed event can be written");
        let mut parser = SseParser::new();
        let back: Vec<_> = parser.feed(&bytes).collect();
        assert_eq!(back, vec![Ok(SseItem::Event(event.clone()))]);
    }
});
