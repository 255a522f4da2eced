//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::future::Future;
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;
use switchboard_protocol::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, Response,
};
use switchboard_transport::{Inbound, Receiver};

/// The bound on every await that could hang. Generous: it only turns a hang into
/// a failure, it is not a performance assertion.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Awaits `fut`, failing the test if it does not finish within [`LIMIT`].
pub async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(LIMIT, fut).await {
        Ok(out) => out,
        Err(_) => panic!("timed out: {what}"),
    }
}

/// The next inbound event; fails on a hang or an ended stream.
pub async fn next(rx: &mut Receiver) -> Inbound {
    within("next inbound event", rx.recv())
        .await
        .expect("the receiver ended without Closed")
}

/// The next inbound event, which must be a single message.
pub async fn next_message(rx: &mut Receiver) -> Message {
    match next(rx).await {
        Inbound::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

pub fn request(id: i64, method: &str) -> Message {
    Message::Request(Request::new(id, method, &json!({"k": [1, "two", null]})).unwrap())
}

pub fn notification(method: &str) -> Message {
    Message::Notification(Notification::new(method, &json!({"progress": 0.5})).unwrap())
}

pub fn response(id: &str) -> Message {
    // A number beyond 2^64 and a decimal with a trailing zero: kept as written.
    let result = serde_json::value::RawValue::from_string(
        r#"{"content":[],"big":123456789012345678901234567890,"n":1.50}"#.to_owned(),
    )
    .unwrap();
    Message::Response(Response {
        id: id.into(),
        result,
    })
}

pub fn error(id: i64) -> Message {
    Message::Error(ErrorResponse::new(
        Some(id.into()),
        ErrorObject::new(-32601, "Method not found"),
    ))
}

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(buf);
        // Keep them visible with --nocapture as well.
        eprint!("{}", String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs (once per test binary) a global subscriber that records every log
/// line at INFO and above.
pub fn capture_logs() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_writer(|| Capture)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}

/// The recorded log lines that mention `needle`.
pub fn log_lines_with(needle: &str) -> Vec<String> {
    let logs = LOGS.lock().unwrap();
    String::from_utf8_lossy(&logs)
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_owned)
        .collect()
}
