//! Incremental framing codecs: bytes of a transport in, complete frames out, and
//! the reverse.
//!
//! - [`line`](mod@line): newline-delimited JSON, the stdio transport (every revision,
//!   "Transports → stdio"): one JSON-RPC message (or, in 2025-03-26, one batch) per
//!   line.
//! - [`sse`]: server-sent events (WHATWG HTML, "Server-sent events"), the body of
//!   the HTTP transports (legacy HTTP+SSE in 2024-11-05, Streamable HTTP since
//!   2025-03-26), including the 2025-11-25 priming event.
//!
//! Both decoders are fed chunks of any size, cut anywhere (inside a line ending,
//! inside a multi-byte UTF-8 character), and give the same items as if the whole
//! input had come at once. They do no I/O and keep no clock: this module must not
//! know about sockets, processes, HTTP headers, sessions or reconnection timers;
//! it only turns bytes into frames.

pub mod line;
pub mod sse;

pub use line::{encode_batch_line, encode_line, FrameDecoder, LineDecoder, LineError, PEEK_BYTES};
pub use sse::{encode_comment, Event, SseEncodeError, SseError, SseItem, SseParser};

/// The default maximum size of one frame (a stdio line, or one SSE event):
/// 16 MiB (16 × 1024 × 1024 bytes).
pub const DEFAULT_MAX_FRAME_LEN: usize = 16 * 1024 * 1024;
