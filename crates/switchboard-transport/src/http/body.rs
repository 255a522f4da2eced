//! The response body of every HTTP reply: fixed bytes, or events fed through a
//! channel (SSE streams), optionally holding a guard whose drop tells the session
//! that the connection is gone.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::mpsc;

use super::session::ConnGuard;

/// A response body: `prefix` chunks first, then whatever arrives on `rx` until it
/// closes.
pub(crate) struct Body {
    prefix: VecDeque<Bytes>,
    rx: Option<mpsc::Receiver<Bytes>>,
    _guard: Option<ConnGuard>,
}

impl Body {
    /// An empty body.
    pub(crate) fn empty() -> Self {
        Body {
            prefix: VecDeque::new(),
            rx: None,
            _guard: None,
        }
    }

    /// A body of exactly these bytes.
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Body {
            prefix: VecDeque::from([bytes.into()]),
            rx: None,
            _guard: None,
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
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        match self.rx.as_mut() {
            None => Poll::Ready(None),
            Some(rx) => match rx.poll_recv(cx) {
                Poll::Ready(Some(chunk)) => Poll::Ready(Some(Ok(Frame::data(chunk)))),
                Poll::Ready(None) => {
                    self.rx = None;
                    Poll::Ready(None)
                }
                Poll::Pending => Poll::Pending,
            },
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
