//! A [`ContextSink`] for tests: records every notification and request a handler
//! made, answers requests from a queue, and can be cancelled by hand.
//!
//! Not for production use; it must not know about transports either.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard_protocol::types::{ServerNotification, ServerRequest};
use tokio::sync::watch;

use super::context::{BoxFuture, ContextError, ContextSink};

/// Records calls; answers requests with the queued answers in order (a request with
/// nothing queued gets [`ContextError::Closed`]).
#[derive(Debug)]
pub struct RecordingSink {
    notifications: Mutex<Vec<ServerNotification>>,
    requests: Mutex<Vec<ServerRequest>>,
    answers: Mutex<VecDeque<Result<Value, ContextError>>>,
    cancel: watch::Sender<bool>,
}

impl Default for RecordingSink {
    fn default() -> Self {
        RecordingSink {
            notifications: Mutex::default(),
            requests: Mutex::default(),
            answers: Mutex::default(),
            cancel: watch::channel(false).0,
        }
    }
}

impl RecordingSink {
    /// A sink with nothing recorded and nothing queued, behind an `Arc`.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Queues the answer to the next request (the raw JSON `result`, or an error).
    pub fn push_answer(&self, answer: Result<Value, ContextError>) {
        self.answers.lock().unwrap().push_back(answer);
    }

    /// Every notification sent so far, oldest first.
    pub fn notifications(&self) -> Vec<ServerNotification> {
        self.notifications.lock().unwrap().clone()
    }

    /// Every request sent so far, oldest first.
    pub fn requests(&self) -> Vec<ServerRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// Marks the request cancelled (wakes [`ContextSink::cancelled`] waiters).
    pub fn cancel(&self) {
        self.cancel.send_replace(true);
    }
}

impl ContextSink for RecordingSink {
    fn notify(&self, notification: ServerNotification) -> BoxFuture<'_, Result<(), ContextError>> {
        self.notifications.lock().unwrap().push(notification);
        Box::pin(async { Ok(()) })
    }

    fn request(&self, request: ServerRequest) -> BoxFuture<'_, Result<Value, ContextError>> {
        self.requests.lock().unwrap().push(request);
        let answer = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Err(ContextError::Closed));
        Box::pin(async move { answer })
    }

    fn is_cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        let mut rx = self.cancel.subscribe();
        Box::pin(async move {
            // The sender lives in `self`, which outlives this future.
            let _ = rx.wait_for(|c| *c).await;
        })
    }
}
