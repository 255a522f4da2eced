//! JSON-RPC 2.0 as MCP uses it: ids, the message envelope, batches, error codes.
//!
//! This module knows nothing of MCP methods or revisions beyond the envelope rules;
//! it must not decode `params` or `result` (that is [`crate::types`]).

pub mod code;
mod id;
mod message;
pub mod number;
mod peek;
mod scan;

pub(crate) use message::raw_opt_eq;
pub(crate) use scan::object_members;

pub use id::{Id, IdError, IntId};
pub use message::{
    decode_frame, encode_batch, Batching, DecodeError, DecodeErrorKind, ErrorObject, ErrorResponse,
    Frame, Message, MessageRef, Notification, Request, Response, JSONRPC_VERSION,
};
pub use peek::{may_have_member, peek, peek_tail, Peeked};
