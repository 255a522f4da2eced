//! # switchboard
//!
//! The MCP library: a [`Client`](client) and a [`Server`](server) that speak every
//! revision over any `switchboard-transport` transport.
//!
//! - `peer`: the JSON-RPC peer shared by both sides — the pending-request table
//!   (ids that never repeat within a session, deadlines that progress can extend,
//!   waiters), request routing, progress and cancellation.
//! - `client`: the client side (typed calls, handlers for sampling, elicitation and
//!   roots).
//! - `server`: the server side (tools, resources, prompts, completions, logging;
//!   capabilities derived from what was registered).
//!
//! This crate must not know about bytes, framing, sockets or how processes are run
//! (that is `switchboard-transport`; `Client::spawn` only holds its child handle)
//! nor about bridging or gateways.
#![deny(missing_docs)]

pub mod client;
pub mod error;
pub mod peer;
mod pending;
pub mod server;

pub use client::{CallOptions, Client, ClientOptions, EraPolicy};
pub use error::Error;
