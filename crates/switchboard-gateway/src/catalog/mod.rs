//! What the gateway knows of its upstreams' definitions: the tools'
//! `x-mcp-header` annotations (`tools`), the approved lock and its checks
//! (`pin`), the drift guard that applies a lock to what upstreams list
//! (`guard`), and which announced list changes it has judged (`changes`).
//! Must not know sessions or transports.

pub(crate) mod changes;
pub(crate) mod guard;
pub mod pin;
pub(crate) mod tools;
