//! Newline-delimited JSON: the framing of the stdio transport.
//!
//! Source: every MCP revision, "Transports → stdio": messages are JSON-RPC
//! messages (2025-03-26: or batches) delimited by newlines, and MUST NOT contain
//! embedded newlines. This codec also accepts `\r\n`, skips blank lines, bounds the
//! size of a line, and keeps going after a bad line so that each bad line gets its
//! own answer (-32700/-32600) and the connection survives.
//!
//! [`LineDecoder`] yields the lines as text; [`FrameDecoder`] goes one step further
//! and classifies each line with [`decode_frame`]. [`encode_line`] is the reverse.
//!
//! This module knows only bytes and the JSON-RPC envelope; it must not know about
//! processes, pipes, or what a message means.

use std::collections::VecDeque;
use std::fmt;

use super::DEFAULT_MAX_FRAME_LEN;
use crate::jsonrpc::{
    code, decode_frame, encode_batch, peek, peek_tail, Batching, DecodeError, ErrorObject,
    ErrorResponse, Frame, Message, Peeked,
};

/// Why a line gave no message. Each error is about one line only: the decoder has
/// already moved on to the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// The line was longer than the decoder's limit. Its bytes were dropped as they
    /// came, never buffered.
    LineTooLong {
        /// The limit in bytes ([`LineDecoder::max_line_len`]).
        limit: usize,
        /// The length of the dropped line in bytes, without its `\n` or `\r\n`.
        len: usize,
        /// What its first and last [`PEEK_BYTES`] bytes showed (its `id`, and
        /// whether it was a request or an answer), so that the request it carried
        /// can be answered, or the request it answered failed, at once.
        peeked: Peeked,
    },
    /// The line was not valid UTF-8 (JSON text must be; RFC 8259 §8.1).
    InvalidUtf8 {
        /// The length of the valid UTF-8 prefix of the line, in bytes.
        valid_up_to: usize,
    },
    /// The line was text but not a valid JSON-RPC frame (only from
    /// [`FrameDecoder`]): malformed JSON (-32700) or a bad envelope (-32600).
    Decode(DecodeError),
}

impl LineError {
    /// The JSON-RPC error code to answer with: -32700 (parse error) for a line too
    /// long to read or not UTF-8, [`DecodeError::code`] for a decoding error.
    pub fn code(&self) -> i64 {
        match self {
            LineError::LineTooLong { .. } | LineError::InvalidUtf8 { .. } => code::PARSE_ERROR,
            LineError::Decode(e) => e.code(),
        }
    }

    /// Whether to answer at all: always, except for a broken notification
    /// ([`DecodeError::wants_response`]) and a line too long whose ends show an
    /// answer and its id ([`Peeked::answer_to`]: a response is never answered,
    /// JSON-RPC 2.0 §5; its request is failed instead). An answer whose id is not
    /// seen is answered with `id: null`, as any unreadable line.
    pub fn wants_response(&self) -> bool {
        match self {
            LineError::Decode(e) => e.wants_response(),
            LineError::LineTooLong { peeked, .. } => peeked.answer_to().is_none(),
            _ => true,
        }
    }

    /// The error response to send back. Its id is `null` unless a decoding error
    /// could read the request's id, or the ends of a line too long showed it
    /// ([`Peeked::request_id`]).
    pub fn to_response(&self) -> ErrorResponse {
        match self {
            LineError::Decode(e) => e.to_response(),
            LineError::LineTooLong { peeked, .. } => ErrorResponse::new(
                peeked.request_id().cloned(),
                ErrorObject::new(self.code(), self.to_string()),
            ),
            other => ErrorResponse::new(None, ErrorObject::new(other.code(), other.to_string())),
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::LineTooLong { limit, len, .. } => write!(
                f,
                "message of {len} bytes exceeds the limit of {limit} bytes; dropped"
            ),
            LineError::InvalidUtf8 { valid_up_to } => {
                write!(f, "message is not valid UTF-8 (at byte {valid_up_to})")
            }
            LineError::Decode(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LineError {}

impl From<DecodeError> for LineError {
    fn from(e: DecodeError) -> Self {
        LineError::Decode(e)
    }
}

/// An incremental splitter of newline-delimited text.
///
/// Feed it byte chunks of any size with [`push`](Self::push) (or
/// [`feed`](Self::feed)); take complete lines with [`next_line`](Self::next_line).
/// Rules:
///
/// - a line ends at `\n`; one `\r` just before it is removed too;
/// - a lone `\r`, U+2028 and U+2029 are ordinary characters;
/// - lines that are empty or hold only spaces, tabs and `\r` are skipped;
/// - a line longer than [`max_line_len`](Self::max_line_len) bytes (not counting
///   `\r\n`) gives [`LineError::LineTooLong`]; its bytes are discarded as they arrive,
///   so memory stays bounded by the limit;
/// - a line that is not UTF-8 gives [`LineError::InvalidUtf8`];
/// - after an error the next line is decoded as usual.
///
/// Each byte is scanned once: a push looks for `\n` in the new bytes only, so
/// decoding is O(n) in the input whatever the chunking.
///
/// ```
/// use switchboard_protocol::codec::LineDecoder;
///
/// let mut dec = LineDecoder::new();
/// let mut lines = Vec::new();
/// for chunk in [&b"{\"a\":"[..], b"1}\r\n\n{\"b\"", b":2}\n"] {
///     lines.extend(dec.feed(chunk).map(Result::unwrap));
/// }
/// assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}"]);
/// ```
#[derive(Debug, Clone)]
pub struct LineDecoder {
    max: usize,
    /// The current, unterminated line (never more than `max + 1` bytes).
    buf: Vec<u8>,
    /// `Some(bytes seen)` while dropping an over-long line.
    discarding: Option<usize>,
    /// While discarding: whether the last dropped byte was `\r`.
    last_cr: bool,
    /// While discarding: the line's first and (so far) last [`PEEK_BYTES`] bytes.
    head: Vec<u8>,
    tail: Vec<u8>,
    out: VecDeque<Result<String, LineError>>,
}

/// How many bytes of each end of a line too long to read are kept to find its
/// `id` ([`LineError::LineTooLong`]'s `peeked`): 1 KiB.
pub const PEEK_BYTES: usize = 1024;

/// Appends to `head` what of `more` fits in [`PEEK_BYTES`].
fn keep_head(head: &mut Vec<u8>, more: &[u8]) {
    let room = PEEK_BYTES.saturating_sub(head.len());
    head.extend_from_slice(&more[..room.min(more.len())]);
}

/// Keeps the last [`PEEK_BYTES`] of `tail` followed by `more`.
fn keep_tail(tail: &mut Vec<u8>, more: &[u8]) {
    if more.len() >= PEEK_BYTES {
        tail.clear();
        tail.extend_from_slice(&more[more.len() - PEEK_BYTES..]);
    } else {
        tail.extend_from_slice(more);
        if tail.len() > PEEK_BYTES {
            tail.drain(..tail.len() - PEEK_BYTES);
        }
    }
}

/// What the ends of a line too long to read show.
fn peek_ends(head: &[u8], tail: &[u8]) -> Peeked {
    let mut peeked = peek(head);
    if peeked.id.is_none() {
        peeked.id = peek_tail(tail);
    }
    peeked
}

impl Default for LineDecoder {
    fn default() -> Self {
        LineDecoder::new()
    }
}

/// Spaces, tabs and carriage returns: a line of only these carries no message.
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

impl LineDecoder {
    /// A decoder with the default limit, [`super::DEFAULT_MAX_FRAME_LEN`] (16 MiB).
    pub fn new() -> Self {
        LineDecoder::with_max_line_len(DEFAULT_MAX_FRAME_LEN)
    }

    /// A decoder that refuses lines longer than `max` bytes (not counting the line
    /// ending).
    pub fn with_max_line_len(max: usize) -> Self {
        LineDecoder {
            max,
            buf: Vec::new(),
            discarding: None,
            last_cr: false,
            head: Vec::new(),
            tail: Vec::new(),
            out: VecDeque::new(),
        }
    }

    /// The maximum length of a line in bytes, without its `\n` or `\r\n`.
    pub fn max_line_len(&self) -> usize {
        self.max
    }

    /// How many bytes of an unterminated line are held (0 while an over-long line
    /// is being dropped). Never more than `max_line_len() + 1`.
    pub fn buffered_len(&self) -> usize {
        self.buf.len()
    }

    /// Whether an over-long line is being dropped until its `\n`.
    pub fn is_discarding(&self) -> bool {
        self.discarding.is_some()
    }

    /// How many decoded items wait to be taken with [`next_line`](Self::next_line).
    pub fn pending(&self) -> usize {
        self.out.len()
    }

    /// Takes in a chunk of bytes. Complete lines become available through
    /// [`next_line`](Self::next_line).
    pub fn push(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let nl = rest.iter().position(|&b| b == b'\n');
            if let Some(seen) = self.discarding {
                match nl {
                    None => {
                        self.discarding = Some(seen + rest.len());
                        self.last_cr = rest.last() == Some(&b'\r');
                        keep_head(&mut self.head, rest);
                        keep_tail(&mut self.tail, rest);
                        return;
                    }
                    Some(i) => {
                        let ends_cr = if i > 0 {
                            rest[i - 1] == b'\r'
                        } else {
                            self.last_cr
                        };
                        let len = seen + i - usize::from(ends_cr);
                        self.discarding = None;
                        self.last_cr = false;
                        keep_head(&mut self.head, &rest[..i]);
                        keep_tail(&mut self.tail, &rest[..i]);
                        let peeked = peek_ends(&self.head, &self.tail);
                        self.head.clear();
                        self.tail.clear();
                        self.out.push_back(Err(LineError::LineTooLong {
                            limit: self.max,
                            len,
                            peeked,
                        }));
                        rest = &rest[i + 1..];
                    }
                }
                continue;
            }
            match nl {
                None => {
                    let total = self.buf.len() + rest.len();
                    // One byte of slack: a trailing `\r` may belong to the line end.
                    if total > self.max.saturating_add(1) {
                        self.discarding = Some(total);
                        self.last_cr = rest.last() == Some(&b'\r');
                        let line = std::mem::take(&mut self.buf);
                        self.head.clear();
                        self.head
                            .extend(line.iter().chain(rest).take(PEEK_BYTES).copied());
                        self.tail.clear();
                        keep_tail(&mut self.tail, &line);
                        keep_tail(&mut self.tail, rest);
                    } else {
                        self.buf.extend_from_slice(rest);
                    }
                    return;
                }
                Some(i) => {
                    let head = &rest[..i];
                    self.end_line(head);
                    rest = &rest[i + 1..];
                }
            }
        }
    }

    /// Completes the current line with `tail` (the bytes before its `\n`).
    fn end_line(&mut self, tail: &[u8]) {
        let total = self.buf.len() + tail.len();
        let ends_cr = match tail.last() {
            Some(&b) => b == b'\r',
            None => self.buf.last() == Some(&b'\r'),
        };
        let len = total - usize::from(ends_cr);
        if len > self.max {
            let line = std::mem::take(&mut self.buf);
            let head: Vec<u8> = line.iter().chain(tail).take(PEEK_BYTES).copied().collect();
            let mut end = Vec::new();
            keep_tail(&mut end, &line);
            keep_tail(&mut end, tail);
            self.out.push_back(Err(LineError::LineTooLong {
                limit: self.max,
                len,
                peeked: peek_ends(&head, &end),
            }));
            return;
        }
        let mut line = if self.buf.is_empty() {
            tail.to_vec()
        } else {
            let mut line = std::mem::take(&mut self.buf);
            line.extend_from_slice(tail);
            line
        };
        line.truncate(len);
        if is_blank(&line) {
            return;
        }
        self.out
            .push_back(String::from_utf8(line).map_err(|e| LineError::InvalidUtf8 {
                valid_up_to: e.utf8_error().valid_up_to(),
            }));
    }

    /// The next decoded line, in order, or `None` when no complete line is waiting.
    pub fn next_line(&mut self) -> Option<Result<String, LineError>> {
        self.out.pop_front()
    }

    /// [`push`](Self::push) then drain every complete line.
    pub fn feed(&mut self, bytes: &[u8]) -> impl Iterator<Item = Result<String, LineError>> + '_ {
        self.push(bytes);
        self.out.drain(..)
    }

    /// End of input: treats a final line without `\n` as complete (MCP requires the
    /// `\n`, but a peer that exits right after writing loses nothing), then drains
    /// every remaining line. The decoder is empty and reusable afterwards.
    pub fn finish(&mut self) -> impl Iterator<Item = Result<String, LineError>> + '_ {
        if let Some(seen) = self.discarding.take() {
            let peeked = peek_ends(&self.head, &self.tail);
            self.head.clear();
            self.tail.clear();
            self.out.push_back(Err(LineError::LineTooLong {
                limit: self.max,
                len: seen,
                peeked,
            }));
        } else if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            let len = line.len();
            if len > self.max {
                let mut end = Vec::new();
                keep_tail(&mut end, &line);
                self.out.push_back(Err(LineError::LineTooLong {
                    limit: self.max,
                    len,
                    peeked: peek_ends(&line[..len.min(PEEK_BYTES)], &end),
                }));
            } else {
                self.end_line_owned(line);
            }
        }
        self.last_cr = false;
        self.out.drain(..)
    }

    fn end_line_owned(&mut self, line: Vec<u8>) {
        if is_blank(&line) {
            return;
        }
        self.out
            .push_back(String::from_utf8(line).map_err(|e| LineError::InvalidUtf8 {
                valid_up_to: e.utf8_error().valid_up_to(),
            }));
    }
}

/// A [`LineDecoder`] whose lines are classified as JSON-RPC frames with
/// [`decode_frame`]: the stdio transport's reader.
///
/// A line that is not a valid frame gives [`LineError::Decode`] carrying the
/// [`DecodeError`] (answer it with [`LineError::to_response`] when
/// [`LineError::wants_response`]); the next line is decoded as usual.
///
/// The batching rule is applied when a frame is taken, not when bytes are pushed,
/// so after version negotiation [`set_batching`](Self::set_batching) governs every
/// frame not yet taken.
///
/// ```
/// use switchboard_protocol::codec::FrameDecoder;
/// use switchboard_protocol::jsonrpc::{Batching, Frame};
///
/// let mut dec = FrameDecoder::new(Batching::Refused);
/// dec.push(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{oops\n");
/// assert!(matches!(dec.next_frame(), Some(Ok(Frame::Single(_)))));
/// assert_eq!(dec.next_frame().unwrap().unwrap_err().code(), -32700);
/// assert!(dec.next_frame().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    lines: LineDecoder,
    batching: Batching,
}

impl FrameDecoder {
    /// A frame decoder with the default line limit (16 MiB).
    pub fn new(batching: Batching) -> Self {
        FrameDecoder {
            lines: LineDecoder::new(),
            batching,
        }
    }

    /// A frame decoder refusing lines longer than `max` bytes.
    pub fn with_max_line_len(batching: Batching, max: usize) -> Self {
        FrameDecoder {
            lines: LineDecoder::with_max_line_len(max),
            batching,
        }
    }

    /// The batching rule in force.
    pub fn batching(&self) -> Batching {
        self.batching
    }

    /// Changes the batching rule (e.g. once 2025-03-26 is negotiated).
    pub fn set_batching(&mut self, batching: Batching) {
        self.batching = batching;
    }

    /// The underlying line decoder.
    pub fn lines(&self) -> &LineDecoder {
        &self.lines
    }

    /// Takes in a chunk of bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
    }

    /// The next frame, or `None` when no complete line is waiting.
    pub fn next_frame(&mut self) -> Option<Result<Frame, LineError>> {
        let line = self.lines.next_line()?;
        Some(line.and_then(|text| {
            decode_frame(text.as_bytes(), self.batching).map_err(LineError::Decode)
        }))
    }

    /// [`push`](Self::push) then take every complete frame.
    pub fn feed(&mut self, bytes: &[u8]) -> impl Iterator<Item = Result<Frame, LineError>> + '_ {
        self.push(bytes);
        std::iter::from_fn(move || self.next_frame())
    }

    /// End of input: like [`LineDecoder::finish`], then take every remaining frame.
    pub fn finish(&mut self) -> impl Iterator<Item = Result<Frame, LineError>> + '_ {
        let batching = self.batching;
        self.lines.finish().map(move |line| {
            line.and_then(|text| decode_frame(text.as_bytes(), batching).map_err(LineError::Decode))
        })
    }
}

/// Drops the raw `\r` and `\n` bytes of encoded JSON. In valid JSON these can only
/// be whitespace between tokens (inside strings they must be escaped, and no byte
/// of a multi-byte UTF-8 character is below 0x80), so the value is unchanged.
fn strip_line_breaks(json: &mut Vec<u8>) {
    if json.iter().any(|&b| b == b'\n' || b == b'\r') {
        json.retain(|&b| b != b'\n' && b != b'\r');
    }
}

/// Encodes one message as a stdio line: compact JSON and a `\n`.
///
/// The result never holds a raw `\n` or `\r` before its final `\n`. serde_json's
/// compact output has none, but a raw payload (`params`, `result`, `error.data`)
/// built by hand from pretty-printed JSON can; those line breaks sit between
/// tokens, so they are removed and every other byte of the payload is kept as it
/// was (numbers, key order and escapes are not rewritten). A raw `\r` is removed
/// as well because some line readers (e.g. universal-newline text mode) end a line
/// there.
///
/// Source: "Transports → stdio" (all revisions): messages MUST NOT contain
/// embedded newlines.
pub fn encode_line(message: &Message) -> Vec<u8> {
    let mut out = message.encode();
    strip_line_breaks(&mut out);
    out.push(b'\n');
    out
}

/// Encodes a batch (2025-03-26 only) as one stdio line, like [`encode_line`].
pub fn encode_batch_line(messages: &[Message]) -> Vec<u8> {
    let mut out = encode_batch(messages);
    strip_line_breaks(&mut out);
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{DecodeErrorKind, Notification, Request, Response};
    use proptest::prelude::*;
    use serde_json::value::RawValue;

    type Item = Result<String, LineError>;

    fn run(max: usize, chunks: &[&[u8]]) -> Vec<Item> {
        let mut dec = LineDecoder::with_max_line_len(max);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(dec.feed(c));
            assert!(dec.buffered_len() <= max + 1);
        }
        out.extend(dec.finish());
        out
    }

    /// Every way of cutting `input` into two and three chunks, and into single
    /// bytes, gives the same items as one chunk; returns those items.
    fn run_all_splits(max: usize, input: &[u8]) -> Vec<Item> {
        let whole = run(max, &[input]);
        let n = input.len();
        for i in 0..=n {
            for j in i..=n {
                let got = run(max, &[&input[..i], &input[i..j], &input[j..]]);
                assert_eq!(got, whole, "split at {i},{j} of {input:?}");
            }
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(run(max, &bytes), whole, "1-byte chunks of {input:?}");
        whole
    }

    fn ok(s: &str) -> Item {
        Ok(s.to_owned())
    }

    fn too_long(limit: usize, len: usize) -> Item {
        Err(LineError::LineTooLong {
            limit,
            len,
            peeked: Peeked::default(),
        })
    }

    /// A line too long to read still shows its id at either end, in every
    /// chunking: an answer is failed, not answered; a request is answered with
    /// its id.
    #[test]
    fn a_line_too_long_keeps_what_its_ends_show() {
        use crate::jsonrpc::Id;
        let big = "x".repeat(5000);
        let answer_first = format!(r#"{{"jsonrpc":"2.0","id":9,"result":{{"t":"{big}"}}}}"#);
        let answer_last = format!(r#"{{"result":{{"t":"{big}"}},"jsonrpc":"2.0","id":"q-1"}}"#);
        let request_last = format!(r#"{{"method":"tools/call","params":{{"t":"{big}"}},"id":4}}"#);
        let request_first =
            format!(r#"{{"id":"s\"3", "method":"tools/call","params":{{"t":"{big}"}}}}"#);
        let unknown = format!(r#"{{"t":"{big}"}}"#);
        for (chunk, limit) in [1, 7, 100, 4096, 100_000]
            .into_iter()
            .flat_map(|c| [(c, 10), (c, 1000)])
        {
            let mut dec = LineDecoder::with_max_line_len(limit);
            let input = format!(
                "{answer_first}\n{answer_last}\r\n{request_last}\n{request_first}\n{unknown}"
            );
            let mut got = Vec::new();
            for c in input.as_bytes().chunks(chunk) {
                got.extend(dec.feed(c));
            }
            got.extend(dec.finish());
            let peeked: Vec<Peeked> = got
                .into_iter()
                .map(|item| match item {
                    Err(LineError::LineTooLong { peeked, .. }) => peeked,
                    other => panic!("chunk {chunk}: {other:?}"),
                })
                .collect();
            assert_eq!(peeked.len(), 5, "chunk {chunk}");
            assert_eq!(peeked[0].answer_to(), Some(&Id::from(9)), "chunk {chunk}");
            assert_eq!(
                peeked[1].answer_to(),
                Some(&Id::from("q-1")),
                "chunk {chunk}"
            );
            assert_eq!(peeked[2].request_id(), Some(&Id::from(4)), "chunk {chunk}");
            assert_eq!(
                peeked[3].request_id(),
                Some(&Id::from("s\"3")),
                "chunk {chunk}"
            );
            assert_eq!(peeked[4], Peeked::default(), "chunk {chunk}");
        }
        let e = LineError::LineTooLong {
            limit: 1,
            len: 2,
            peeked: peek(br#"{"id":4,"method":"x","params":"#),
        };
        assert!(e.wants_response());
        assert_eq!(e.to_response().id, Some(Id::from(4)));
        let e = LineError::LineTooLong {
            limit: 1,
            len: 2,
            peeked: peek(br#"{"id":4,"result":"#),
        };
        assert!(!e.wants_response(), "a response is never answered");
    }

    #[test]
    fn table() {
        let big = DEFAULT_MAX_FRAME_LEN;
        let cases: Vec<(&str, usize, &[u8], Vec<Item>)> = vec![
            ("lf", big, b"a\nb\n", vec![ok("a"), ok("b")]),
            ("crlf", big, b"a\r\nb\r\n", vec![ok("a"), ok("b")]),
            ("one cr stripped", big, b"a\r\r\n", vec![ok("a\r")]),
            ("lone cr is data", big, b"a\rb\n", vec![ok("a\rb")]),
            (
                "blank lines skipped",
                big,
                b"\n\n  \n\t\r\n\r\n x \n",
                vec![ok(" x ")],
            ),
            (
                "unicode line separators and multibyte",
                big,
                "é\u{2028}€😀\u{2029}\n\u{2028}\n".as_bytes(),
                vec![ok("é\u{2028}€😀\u{2029}"), ok("\u{2028}")],
            ),
            (
                "invalid utf-8 only spoils its line",
                big,
                b"ok\n\xff\xfe\na\x80b\r\nnext\n",
                vec![
                    ok("ok"),
                    Err(LineError::InvalidUtf8 { valid_up_to: 0 }),
                    Err(LineError::InvalidUtf8 { valid_up_to: 1 }),
                    ok("next"),
                ],
            ),
            (
                "truncated multibyte at line end",
                big,
                b"\xe2\x82\nz\n",
                vec![Err(LineError::InvalidUtf8 { valid_up_to: 0 }), ok("z")],
            ),
            (
                "limit is inclusive",
                4,
                b"abcd\nabcde\nxy\n",
                vec![ok("abcd"), too_long(4, 5), ok("xy")],
            ),
            ("crlf not counted", 4, b"abcd\r\n", vec![ok("abcd")]),
            (
                "long line dropped, stream goes on",
                4,
                b"abcdefghijk\r\nz\n",
                vec![too_long(4, 11), ok("z")],
            ),
            (
                "cr inside a long line",
                4,
                b"abcd\rx\nz\r\n",
                vec![too_long(4, 6), ok("z")],
            ),
            ("unterminated tail", big, b"a\nb", vec![ok("a"), ok("b")]),
            ("unterminated long tail", 2, b"abc", vec![too_long(2, 3)]),
            ("unterminated cr tail", big, b"a\r", vec![ok("a\r")]),
            ("only line ends", big, b"\r\n\n\r\n", vec![]),
            ("zero limit", 0, b"\na\n\r\n", vec![too_long(0, 1)]),
        ];
        for (name, max, input, want) in cases {
            assert_eq!(run_all_splits(max, input), want, "{name}");
        }
    }

    #[test]
    fn overlong_line_is_not_buffered() {
        let mut dec = LineDecoder::with_max_line_len(16);
        let chunk = [b'x'; 1024];
        for _ in 0..1024 {
            dec.push(&chunk);
            assert!(dec.buffered_len() <= 17);
        }
        assert!(dec.is_discarding());
        assert_eq!(dec.pending(), 0);
        dec.push(b"\n{}\n");
        assert_eq!(dec.next_line(), Some(too_long(16, 1024 * 1024)));
        assert_eq!(dec.next_line(), Some(ok("{}")));
        assert_eq!(dec.next_line(), None);
        assert!(!dec.is_discarding());
    }

    #[test]
    fn byte_by_byte_is_linear() {
        // 4 MiB fed one byte at a time: quadratic rescanning would not finish.
        let mut input = vec![b'a'; 4 * 1024 * 1024];
        input.push(b'\n');
        let mut dec = LineDecoder::new();
        let mut n = 0;
        for b in input.chunks(1) {
            dec.push(b);
            while let Some(line) = dec.next_line() {
                assert_eq!(line.unwrap().len(), 4 * 1024 * 1024);
                n += 1;
            }
        }
        assert_eq!(n, 1);
    }

    #[test]
    fn default_limit_is_16_mib() {
        assert_eq!(LineDecoder::new().max_line_len(), 16 * 1024 * 1024);
        assert_eq!(LineDecoder::default().max_line_len(), 16 * 1024 * 1024);
    }

    #[test]
    fn frames_per_line_and_the_stream_goes_on() {
        let input = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
            "{not json\n",
            "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}\r\n",
            "\n",
            "[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
        );
        let mut dec = FrameDecoder::new(Batching::Refused);
        let got: Vec<_> = dec.feed(input.as_bytes()).collect();
        assert_eq!(got.len(), 5);
        assert!(matches!(got[0], Ok(Frame::Single(Message::Request(_)))));
        let e = got[1].as_ref().unwrap_err();
        assert_eq!(e.code(), code::PARSE_ERROR);
        assert!(matches!(e, LineError::Decode(d) if d.kind() == DecodeErrorKind::Parse));
        let e = got[2].as_ref().unwrap_err();
        assert_eq!(e.code(), code::INVALID_REQUEST);
        assert_eq!(e.to_response().id, Some(7.into()));
        let e = got[3].as_ref().unwrap_err();
        assert!(matches!(e, LineError::Decode(d) if d.kind() == DecodeErrorKind::BatchNotAllowed));
        assert!(matches!(
            got[4],
            Ok(Frame::Single(Message::Notification(_)))
        ));
    }

    #[test]
    fn batching_is_read_when_a_frame_is_taken() {
        let mut dec = FrameDecoder::new(Batching::Refused);
        dec.push(b"[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n");
        dec.set_batching(Batching::Allowed);
        assert_eq!(dec.batching(), Batching::Allowed);
        assert!(matches!(dec.next_frame(), Some(Ok(Frame::Batch(items))) if items.len() == 1));
        dec.push(b"{\"jsonrpc\":\"2.0\",\"method\":\"y\"}");
        assert!(dec.next_frame().is_none());
        let rest: Vec<_> = dec.finish().collect();
        assert!(matches!(&rest[..], [Ok(Frame::Single(m))] if m.method() == Some("y")));
    }

    #[test]
    fn framing_errors_answer_parse_error_with_null_id() {
        let mut dec = FrameDecoder::with_max_line_len(Batching::Refused, 8);
        assert_eq!(dec.lines().max_line_len(), 8);
        let got: Vec<_> = dec.feed(b"{\"jsonrpc\":\"2.0\"}\n\xff\n").collect();
        assert_eq!(got[0], Err(too_long(8, 17).unwrap_err()));
        assert_eq!(got[1], Err(LineError::InvalidUtf8 { valid_up_to: 0 }));
        for e in got.iter().map(|r| r.as_ref().unwrap_err()) {
            assert!(e.wants_response());
            let resp = e.to_response();
            assert_eq!(resp.id, None);
            assert_eq!(resp.error.code, code::PARSE_ERROR);
            assert_eq!(resp.error.message, e.to_string());
        }
        assert!(got[0].as_ref().unwrap_err().to_string().contains("17"));
        let broken =
            LineError::from(Message::decode(br#"{"jsonrpc":"1.0","method":"x"}"#).unwrap_err());
        assert!(!broken.wants_response());
    }

    #[test]
    fn encoded_lines_have_one_newline_at_the_end() {
        let pretty = RawValue::from_string(
            "{\n  \"text\": \"line\\none\\r\\n\",\r\n  \"n\": 1.50,\n  \"big\": 123456789012345678901234567890\n}"
                .to_owned(),
        )
        .unwrap();
        let msgs = vec![
            Message::Request(Request {
                id: 1.into(),
                method: "tools/call".into(),
                params: Some(pretty.clone()),
            }),
            Message::Response(Response {
                id: "a".into(),
                result: pretty.clone(),
            }),
            Message::Error(ErrorResponse::new(
                None,
                ErrorObject {
                    code: -1,
                    message: "m\nn".into(),
                    data: Some(pretty.clone()),
                    extra: Default::default(),
                },
            )),
            Message::Notification(
                Notification::new("x", &serde_json::json!({"t": "a\u{2028}b\nc"})).unwrap(),
            ),
        ];
        for msg in &msgs {
            let line = encode_line(msg);
            assert_eq!(line.last(), Some(&b'\n'));
            let body = &line[..line.len() - 1];
            assert!(!body.contains(&b'\n') && !body.contains(&b'\r'));
            let text = std::str::from_utf8(body).unwrap();
            assert_eq!(&Message::decode(body).unwrap(), msg);
            if text.contains("big") {
                // Payload bytes other than line breaks are kept as written.
                assert!(text.contains(r#""text": "line\none\r\n","#));
                assert!(text.contains(r#""n": 1.50,"#));
                assert!(text.contains("123456789012345678901234567890"));
            }
        }
        let batch = encode_batch_line(&msgs);
        assert_eq!(batch.iter().filter(|&&b| b == b'\n').count(), 1);
        let mut dec = FrameDecoder::new(Batching::Allowed);
        let Some(Ok(Frame::Batch(items))) = dec.feed(&batch).next() else {
            panic!("not a batch")
        };
        let back: Vec<Message> = items.into_iter().map(Result::unwrap).collect();
        assert_eq!(back, msgs);
    }

    fn line_strategy() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            4 => any::<char>().prop_map(|c| if c == '\n' { 'n' } else { c }),
            1 => Just('\u{2028}'),
            1 => Just('\u{2029}'),
            1 => Just('é'),
            1 => Just('😀'),
            1 => Just('\r'),
            1 => Just(' '),
        ];
        prop::collection::vec(ch, 1..24)
            .prop_map(|cs| cs.into_iter().collect::<String>())
            .prop_filter("not blank, no trailing CR", |s| {
                !is_blank(s.as_bytes()) && !s.ends_with('\r')
            })
    }

    proptest! {
        #[test]
        fn yields_exactly_the_lines_fed_in(
            lines in prop::collection::vec((line_strategy(), any::<bool>()), 0..12),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut input = Vec::new();
            for (line, crlf) in &lines {
                input.extend_from_slice(line.as_bytes());
                input.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
            }
            let mut at: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            at.sort_unstable();
            let mut dec = LineDecoder::new();
            let mut got = Vec::new();
            let mut prev = 0;
            for cut in at.into_iter().chain([input.len()]) {
                got.extend(dec.feed(&input[prev..cut]).map(Result::unwrap));
                prev = cut;
            }
            got.extend(dec.finish().map(Result::unwrap));
            let want: Vec<String> = lines.into_iter().map(|(l, _)| l).collect();
            prop_assert_eq!(got, want);
        }
    }
}
