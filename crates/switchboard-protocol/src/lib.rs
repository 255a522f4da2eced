//! # switchboard-protocol
//!
//! The message layer of the Model Context Protocol (MCP), for every revision
//! (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28), with no async
//! runtime, no sockets and no clock of its own: bytes in, messages out, and the
//! reverse. Time, where a rule needs it, is passed in.
//!
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope. Classifies a message from `jsonrpc`,
//!   `id`, `method` and which of `params`/`result`/`error` are present, keeping the
//!   payload as raw JSON so that a proxy forwards it undecoded.
//! - [`types`]: the typed MCP messages of every revision; fields a peer sends that
//!   are not modelled are kept and sent back out.
//! - [`version`]: protocol revisions and version negotiation.
//! - [`lifecycle`]: the client's and the server's lifecycle as state machines.
//! - [`codec`]: incremental framing: newline-delimited JSON (stdio) and
//!   server-sent events (HTTP).
//!
//! This crate must not know about transports, processes, HTTP, tasks or tools'
//! behaviour: only what is on the wire.
//!
//! ```
//! use switchboard_protocol::jsonrpc::{Message, code};
//!
//! let msg = Message::decode(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).unwrap();
//! assert_eq!(msg.method(), Some("tools/list"));
//!
//! // Bad input becomes the spec's answer, never a panic.
//! let err = Message::decode(b"{not json").unwrap_err();
//! assert_eq!(err.code(), code::PARSE_ERROR);
//! let answer = Message::Error(err.to_response()).encode();
//! assert!(answer.starts_with(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700"#));
//! ```
#![deny(missing_docs)]

pub mod codec;
pub mod jsonrpc;
pub mod lifecycle;
pub mod types;
pub mod version;

pub use version::ProtocolVersion;
