//! Server-sent events: an incremental parser and a writer.
//!
//! Source: WHATWG HTML, "Server-sent events" → "Parsing an event stream" and
//! "Interpreting an event stream"; used by MCP's HTTP transports (2024-11-05
//! "HTTP with SSE", Streamable HTTP since 2025-03-26; the priming event and
//! `retry` polling since 2025-11-25).
//!
//! The parser follows the WHATWG algorithm: lines end with CRLF, LF or CR (also
//! when the CR and the LF arrive in different chunks); one leading UTF-8 BOM is
//! skipped; `:` starts a comment; `name: value` loses one space after the colon; a
//! line without a colon is a field with an empty value; `data` lines are joined
//! with `\n`; an empty line dispatches; an event with no data is not dispatched,
//! but its `id` still becomes the last event id; `id` with U+0000 is ignored;
//! `retry` must be ASCII digits; other fields are ignored; an incomplete event at
//! the end of the stream is discarded; text is decoded a line at a time, with
//! invalid UTF-8 replaced by U+FFFD.
//!
//! This module knows only the `text/event-stream` format; it must not know about
//! HTTP, reconnection timers, sessions or what the data means (JSON-RPC decoding is
//! the caller's next step).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

use super::DEFAULT_MAX_FRAME_LEN;

/// One dispatched event (WHATWG "Interpreting an event stream", dispatch step).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The event type: the last `event` field of the block, or `"message"` when
    /// there was none (or it was empty). MCP sends JSON-RPC messages as `message`
    /// events; the legacy HTTP+SSE transport (2024-11-05) also sends one
    /// `endpoint` event.
    pub event: String,
    /// The data: the `data` fields of the block joined with `\n`. For MCP, one
    /// JSON-RPC message; empty for the priming event.
    pub data: String,
    /// The `id` field set in this event's block, if any (`Some("")` for an empty
    /// `id`, which resets the last event id). The spec's `lastEventId`, which
    /// persists across events, is [`SseParser::last_event_id`].
    pub id: Option<String>,
    /// The `retry` field set in this event's block, in milliseconds, if any. The
    /// reconnection time in force, which persists, is [`SseParser::retry`].
    pub retry: Option<u64>,
}

impl Default for Event {
    fn default() -> Self {
        Event::message("")
    }
}

/// Why an [`Event`] cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseEncodeError {
    /// The event type holds a CR or LF, which would end its line.
    EventTypeHasLineBreak,
    /// The id holds a CR or LF (would end its line) or U+0000 (the receiver would
    /// ignore it).
    InvalidId,
}

impl fmt::Display for SseEncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SseEncodeError::EventTypeHasLineBreak => "SSE event type must not contain CR or LF",
            SseEncodeError::InvalidId => "SSE event id must not contain CR, LF or NULL",
        })
    }
}

impl std::error::Error for SseEncodeError {}

/// Calls `f` with each line of `text`, splitting at CRLF, CR and LF; always at
/// least one (possibly empty) line.
fn for_each_line(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                f(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                f(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    f(&text[start..]);
}

fn write_field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.push(b':');
    if !value.is_empty() {
        out.push(b' ');
        out.extend_from_slice(value.as_bytes());
    }
    out.push(b'\n');
}

impl Event {
    /// A `message` event carrying `data`, with no id and no retry.
    pub fn message(data: impl Into<String>) -> Self {
        Event {
            event: "message".to_owned(),
            data: data.into(),
            id: None,
            retry: None,
        }
    }

    /// The priming event of an MCP SSE stream (2025-11-25, "Transports →
    /// Streamable HTTP"): an event id and empty data, sent first so the client can
    /// reconnect with `Last-Event-ID` even if the server closes the stream before
    /// any message. Add [`with_retry`](Self::with_retry) to tell the client how long
    /// to wait before reconnecting.
    ///
    /// It is written as `id: <id>` and an empty `data:` line, as deployed MCP
    /// servers send it; a WHATWG parser therefore dispatches it as an event with
    /// empty data ([`is_priming`](Self::is_priming)), which an MCP receiver skips
    /// rather than decoding as JSON.
    pub fn priming(id: impl Into<String>) -> Self {
        Event {
            id: Some(id.into()),
            ..Event::message("")
        }
    }

    /// Whether this event carries no data: a priming event, not a message.
    pub fn is_priming(&self) -> bool {
        self.data.is_empty()
    }

    /// Sets the event type.
    pub fn with_event(mut self, event: impl Into<String>) -> Self {
        self.event = event.into();
        self
    }

    /// Sets the id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the reconnection time in milliseconds.
    pub fn with_retry(mut self, millis: u64) -> Self {
        self.retry = Some(millis);
        self
    }

    /// Appends the event in `text/event-stream` form to `out`: `event:` (left
    /// out for `message` or an empty type), `id:`, `retry:`, one `data:` line per
    /// line of data, then an empty line. Line breaks in `data` (CRLF, CR or LF) each
    /// start a new `data:` line, so a parser gives them back as LF.
    ///
    /// Errors (nothing is written): [`SseEncodeError`] when the event type or the
    /// id cannot be written on one line.
    pub fn write_to(&self, out: &mut Vec<u8>) -> Result<(), SseEncodeError> {
        let breaks = |s: &str| s.bytes().any(|b| b == b'\r' || b == b'\n');
        if breaks(&self.event) {
            return Err(SseEncodeError::EventTypeHasLineBreak);
        }
        if let Some(id) = &self.id {
            if breaks(id) || id.contains('\0') {
                return Err(SseEncodeError::InvalidId);
            }
        }
        if !self.event.is_empty() && self.event != "message" {
            write_field(out, "event", &self.event);
        }
        if let Some(id) = &self.id {
            write_field(out, "id", id);
        }
        if let Some(retry) = self.retry {
            write_field(out, "retry", &retry.to_string());
        }
        for_each_line(&self.data, |line| write_field(out, "data", line));
        out.push(b'\n');
        Ok(())
    }

    /// The event in `text/event-stream` form; see [`write_to`](Self::write_to).
    pub fn encode(&self) -> Result<Vec<u8>, SseEncodeError> {
        let mut out = Vec::with_capacity(self.data.len() + 32);
        self.write_to(&mut out)?;
        Ok(out)
    }
}

/// A comment in `text/event-stream` form: `: text` (one line per line of
/// `text`). Receivers ignore it; servers send one (e.g. `encode_comment("keep-alive")`)
/// to keep idle connections open through proxies.
pub fn encode_comment(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 3);
    for_each_line(text, |line| write_field(&mut out, "", line));
    out
}

/// What the parser yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event.
    Event(Event),
    /// A comment line's text, without the `:` and one following space; only when
    /// enabled with [`SseParser::with_comments`].
    Comment(String),
}

/// A problem in the stream. The parser has recovered by the time it is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// The event being received grew past the parser's limit: its bytes are
    /// discarded up to the next empty line, where parsing resumes.
    EventTooLarge {
        /// The limit in bytes ([`SseParser::max_event_len`]).
        limit: usize,
        /// The last event id when the event was dropped (its own `id`, if it had
        /// one, is dropped with it). A reconnection with this `Last-Event-ID`
        /// would have the event sent again; once a later event moves
        /// [`SseParser::last_event_id`] past it, one would not.
        after: String,
    },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::EventTooLarge { limit, .. } => write!(
                f,
                "SSE event exceeds the limit of {limit} bytes; discarded up to the next empty line"
            ),
        }
    }
}

impl std::error::Error for SseError {}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// An incremental `text/event-stream` parser (WHATWG HTML, "Parsing an event
/// stream").
///
/// Feed chunks of any size with [`push`](Self::push) (or [`feed`](Self::feed)) and
/// take items with [`next_item`](Self::next_item); call [`finish`](Self::finish)
/// at the end of the stream. Chunk boundaries never change the result.
///
/// The size limit ([`max_event_len`](Self::max_event_len), 16 MiB by default)
/// counts the bytes of the field lines of the event being received (line endings
/// not counted), or of one comment line; memory stays bounded by it. Past it the
/// parser reports [`SseError::EventTooLarge`] once, drops that event and resumes
/// after the next empty line. The bytes a stream holds between events (comments,
/// empty lines) do not count.
///
/// ```
/// use switchboard_protocol::codec::{SseItem, SseParser};
///
/// let mut parser = SseParser::new();
/// let mut events = Vec::new();
/// for chunk in [&b"id: 1\r"[..], b"\ndata: {\"a\"", b":1}\r\n\r\n"] {
///     events.extend(parser.feed(chunk).map(Result::unwrap));
/// }
/// let [SseItem::Event(e)] = &events[..] else { panic!() };
/// assert_eq!((e.event.as_str(), e.data.as_str()), ("message", "{\"a\":1}"));
/// assert_eq!(parser.last_event_id(), "1");
/// ```
#[derive(Debug, Clone)]
pub struct SseParser {
    max: usize,
    comments: bool,
    /// How many bytes of a leading BOM have been seen; `None` once decided.
    bom: Option<usize>,
    /// The current, unterminated line.
    line: Vec<u8>,
    /// The current line is a comment that is not kept.
    skip_line: bool,
    /// The last line ended with CR: an LF right after it belongs to that ending.
    skip_lf: bool,
    /// Dropping an over-large event until an empty line.
    discarding: bool,
    /// While discarding: whether the current line has any bytes.
    discard_line_nonempty: bool,
    /// Raw bytes of the field lines of the current block.
    block_len: usize,
    data: String,
    event_type: String,
    block_id: Option<String>,
    block_retry: Option<u64>,
    /// The spec's "last event ID buffer".
    id_buffer: String,
    /// The spec's "last event ID string", set at each dispatch.
    last_event_id: String,
    retry: Option<u64>,
    out: VecDeque<Result<SseItem, SseError>>,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new()
    }
}

/// Decodes a line's text as the spec does: UTF-8 with U+FFFD for bad sequences.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

impl SseParser {
    /// A parser with the default limit, [`super::DEFAULT_MAX_FRAME_LEN`] (16 MiB),
    /// that drops comments.
    pub fn new() -> Self {
        SseParser::with_max_event_len(DEFAULT_MAX_FRAME_LEN)
    }

    /// A parser whose events may hold at most `max` bytes of field lines.
    pub fn with_max_event_len(max: usize) -> Self {
        SseParser {
            max,
            comments: false,
            bom: Some(0),
            line: Vec::new(),
            skip_line: false,
            skip_lf: false,
            discarding: false,
            discard_line_nonempty: false,
            block_len: 0,
            data: String::new(),
            event_type: String::new(),
            block_id: None,
            block_retry: None,
            id_buffer: String::new(),
            last_event_id: String::new(),
            retry: None,
            out: VecDeque::new(),
        }
    }

    /// Whether to yield comment lines as [`SseItem::Comment`] (e.g. to watch
    /// keep-alives). Off by default.
    pub fn with_comments(mut self, comments: bool) -> Self {
        self.comments = comments;
        self
    }

    /// The size limit in bytes.
    pub fn max_event_len(&self) -> usize {
        self.max
    }

    /// The spec's last event id: the id buffer as of the latest dispatch (an empty
    /// line), whether or not an event was fired then. Empty when none was set (or
    /// an empty `id` reset it). This is what a client sends as `Last-Event-ID` when
    /// it reconnects. It reflects every byte pushed so far.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time in milliseconds from the latest valid `retry` field,
    /// which takes effect as soon as its line is read (even in an event that is
    /// never dispatched). `None` if the stream has set none.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// How many items wait to be taken.
    pub fn pending(&self) -> usize {
        self.out.len()
    }

    /// Takes in a chunk of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        if let Some(seen) = self.bom {
            let mut seen = seen;
            while seen < BOM.len() {
                match rest.first() {
                    None => {
                        self.bom = Some(seen);
                        return;
                    }
                    Some(&b) if b == BOM[seen] => {
                        seen += 1;
                        rest = &rest[1..];
                    }
                    Some(_) => {
                        // Not a BOM: the bytes taken so far are text.
                        self.bom = None;
                        self.scan(&BOM[..seen]);
                        break;
                    }
                }
            }
            self.bom = None;
        }
        self.scan(rest);
    }

    /// Splits bytes into lines; CR, LF and CRLF end a line.
    fn scan(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while !rest.is_empty() {
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.append_partial(rest);
                    return;
                }
                Some(i) => {
                    let cr = rest[i] == b'\r';
                    self.complete_line(&rest[..i]);
                    rest = &rest[i + 1..];
                    if cr {
                        match rest.first() {
                            None => self.skip_lf = true,
                            Some(b'\n') => rest = &rest[1..],
                            Some(_) => {}
                        }
                    }
                }
            }
        }
    }

    fn append_partial(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.discarding {
            self.discard_line_nonempty = true;
            return;
        }
        if self.skip_line {
            return;
        }
        if self.line.is_empty() && bytes[0] == b':' && !self.comments {
            self.skip_line = true;
            return;
        }
        self.line.extend_from_slice(bytes);
        if self.size_with(self.line.len(), self.line[0] == b':') > self.max {
            self.overflow(true);
        }
    }

    /// The size that counts against the limit once a line of `len` bytes is added.
    fn size_with(&self, len: usize, comment: bool) -> usize {
        if comment {
            len
        } else {
            self.block_len + len
        }
    }

    fn complete_line(&mut self, tail: &[u8]) {
        if self.discarding {
            let blank = !self.discard_line_nonempty && tail.is_empty();
            self.discard_line_nonempty = false;
            if blank {
                self.discarding = false;
            }
            return;
        }
        if self.skip_line {
            self.skip_line = false;
            return;
        }
        let line: Cow<'_, [u8]> = if self.line.is_empty() {
            if tail.first() == Some(&b':') && !self.comments {
                return;
            }
            Cow::Borrowed(tail)
        } else {
            let mut line = std::mem::take(&mut self.line);
            line.extend_from_slice(tail);
            Cow::Owned(line)
        };
        let comment = line.first() == Some(&b':');
        if self.size_with(line.len(), comment) > self.max {
            self.overflow(false);
            return;
        }
        self.process_line(&line);
    }

    /// The current event is too large: report it, drop it, and skip to the next
    /// empty line. `mid_line`: the overflow happened inside a line.
    fn overflow(&mut self, mid_line: bool) {
        self.out.push_back(Err(SseError::EventTooLarge {
            limit: self.max,
            after: self.last_event_id.clone(),
        }));
        self.reset_block();
        self.id_buffer.clone_from(&self.last_event_id);
        self.line = Vec::new();
        self.discarding = true;
        self.discard_line_nonempty = mid_line;
    }

    fn reset_block(&mut self) {
        self.block_len = 0;
        self.data.clear();
        self.event_type.clear();
        self.block_id = None;
        self.block_retry = None;
    }

    fn process_line(&mut self, line: &[u8]) {
        if line.is_empty() {
            self.dispatch();
            return;
        }
        if line[0] == b':' {
            if self.comments {
                let body = &line[1..];
                let body = body.strip_prefix(b" ").unwrap_or(body);
                self.out
                    .push_back(Ok(SseItem::Comment(text(body).into_owned())));
            }
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        self.block_len += line.len();
        match name {
            b"event" => self.event_type = text(value).into_owned(),
            b"data" => {
                self.data.push_str(&text(value));
                self.data.push('\n');
            }
            // An id with U+0000 is ignored.
            b"id" if !value.contains(&0) => {
                let id = text(value).into_owned();
                self.id_buffer.clone_from(&id);
                self.block_id = Some(id);
            }
            // Only ASCII digits, base ten; past u64 it saturates rather than wraps.
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let millis = value.iter().fold(0u64, |n, &d| {
                    n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                self.retry = Some(millis);
                self.block_retry = Some(millis);
            }
            _ => {}
        }
    }

    /// WHATWG "dispatch the event", for a parser that yields events.
    fn dispatch(&mut self) {
        self.last_event_id.clone_from(&self.id_buffer);
        let id = self.block_id.take();
        let retry = self.block_retry.take();
        self.block_len = 0;
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        self.data.pop(); // the trailing "\n"; `data` always ends with one here
        let event = if self.event_type.is_empty() {
            "message".to_owned()
        } else {
            std::mem::take(&mut self.event_type)
        };
        self.out.push_back(Ok(SseItem::Event(Event {
            event,
            data: std::mem::take(&mut self.data),
            id,
            retry,
        })));
    }

    /// The next item, or `None` when nothing complete is waiting.
    pub fn next_item(&mut self) -> Option<Result<SseItem, SseError>> {
        self.out.pop_front()
    }

    /// [`push`](Self::push) then drain every waiting item.
    pub fn feed(&mut self, bytes: &[u8]) -> impl Iterator<Item = Result<SseItem, SseError>> + '_ {
        self.push(bytes);
        self.out.drain(..)
    }

    /// End of the stream: an incomplete event (and an unterminated line) is
    /// discarded, as the spec says. Returns whether anything was discarded.
    ///
    /// The parser can then read a new stream (a reconnection): a BOM is skipped
    /// again, while [`last_event_id`](Self::last_event_id) and
    /// [`retry`](Self::retry) are kept, and the new stream's id buffer starts from
    /// the last event id. Items not yet taken stay waiting.
    pub fn finish(&mut self) -> bool {
        let dropped = !self.line.is_empty()
            || matches!(self.bom, Some(n) if n > 0)
            || self.skip_line
            || self.discarding
            || self.block_len > 0
            || !self.data.is_empty();
        self.reset_block();
        self.line = Vec::new();
        self.skip_line = false;
        self.skip_lf = false;
        self.discarding = false;
        self.discard_line_nonempty = false;
        self.bom = Some(0);
        self.id_buffer.clone_from(&self.last_event_id);
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Item = Result<SseItem, SseError>;

    #[derive(Debug, PartialEq)]
    struct Outcome {
        items: Vec<Item>,
        last_event_id: String,
        retry: Option<u64>,
        dropped: bool,
    }

    fn run(max: usize, comments: bool, chunks: &[&[u8]]) -> Outcome {
        let mut p = SseParser::with_max_event_len(max).with_comments(comments);
        let mut items = Vec::new();
        for c in chunks {
            items.extend(p.feed(c));
        }
        let dropped = p.finish();
        items.extend(std::iter::from_fn(|| p.next_item()));
        Outcome {
            items,
            last_event_id: p.last_event_id().to_owned(),
            retry: p.retry(),
            dropped,
        }
    }

    /// The outcome of `input` in one chunk, after checking that every cut into two
    /// and three chunks, and into single bytes, gives the same.
    fn run_all_splits(max: usize, comments: bool, input: &[u8]) -> Outcome {
        let whole = run(max, comments, &[input]);
        let n = input.len();
        for i in 0..=n {
            for j in i..=n {
                let got = run(max, comments, &[&input[..i], &input[i..j], &input[j..]]);
                assert_eq!(got, whole, "split at {i},{j} of {input:?}");
            }
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(run(max, comments, &bytes), whole, "1-byte chunks");
        whole
    }

    fn ev(event: &str, data: &str, id: Option<&str>, retry: Option<u64>) -> Item {
        Ok(SseItem::Event(Event {
            event: event.to_owned(),
            data: data.to_owned(),
            id: id.map(str::to_owned),
            retry,
        }))
    }

    fn msg(data: &str) -> Item {
        ev("message", data, None, None)
    }

    fn comment(text: &str) -> Item {
        Ok(SseItem::Comment(text.to_owned()))
    }

    fn too_large(limit: usize) -> Item {
        too_large_after(limit, "")
    }

    fn too_large_after(limit: usize, after: &str) -> Item {
        Err(SseError::EventTooLarge {
            limit,
            after: after.to_owned(),
        })
    }

    struct Case {
        name: &'static str,
        input: &'static [u8],
        max: usize,
        comments: bool,
        items: Vec<Item>,
        last_event_id: &'static str,
        retry: Option<u64>,
        dropped: bool,
    }

    fn case(name: &'static str, input: &'static [u8], items: Vec<Item>) -> Case {
        Case {
            name,
            input,
            max: DEFAULT_MAX_FRAME_LEN,
            comments: false,
            items,
            last_event_id: "",
            retry: None,
            dropped: false,
        }
    }

    impl Case {
        fn id(mut self, id: &'static str) -> Self {
            self.last_event_id = id;
            self
        }
        fn retry(mut self, r: u64) -> Self {
            self.retry = Some(r);
            self
        }
        fn dropped(mut self) -> Self {
            self.dropped = true;
            self
        }
        fn max(mut self, max: usize) -> Self {
            self.max = max;
            self
        }
        fn comments(mut self) -> Self {
            self.comments = true;
            self
        }
    }

    #[test]
    fn table() {
        let cases = vec![
            case(
                "data lines joined with LF",
                b"data: YHOO\ndata: +2\ndata: 10\n\n",
                vec![msg("YHOO\n+2\n10")],
            ),
            case(
                "ids, empty id, incomplete last event",
                b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n",
                vec![
                    ev("message", "first event", Some("1"), None),
                    ev("message", "second event", Some(""), None),
                ],
            )
            .dropped(),
            case(
                "empty data fires, trailing field discarded",
                b"data\n\ndata\ndata\n\ndata:",
                vec![msg(""), msg("\n")],
            )
            .dropped(),
            case(
                "one optional space",
                b"data:test\n\ndata: test\n\ndata:  two\n\ndata:\tx\n\n",
                vec![msg("test"), msg("test"), msg(" two"), msg("\tx")],
            ),
            case("colon in value", b"data: a:b\n\n", vec![msg("a:b")]),
            case(
                "CR line endings",
                b"data: a\rdata: b\r\r",
                vec![msg("a\nb")],
            ),
            case(
                "CRLF is one line end",
                b"data: a\r\ndata: b\r\n\r\n",
                vec![msg("a\nb")],
            ),
            case(
                "mixed line ends",
                b"data: a\r\n\rdata: b\n\r\r\n\n",
                vec![msg("a"), msg("b")],
            ),
            case("leading BOM skipped", b"\xEF\xBB\xBFdata: x\n\n", vec![msg("x")]),
            case(
                "only one BOM skipped",
                b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n",
                vec![msg("y")],
            ),
            case(
                "partial BOM is text",
                b"\xEF\xBBdata: x\n\ndata: y\n\n",
                vec![msg("y")],
            ),
            case(
                "BOM only at the start",
                b"data: a\n\n\xEF\xBB\xBFdata: b\n\n",
                vec![msg("a")],
            ),
            case(
                "event type, reset after dispatch",
                b"event: add\ndata: 1\n\nevent: x\n\ndata: 2\n\nevent\ndata: 3\n\n",
                vec![ev("add", "1", None, None), msg("2"), msg("3")],
            ),
            case(
                "id with NULL ignored",
                b"id: 1\ndata: a\n\nid: 2\x00\ndata: b\n\n",
                vec![ev("message", "a", Some("1"), None), msg("b")],
            )
            .id("1"),
            case(
                "id without data still sets the last event id",
                b"id: 1\ndata: a\n\nid: 7\n\n",
                vec![ev("message", "a", Some("1"), None)],
            )
            .id("7"),
            case(
                "id persists across events",
                b"id: 1\ndata: a\n\ndata: b\n\n",
                vec![ev("message", "a", Some("1"), None), msg("b")],
            )
            .id("1"),
            case(
                "id of an incomplete event is not committed",
                b"id: 1\ndata: a\n\nid: 2\ndata: b\n",
                vec![ev("message", "a", Some("1"), None)],
            )
            .id("1")
            .dropped(),
            case(
                "priming event",
                b"id: p-0\nretry: 3000\ndata: \n\n",
                vec![ev("message", "", Some("p-0"), Some(3000))],
            )
            .id("p-0")
            .retry(3000),
            case(
                "retry digits only; applies without dispatch",
                b"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry:\ndata: c\n\nretry:  12\ndata: d\n\nretry: 2000\n",
                vec![
                    ev("message", "a", None, Some(1500)),
                    msg("b"),
                    msg("c"),
                    msg("d"),
                ],
            )
            .retry(2000)
            .dropped(),
            case(
                "retry saturates",
                b"retry: 99999999999999999999999\n\n",
                vec![],
            )
            .retry(u64::MAX),
            case(
                "unknown and differently cased fields ignored",
                b"foo: bar\ndata: x\nDATA: y\nData\n\n",
                vec![msg("x")],
            ),
            case(
                "multi-byte text",
                "data: é😀\u{2028}€\n\n".as_bytes(),
                vec![msg("é😀\u{2028}€")],
            ),
            case(
                "invalid UTF-8 replaced",
                b"data: a\xffb\ndata: \xe2\x82\nevent: \xc3\n\n",
                vec![ev("\u{FFFD}", "a\u{FFFD}b\n\u{FFFD}", None, None)],
            ),
            case("incomplete event discarded", b"data: x\n", vec![]).dropped(),
            case("unterminated line discarded", b"data: x", vec![]).dropped(),
            case("comments are not events", b": hi\n\n:\n", vec![]),
            case(
                "comments exposed",
                b": keep-alive\n:\n:  x\r\ndata: 1\n:mid\n\n",
                vec![
                    comment("keep-alive"),
                    comment(""),
                    comment(" x"),
                    comment("mid"),
                    msg("1"),
                ],
            )
            .comments(),
            case(
                "limit is inclusive",
                b"data: 0123456789\n\n",
                vec![msg("0123456789")],
            )
            .max(16),
            case(
                "one long line, then resync",
                b"data: 01234567890\n\ndata: ok\n\n",
                vec![too_large(16), msg("ok")],
            )
            .max(16),
            case(
                "rest of the large event dropped",
                b"id: 9\ndata: 0123456789abcdef\ndata: more\nid: 5\n\ndata: ok\n\n",
                vec![too_large(16), msg("ok")],
            )
            .max(16),
            case(
                "the dropped event's place: after the last id, its own id dropped",
                b"id: 3\ndata: a\n\nid: 4\n\nid: 9\ndata: 0123456789abcdef\n\ndata: ok\n\n",
                vec![
                    ev("message", "a", Some("3"), None),
                    too_large_after(16, "4"),
                    msg("ok"),
                ],
            )
            .max(16)
            .id("4"),
            case(
                "many lines add up",
                b"data: 012345\ndata: 6789ab\n\r\ndata: ok\r\n\r\n",
                vec![too_large(16), msg("ok")],
            )
            .max(16),
            case(
                "comments between events do not count",
                b": 0123456789\n: 0123456789\ndata: 0123456789\n\n",
                vec![msg("0123456789")],
            )
            .max(16),
            case(
                "a long kept comment counts",
                b": 0123456789abcdefg\n\ndata: ok\n\n",
                vec![too_large(16), msg("ok")],
            )
            .max(16)
            .comments(),
            case(
                "large event at the end",
                b"data: ok\n\ndata: 0123456789abcdefg",
                vec![msg("ok"), too_large(16)],
            )
            .max(16)
            .dropped(),
        ];
        for c in cases {
            let got = run_all_splits(c.max, c.comments, c.input);
            let want = Outcome {
                items: c.items,
                last_event_id: c.last_event_id.to_owned(),
                retry: c.retry,
                dropped: c.dropped,
            };
            assert_eq!(got, want, "{}", c.name);
        }
    }

    #[test]
    fn large_event_memory_stays_bounded() {
        let mut p = SseParser::with_max_event_len(64);
        p.push(b"data: ");
        for _ in 0..1000 {
            p.push(&[b'x'; 1000]);
            assert!(p.line.len() <= 64 && p.data.len() <= 64);
        }
        p.push(b"\n\ndata: after\n\n");
        let items: Vec<_> = std::iter::from_fn(|| p.next_item()).collect();
        assert_eq!(items, vec![too_large(64), msg("after")]);
        assert!(items[0].as_ref().unwrap_err().to_string().contains("64"));
    }

    #[test]
    fn reconnection_keeps_last_event_id_and_retry() {
        let mut p = SseParser::new();
        let got: Vec<_> = p
            .feed(b"\xEF\xBB\xBFretry: 10\nid: 4\ndata: a\n\nid: 5\ndata: half")
            .collect();
        assert_eq!(got, vec![ev("message", "a", Some("4"), Some(10))]);
        assert!(p.finish());
        assert_eq!(p.last_event_id(), "4");
        // A new stream: BOM skipped again; events without id keep the last one.
        let got: Vec<_> = p.feed(b"\xEF\xBB\xBFdata: b\n\n").collect();
        assert_eq!(got, vec![msg("b")]);
        assert_eq!((p.last_event_id(), p.retry()), ("4", Some(10)));
        assert!(!p.finish());
    }

    #[test]
    fn writer_output() {
        let e = Event::message("{\"a\":1}\nsecond\r\nthird\rfourth")
            .with_event("update")
            .with_id("42")
            .with_retry(1000);
        assert_eq!(
            String::from_utf8(e.encode().unwrap()).unwrap(),
            "event: update\nid: 42\nretry: 1000\ndata: {\"a\":1}\ndata: second\ndata: third\ndata: fourth\n\n"
        );
        assert_eq!(Event::message("x").encode().unwrap(), b"data: x\n\n");
        assert_eq!(Event::default().encode().unwrap(), b"data:\n\n");
        assert_eq!(
            Event::message("").with_id("").encode().unwrap(),
            b"id:\ndata:\n\n"
        );
        let priming = Event::priming("s1-0").with_retry(5000);
        assert!(priming.is_priming());
        assert_eq!(
            priming.encode().unwrap(),
            b"id: s1-0\nretry: 5000\ndata:\n\n"
        );
        assert_eq!(encode_comment("keep-alive"), b": keep-alive\n");
        assert_eq!(encode_comment("a\nb\r\n"), b": a\n: b\n:\n");
        let mut out = b"x".to_vec();
        assert_eq!(
            Event::message("a").with_event("a\nb").write_to(&mut out),
            Err(SseEncodeError::EventTypeHasLineBreak)
        );
        for bad in ["a\rb", "a\nb", "a\0b"] {
            assert_eq!(
                Event::message("a").with_id(bad).write_to(&mut out),
                Err(SseEncodeError::InvalidId)
            );
        }
        assert_eq!(out, b"x", "nothing written on error");
        assert!(!SseEncodeError::InvalidId.to_string().is_empty());
    }

    #[test]
    fn priming_event_parses_as_an_empty_event_with_its_id() {
        let bytes = Event::priming("p1").encode().unwrap();
        let mut p = SseParser::new();
        let got: Vec<_> = p.feed(&bytes).collect();
        let [Ok(SseItem::Event(e))] = &got[..] else {
            panic!("{got:?}")
        };
        assert!(e.is_priming());
        assert_eq!(e.id.as_deref(), Some("p1"));
        assert_eq!(p.last_event_id(), "p1");
    }

    fn line_text() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            4 => any::<char>(),
            1 => Just('\n'),
            1 => Just('\r'),
            1 => Just(':'),
            1 => Just(' '),
            1 => Just('\u{2028}'),
            1 => Just('😀'),
            1 => Just('\u{FEFF}'),
        ];
        prop::collection::vec(ch, 0..20).prop_map(|cs| cs.into_iter().collect())
    }

    fn one_line(s: String) -> String {
        s.chars()
            .filter(|c| !matches!(c, '\r' | '\n' | '\0'))
            .collect()
    }

    fn event_strategy() -> impl Strategy<Value = Event> {
        (
            line_text().prop_map(one_line),
            line_text(),
            proptest::option::of(line_text().prop_map(one_line)),
            proptest::option::of(any::<u64>()),
        )
            .prop_map(|(event, data, id, retry)| Event {
                event: if event.is_empty() {
                    "message".to_owned()
                } else {
                    event
                },
                data,
                id,
                retry,
            })
    }

    fn normalized(data: &str) -> String {
        data.replace("\r\n", "\n").replace('\r', "\n")
    }

    proptest! {
        #[test]
        fn writer_then_parser_is_identity(
            stream in prop::collection::vec(
                prop_oneof![
                    4 => event_strategy().prop_map(SseItem::Event),
                    1 => line_text().prop_map(one_line).prop_map(SseItem::Comment),
                ],
                0..8,
            ),
            bom in any::<bool>(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut bytes = if bom { BOM.to_vec() } else { Vec::new() };
            for item in &stream {
                match item {
                    SseItem::Event(e) => e.write_to(&mut bytes).unwrap(),
                    SseItem::Comment(c) => bytes.extend(encode_comment(c)),
                }
            }
            let mut at: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
            at.sort_unstable();
            let mut p = SseParser::new().with_comments(true);
            let mut got = Vec::new();
            let mut prev = 0;
            for cut in at.into_iter().chain([bytes.len()]) {
                got.extend(p.feed(&bytes[prev..cut]).map(Result::unwrap));
                prev = cut;
            }
            prop_assert!(!p.finish());
            let want: Vec<SseItem> = stream
                .iter()
                .cloned()
                .map(|item| match item {
                    SseItem::Event(mut e) => {
                        e.data = normalized(&e.data);
                        SseItem::Event(e)
                    }
                    other => other,
                })
                .collect();
            prop_assert_eq!(&got, &want);
            let last_id = stream.iter().rev().find_map(|i| match i {
                SseItem::Event(Event { id: Some(id), .. }) => Some(id.as_str()),
                _ => None,
            });
            prop_assert_eq!(p.last_event_id(), last_id.unwrap_or(""));
        }

        #[test]
        fn chunking_never_changes_the_result(
            bytes in prop::collection::vec(
                prop_oneof![
                    Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(0xEF), Just(0xBB),
                    Just(0xBF), Just(0), any::<u8>(), Just(b'd'), Just(b'a'), Just(b't'),
                ],
                0..64,
            ),
            prefix in prop::sample::select(vec![
                &b""[..], b"data: x\n", b"id: 1\n", b"retry: 5\n", b"event: e\n", b"\xEF\xBB\xBF",
            ]),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
            max in 4usize..40,
        ) {
            let mut input = prefix.to_vec();
            input.extend(bytes);
            input.extend_from_slice(b"\n\ndata: end\n\n");
            let whole = run(max, true, &[&input]);
            let mut at: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            at.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for cut in at.into_iter().chain([input.len()]) {
                chunks.push(&input[prev..cut]);
                prev = cut;
            }
            prop_assert_eq!(run(max, true, &chunks), whole);
        }
    }
}
