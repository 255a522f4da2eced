//! Fuzz target: the JSON-RPC envelope (`decode_frame`, both batching modes).
//!
//! Invariants: never panics; a single message and an array are told apart the
//! same way whatever the batching mode; every decoded message re-encodes to JSON
//! that decodes to an equal message, and re-encoding that gives the same bytes;
//! its stdio line has exactly one newline, at the end; every error becomes an
//! error response that itself decodes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_protocol::codec::encode_line;
use switchboard_protocol::jsonrpc::{code, decode_frame, Batching, DecodeError, Frame, Message};

fn check_message(msg: &Message) {
    let bytes = msg.encode();
    let back = Message::decode(&bytes).expect("a re-encoded message decodes");
    assert_eq!(&back, msg, "decode(encode(m)) == m");
    assert_eq!(back.encode(), bytes, "encoding is stable");
    let line = encode_line(msg);
    assert_eq!(line.last(), Some(&b'\n'));
    assert!(!line[..line.len() - 1].contains(&b'\n'));
    assert_eq!(&Message::decode(&line).expect("a line decodes"), msg);
}

fn check_error(e: &DecodeError) {
    assert!(e.code() == code::PARSE_ERROR || e.code() == code::INVALID_REQUEST);
    let answer = Message::Error(e.to_response());
    check_message(&answer);
}

fuzz_target!(|data: &[u8]| {
    let allowed = decode_frame(data, Batching::Allowed);
    let refused = decode_frame(data, Batching::Refused);
    let is_array = data
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(&b'[');
    if !is_array {
        assert_eq!(allowed, refused, "batching only matters for arrays");
    }
    for result in [&allowed, &refused] {
        match result {
            Ok(Frame::Single(msg)) => check_message(msg),
            Ok(Frame::Batch(items)) => {
                assert!(!items.is_empty(), "an empty batch is an error");
                for item in items {
                    match item {
                        Ok(msg) => check_message(msg),
                        Err(e) => check_error(e),
                    }
                }
            }
            Err(e) => check_error(e),
        }
    }
    assert!(
        !matches!(refused, Ok(Frame::Batch(_))),
        "no batch under Batching::Refused"
    );
});
