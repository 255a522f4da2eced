//! An in-memory transport pair for tests: two connected ends with the same API as
//! every other transport.
//!
//! The ends are joined by a bounded in-memory byte pipe ([`tokio::io::duplex`],
//! [`DUPLEX_BUFFER`] bytes each way) and each runs the same line driver as stdio
//! ([`crate::connect`]). So every message really goes through `encode_line`,
//! `LineDecoder` and `decode_frame`, with the configured line limit and batching rule: a framing bug
//! shows up in tests that use the pair, and there is no second code path to keep
//! in step. The cost (encoding and decoding each message) is irrelevant in tests.

use tokio::io::{duplex, split};
use tracing::info_span;

use crate::config::TransportConfig;
use crate::handle::Transport;
use crate::line::{connect, Role};

/// The size of the in-memory pipe's buffer in each direction: 64 KiB (65 536
/// bytes). A writer waits when it is full, as with an OS pipe.
pub const DUPLEX_BUFFER: usize = 64 * 1024;

/// Two connected transports: `(client_end, server_end)`.
///
/// What one end sends, the other receives. The server end plays
/// [`Role::Server`] (answers bad input, which only raw bytes could produce), the
/// client end [`Role::Client`] with peer name `"memory server"`. When every
/// [`crate::Sender`] of one end is dropped, the other end's receiver gets
/// [`crate::Inbound::Closed`] with [`crate::CloseReason::PeerClosed`]. Spans:
/// `memory` with `name` = `"client"` or `"server"`.
///
/// Panics if called outside a Tokio runtime.
///
/// ```
/// use switchboard_protocol::jsonrpc::{Message, Request};
/// use switchboard_transport::{memory, Inbound, TransportConfig};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (client, mut server) = memory::pair(&TransportConfig::default());
/// let ping = Message::Request(Request::new(1, "ping", &serde_json::json!({})).unwrap());
/// client.sender.send(ping.clone()).await.unwrap();
/// match server.receiver.recv().await {
///     Some(Inbound::Message(m)) => assert_eq!(m, ping),
///     other => panic!("{other:?}"),
/// }
/// # }
/// ```
pub fn pair(config: &TransportConfig) -> (Transport, Transport) {
    let (a, b) = duplex(DUPLEX_BUFFER);
    let (a_read, a_write) = split(a);
    let (b_read, b_write) = split(b);
    let client = connect(
        a_read,
        a_write,
        Role::Client {
            peer: "memory server".to_owned(),
        },
        config,
        info_span!("memory", side = "client"),
    );
    let server = connect(
        b_read,
        b_write,
        Role::Server,
        config,
        info_span!("memory", side = "server"),
    );
    (client, server)
}
