//! Announcing what changed on a server: the tool, prompt or resource list, or one
//! resource's contents, so that every client that asked hears of it.
//!
//! [`Announcer`] is a cheap handle (get one from
//! [`ServerBuilder::announcer`](super::ServerBuilder::announcer) before build, e.g. for a tool handler, or
//! [`Server::announcer`](super::Server::announcer) after). Each announcement reaches:
//!
//! - every legacy session being served (2024-11-05 to 2025-11-25): as
//!   `notifications/tools/list_changed`, `notifications/prompts/list_changed`,
//!   `notifications/resources/list_changed` (when the server declares that list's
//!   `listChanged`, see [`ServerBuilder::list_changed`](super::ServerBuilder::list_changed)),
//!   or `notifications/resources/updated{uri}` (only to sessions that did
//!   `resources/subscribe` to exactly that URI), once the session is initialized;
//! - every open 2026-07-28 `subscriptions/listen` stream whose filter asked for it,
//!   tagged with the listen's subscription id (2026-07-28 "Server features →
//!   Subscriptions").
//!
//! Each announcement is numbered. A session hears of a resource's update only when
//! the update was announced after its `resources/subscribe` was handled: the check
//! is made against the announcement's number, not against the subscription as it
//! stands when the session's task gets round to it, so a change made before a
//! subscription is never reported after it.
//!
//! Delivery is best effort: a session too slow to keep up with
//! [`CHANGE_BUFFER`] announcements misses the oldest (each notification only says
//! "re-read", so a later one covers an earlier one).
//!
//! This module must not know transports or sessions; it only fans announcements
//! out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::broadcast;

/// How many announcements wait for a slow session before the oldest are dropped:
/// 64.
pub const CHANGE_BUFFER: usize = 64;

/// One announced change.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The tool list changed (`notifications/tools/list_changed`).
    ToolsListChanged,
    /// The prompt list changed (`notifications/prompts/list_changed`).
    PromptsListChanged,
    /// The resource list changed (`notifications/resources/list_changed`).
    ResourcesListChanged,
    /// The resource at this URI changed (`notifications/resources/updated{uri}`).
    ResourceUpdated(String),
}

/// Announces changes to every session and listen stream of a server (see the
/// module documentation). Cloneable; clones share one channel.
#[derive(Debug, Clone)]
pub struct Announcer {
    tx: broadcast::Sender<Announced>,
    /// The number the next announcement gets.
    next: Arc<AtomicU64>,
}

/// One announcement as it travels: its number (see [`Announcer::mark`]) and the
/// change.
pub(crate) type Announced = (u64, Change);

impl Default for Announcer {
    fn default() -> Self {
        Announcer {
            tx: broadcast::channel(CHANGE_BUFFER).0,
            next: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Announcer {
    /// Announces `change`. Returns how many sessions and listen streams were
    /// listening (0 is not an error: nobody to tell).
    pub fn announce(&self, change: Change) -> usize {
        let number = self.next.fetch_add(1, Ordering::SeqCst);
        self.tx.send((number, change)).unwrap_or(0)
    }

    /// The number the next announcement will get: every announcement numbered at
    /// or above it comes after this call (a subscription records it).
    pub(crate) fn mark(&self) -> u64 {
        self.next.load(Ordering::SeqCst)
    }

    /// Announces that the tool list changed.
    pub fn tools_changed(&self) -> usize {
        self.announce(Change::ToolsListChanged)
    }

    /// Announces that the prompt list changed.
    pub fn prompts_changed(&self) -> usize {
        self.announce(Change::PromptsListChanged)
    }

    /// Announces that the resource list changed.
    pub fn resources_changed(&self) -> usize {
        self.announce(Change::ResourcesListChanged)
    }

    /// Announces that the resource at `uri` changed.
    pub fn resource_updated(&self, uri: impl Into<String>) -> usize {
        self.announce(Change::ResourceUpdated(uri.into()))
    }

    /// A receiver of every later announcement.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Announced> {
        self.tx.subscribe()
    }
}

/// The next announcement, skipping over a gap (lag); `None` never happens while
/// the server lives (the channel closes only when every `Announcer` is gone, and
/// the server keeps one).
pub(crate) async fn next(rx: &mut broadcast::Receiver<Announced>) -> Option<Announced> {
    loop {
        match rx.recv().await {
            Ok(c) => return Some(c),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::debug!(missed = n, "a slow listener missed announcements");
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_subscriber_hears_each_change() {
        let a = Announcer::default();
        assert_eq!(a.tools_changed(), 0);
        let mut r1 = a.subscribe();
        let mut r2 = a.clone().subscribe();
        assert_eq!(a.mark(), 1, "the unheard announcement still took a number");
        assert_eq!(a.resource_updated("test://x"), 2);
        assert_eq!(a.mark(), 2);
        let heard = Some((1, Change::ResourceUpdated("test://x".into())));
        assert_eq!(next(&mut r1).await, heard);
        assert_eq!(next(&mut r2).await, heard);
    }
}
