//! Argument completion: per prompt argument or resource-template variable, a handler
//! that proposes values for what the user typed ("Server features → Utilities →
//! Completion").
//!
//! The server caps the answer at 100 values (`COMPLETION_MAX_VALUES`, the spec's
//! limit); `total` is the number of values the handler found and `hasMore` says
//! whether some were cut. A reference to an unknown prompt or template → -32602; a
//! known one whose argument has no handler gets an empty list. The `completions`
//! capability is declared only when some handler is registered.
//!
//! This module must not know about transports, JSON-RPC ids or sessions.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchboard_protocol::types::{CompleteResultCompletion, COMPLETION_MAX_VALUES};

use super::context::BoxFuture;
use super::HandlerError;

/// What a completion handler gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionRequest {
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Values already resolved for other arguments (`context.arguments`, 2025-06-18+;
    /// empty when absent).
    pub context: BTreeMap<String, String>,
}

pub(crate) type CompletionHandler = Arc<
    dyn Fn(CompletionRequest) -> BoxFuture<'static, Result<Vec<String>, HandlerError>>
        + Send
        + Sync,
>;

/// What a completion handler is for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum CompletionKey {
    /// (prompt name, argument name).
    Prompt(String, String),
    /// (URI template, variable name).
    Template(String, String),
}

/// The `completion` object for all the values a handler found: at most 100, `total`
/// the full count, `hasMore` whether any were cut.
pub(crate) fn capped(mut values: Vec<String>) -> CompleteResultCompletion {
    let total = values.len();
    let has_more = total > COMPLETION_MAX_VALUES;
    values.truncate(COMPLETION_MAX_VALUES);
    CompleteResultCompletion {
        values,
        total: Some(i64::try_from(total).unwrap_or(i64::MAX)),
        has_more: Some(has_more),
        extra: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_at_the_spec_limit() {
        let c = capped((0..250).map(|i| i.to_string()).collect());
        assert_eq!(c.values.len(), 100);
        assert_eq!((c.total, c.has_more), (Some(250), Some(true)));
        let c = capped(vec!["a".into()]);
        assert_eq!((c.total, c.has_more), (Some(1), Some(false)));
    }
}
