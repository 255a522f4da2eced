//! The downstream side: what clients open. A legacy-era session (2024-11-05
//! HTTP+SSE, Streamable HTTP 2025-03-26 to 2025-11-25) is served by `session`; a
//! stateless 2026-07-28 exchange by `exchange`; `relay` relays the calls of
//! every legacy session, these and the gateway's; `input` asks a legacy
//! client a 2026-07-28 upstream's input requests; `watch` measures what a
//! session answers. Must not know how
//! upstreams are reached (module `upstream`).

pub(crate) mod exchange;
pub(crate) mod input;
pub(crate) mod relay;
pub(crate) mod session;
pub(crate) mod watch;
