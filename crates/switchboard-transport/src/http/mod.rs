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
//!
//! Not yet here, and where each will go:
//!
//! - The 2026-07-28 stateless shape (POST only, no sessions, `Mcp-Method`/`Mcp-Name`
//!   header checks, closing a stream cancels its request): a second dispatch in
//!   `server.rs` chosen per POST by `MCP-Protocol-Version` (today a header naming
//!   2026-07-28 is refused with 400 as unsupported; see
//!   [`server::HttpServerConfig::supported_versions`]). Its checks of the
//!   `Mcp-*` headers belong in `guard.rs`.
//! - The legacy HTTP+SSE transport (2024-11-05: `GET /sse` with an `endpoint`
//!   event, POSTs answered 202): its own module `legacy_sse.rs`, mounted by the
//!   same listener on its own paths, reusing `session.rs` (a session with only a
//!   standalone stream) and `body.rs`.
//! - The Streamable HTTP client: `client.rs`, reusing `codec::sse::SseParser` for
//!   replies and the same [`Transport`](crate::Transport) halves.
//!
//! Internals: `guard.rs` (Host/Origin/Accept/Content-Type/version checks, pure
//! functions), `session.rs` (one session: its streams, replay buffers and the
//! router task draining its [`Sender`](crate::Sender) queue), `body.rs` (the
//! response body fed by a channel).

mod body;
mod guard;
pub mod server;
mod session;
