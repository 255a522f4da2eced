//! Limits and switches shared by every transport.

use switchboard_protocol::codec::DEFAULT_MAX_FRAME_LEN;
use switchboard_protocol::jsonrpc::Batching;

/// The default capacity of each of a transport's two queues (outbound and
/// inbound), in messages (a batch counts as one): 64.
pub const DEFAULT_CHANNEL_CAPACITY: usize = 64;

/// Limits and switches of one transport (practice 6 of the design notes: bounded
/// by default, every limit configurable).
///
/// ```
/// use switchboard_transport::TransportConfig;
///
/// let mut config = TransportConfig::default();
/// config.max_line_len = 1024 * 1024;
/// assert_eq!(config.channel_capacity, 64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransportConfig {
    /// How many items each queue holds, in messages (a batch counts as one).
    /// There are two queues: outbound ([`Sender`](crate::Sender) → the writer task)
    /// and inbound (the reader task → [`Receiver`](crate::Receiver)). When the
    /// outbound queue is full, [`Sender::send`](crate::Sender::send) waits; when the
    /// inbound queue is full, the reader stops reading, so the peer's writes block
    /// in the pipe (backpressure, never unbounded memory). Values below 1 are
    /// treated as 1. Default [`DEFAULT_CHANNEL_CAPACITY`] (64).
    pub channel_capacity: usize,
    /// The longest inbound line accepted, in bytes, not counting its `\n` or
    /// `\r\n`; passed to the line codec
    /// ([`LineDecoder::with_max_line_len`](switchboard_protocol::codec::LineDecoder::with_max_line_len)).
    /// A longer line is dropped as it arrives (never buffered) and treated as bad
    /// input (-32700; see [`Role`](crate::Role)). Default
    /// [`DEFAULT_MAX_FRAME_LEN`] (16 MiB).
    pub max_line_len: usize,
    /// The batching rule at the start (JSON-RPC batches exist only in 2025-03-26).
    /// Default [`Batching::Refused`]: before version negotiation no revision is
    /// known, and `initialize` is never batched. Change it after negotiation with
    /// [`Sender::set_batching`](crate::Sender::set_batching).
    pub batching: Batching,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            channel_capacity: DEFAULT_CHANNEL_CAPACITY,
            max_line_len: DEFAULT_MAX_FRAME_LEN,
            batching: Batching::Refused,
        }
    }
}

impl TransportConfig {
    /// The queue capacity actually used: [`channel_capacity`](Self::channel_capacity),
    /// at least 1.
    pub(crate) fn capacity(&self) -> usize {
        self.channel_capacity.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_minimum_capacity() {
        let mut c = TransportConfig::default();
        assert_eq!(c.max_line_len, 16 * 1024 * 1024);
        assert_eq!(c.channel_capacity, 64);
        assert_eq!(c.batching, Batching::Refused);
        c.channel_capacity = 0;
        assert_eq!(c.capacity(), 1);
    }
}
