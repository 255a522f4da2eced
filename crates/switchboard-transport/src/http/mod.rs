//! HTTP transports of MCP.
//!
//! Present:
//!
//! - [`server`]: the Streamable HTTP **server**, stateful shape (MCP 2025-03-26,
//!   2025-06-18 and 2025-11-25, "Transports → Streamable HTTP"): one endpoint
//!   (`/mcp` by default) taking POST, GET and DELETE; sessions named by
//!   `Mcp-Session-Id`; each session is handed to the library as a
//!   [`Transport`](crate::Transport) by a [`server::SessionAcceptor`], so the library
//!   serves an HTTP session exactly as it serves stdio. Outbound messages are routed
//!   to the right HTTP stream by the hint of
//!   [`Sender::send_related`](crate::Sender::send_related).
//! - [`legacy`]: the legacy HTTP+SSE **server** (2024-11-05: `GET /sse` answered
//!   with an `endpoint` event, POSTs to `/message?sessionId=..` answered 202,
//!   every server message as an SSE `message` event), served by the same
//!   [`server::HttpServer`] on its own paths; sessions come through the same
//!   acceptor with [`server::SessionKind::LegacySse`].
//! - [`sse_client`]: the legacy HTTP+SSE **client** ([`sse_client::connect`]), a
//!   [`Transport`](crate::Transport) to a 2024-11-05 server (the last fallback of
//!   a Streamable HTTP client, REVISIONS.md §5.3).
//! - [`stateless`]: the same endpoint's stateless 2026-07-28 form: a POST without
//!   a session, told apart by `MCP-Protocol-Version` or its body's `_meta`, is one
//!   exchange, handed to the library as an
//!   [`HttpSession`](server::HttpSession) of kind
//!   [`SessionKind::Stateless`](server::SessionKind::Stateless); GET and DELETE
//!   from a 2026-07-28 client get 405.
//! - [`mcp_headers`]: the checks of a stateless exchange's `MCP-Protocol-Version`,
//!   `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers against its body (-32020),
//!   called by whoever serves the exchange (the library's `Server`, the bridge),
//!   which knows the called tool's schema.
//! - [`resource`]: MCP authorization's resource server, on when
//!   [`HttpServerConfig::auth`](server::HttpServerConfig::auth) is set: Protected
//!   Resource Metadata, bearer tokens (JWTs on the issuer's keys, opaque ones by
//!   introspection), 401/403 challenges, the caller's
//!   [`Principal`](resource::Principal) on each session.
//! - [`client`]: the Streamable HTTP **client** ([`client::connect`]), a
//!   [`Transport`](crate::Transport) to one endpoint URL with an
//!   [`HttpClientHandle`](client::HttpClientHandle) beside it: JSON and SSE
//!   replies, sessions (one new session after a 404), `Last-Event-ID`
//!   resumption, and the 2026-07-28 request headers and cancellation by closing
//!   the stream.
//!
//! Internals: `guard.rs` (Host/Origin/Accept/Content-Type/version checks, pure
//! functions), `session.rs` (one session: its streams, replay buffers, the
//! routing of what its [`Sender`](crate::Sender) sends, and the idle reaper),
//! `body.rs` (the response body fed by a channel).

pub mod admin;
pub mod auth;
mod body;
pub mod client;
mod clock;
mod counted;
mod guard;
pub mod legacy;
pub mod mcp_headers;
pub mod resource;
pub mod server;
pub(crate) mod session;
pub mod sse_client;
pub mod stateless;
