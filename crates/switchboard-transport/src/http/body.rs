//! The response body of every HTTP reply: fixed bytes, or events fed through a
//! channel (SSE streams), optionally holding a guard whose drop tells the session
//! that the connection is gone, and optionally writing an SSE comment
//! (`: keep-alive`) whenever the stream has been silent for an interval.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

use super::session::ConnGuard;

/// A response body: `prefix` chunks first, then whatever arrives on `rx` until it
/// closes.
pub(crate) struct Body {
    prefix: VecDeque<Bytes>,
    rx: Option<mpsc::Receiver<Bytes>>,
    _guard: Option<ConnGuard>,
    keep_alive: Option<KeepAlive>,
}

/// The keep-alive of a streamed body: a comment once the body has written
/// nothing for `every`.
struct KeepAlive {
    every: Duration,
    /// When the next comment is due; pushed back by every chunk written.
    due: Pin<Box<Sleep>>,
}

/// The SSE comment a silent stream gets: `: keep-alive`.
const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

impl Body {
    /// An empty body.
    pub(crate) fn empty() -> Self {
        Body {
            prefix: VecDeque::new(),
            rx: None,
            _guard: None,
            keep_alive: None,
        }
    }

    /// A body of exactly these bytes.
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Body {
            prefix: VecDeque::from([bytes.into()]),
            rx: None,
            _guard: None,
            keep_alive: None,
        }
    }

    /// A streamed body: `prefix`, then the chunks of `rx` (if any) until every
    /// sender is gone. `guard` is dropped with the body (the connection closed or
    /// the stream ended).
    pub(crate) fn stream(
        prefix: VecDeque<Bytes>,
        rx: Option<mpsc::Receiver<Bytes>>,
        guard: ConnGuard,
    ) -> Self {
        Body {
            prefix,
            rx,
            _guard: Some(guard),
            keep_alive: None,
        }
    }

    /// A streamed body of no session (a stateless 2026-07-28 exchange): `prefix`,
    /// then the chunks of `rx` (if any) until every sender is gone. Dropping the body
    /// (the connection closed) closes `rx`, which the feeding task notices.
    pub(crate) fn stream_owned(prefix: VecDeque<Bytes>, rx: Option<mpsc::Receiver<Bytes>>) -> Self {
        Body {
            prefix,
            rx,
            _guard: None,
            keep_alive: None,
        }
    }

    /// Writes `: keep-alive` whenever the stream has written nothing for
    /// `every` (none: never; a body without a channel never waits, so never
    /// gets one). For a long-lived SSE stream that may stay silent: proxies do
    /// not cut it, and a client can take a silence much longer than `every` for
    /// a dead connection.
    pub(crate) fn with_keep_alive(mut self, every: Option<Duration>) -> Self {
        self.keep_alive = every.filter(|_| self.rx.is_some()).map(|every| KeepAlive {
            every,
            due: Box::pin(tokio::time::sleep(every)),
        });
        self
    }

    /// A chunk goes out now: the next keep-alive is due `every` after it.
    fn wrote(&mut self) {
        if let Some(k) = &mut self.keep_alive {
            let at = Instant::now() + k.every;
            k.due.as_mut().reset(at);
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(chunk) = self.prefix.pop_front() {
            self.wrote();
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        let Some(rx) = self.rx.as_mut() else {
            return Poll::Ready(None);
        };
        match rx.poll_recv(cx) {
            Poll::Ready(Some(chunk)) => {
                self.wrote();
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
            Poll::Ready(None) => {
                self.rx = None;
                self.keep_alive = None;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let due = match &mut self.keep_alive {
                    Some(k) => k.due.as_mut().poll(cx).is_ready(),
                    None => false,
                };
                if !due {
                    return Poll::Pending;
                }
                self.wrote();
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                    KEEP_ALIVE_COMMENT,
                )))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_empty() && self.rx.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        if self.rx.is_none() {
            let n: usize = self.prefix.iter().map(Bytes::len).sum();
            SizeHint::with_exact(n as u64)
        } else {
            SizeHint::default()
        }
    }
}
