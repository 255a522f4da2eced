//! # switchboard-transport
//!
//! The transport layer of the Model Context Protocol (MCP): moving JSON-RPC
//! messages over bytes, connections and processes. It knows framing, pipes,
//! child processes, backpressure and shutdown; it must not know about tools,
//! resources, prompts, sessions, request ids awaiting answers, timeouts of
//! requests, or what a method means. Those belong to the library layer above
//! (`switchboard`); the messages themselves come from `switchboard-protocol`.
//!
//! ## Shape: handles and drivers
//!
//! Every transport is a [`Transport`]: a [`Sender`] (cloneable; `send`,
//! `send_batch`) and a [`Receiver`] (yields [`Inbound`] events: a message, a
//! batch, then a final [`Inbound::Closed`] with a [`CloseReason`]). The I/O is
//! owned by driver tasks spawned on the Tokio runtime (a reader and a writer,
//! plus a supervisor for a child process); the halves talk to them through
//! bounded queues ([`TransportConfig::channel_capacity`]), so a slow side slows
//! the other down instead of growing memory. What dropping each half does is
//! documented on [`Sender`], [`Receiver`] and [`stdio::ChildProcess`].
//!
//! ## Transports
//!
//! - [`stdio::serve`] / [`stdio::serve_on`]: the server side of stdio (our own
//!   stdin/stdout, or any pipe pair).
//! - [`stdio::spawn`]: the client side of stdio, a server run as a child process,
//!   with the spec's shutdown order (close stdin, SIGTERM, SIGKILL, reap).
//! - [`memory::pair`]: two connected ends for tests, through the real line codec.
//! - [`connect`]: the line driver over any `AsyncRead`/`AsyncWrite` pair, in
//!   either [`Role`].
//! - [`http::server`]: the Streamable HTTP server (stateful shape, 2025-03-26 to
//!   2025-11-25): an HTTP listener whose [`http::server::SessionAcceptor`] yields
//!   one [`Transport`] per MCP session. Replies and related messages are routed
//!   to the right HTTP stream by [`Sender::send_related`].
//!
//! Bad input is handled per [`Role`]: a server answers it with the spec's error
//! and goes on; a client logs it as the peer's fault and goes on.
//!
//! ## Logging
//!
//! Everything is logged through `tracing`, in spans named after the transport
//! (`stdio_server`, `stdio_child`, `memory`, `http_server`, `http_connection`,
//! `http_session`) with `name` and, for processes,
//! `pid` fields. This crate never writes to stdout except protocol messages of
//! [`stdio::serve`], and never installs a subscriber: only binaries do (and in
//! stdio server mode they must send logs to stderr).
//!
//! ```
//! use switchboard_protocol::jsonrpc::{Message, Notification};
//! use switchboard_transport::{memory, CloseReason, Inbound, TransportConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (client, server) = memory::pair(&TransportConfig::default());
//! let (client_tx, _client_rx) = client.split();
//! let (_server_tx, mut server_rx) = server.split();
//!
//! let hello = Notification::new("notifications/initialized", &serde_json::json!({})).unwrap();
//! client_tx.send(Message::Notification(hello)).await.unwrap();
//! drop(client_tx); // the client closes its side
//!
//! assert!(matches!(server_rx.recv().await, Some(Inbound::Message(_))));
//! assert!(matches!(
//!     server_rx.recv().await,
//!     Some(Inbound::Closed { reason: CloseReason::PeerClosed })
//! ));
//! assert!(server_rx.recv().await.is_none());
//! # }
//! ```
#![deny(missing_docs)]

mod config;
mod handle;
pub mod http;
mod line;
mod log_limit;
pub mod memory;
pub mod stdio;

pub use config::{TransportConfig, DEFAULT_CHANNEL_CAPACITY};
pub use handle::{
    CloseReason, DirectSink, Inbound, Outgoing, Receiver, SendError, Sender, Transport,
    STDERR_TAIL_CHARS, TRANSPORT_ERROR,
};
pub use line::{connect, Role};

/// An error as one line: its own text, then each cause's (`std::error::Error::source`)
/// that it does not already contain, joined with `": "`, newlines turned into
/// spaces. For messages a user reads: a failed HTTP request says "error sending
/// request for url (…)" and only its causes say why ("Connection refused").
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s.replace('\n', " ")
}
