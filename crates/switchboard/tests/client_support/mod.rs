//! A scripted MCP server for the client tests: the test reads each request from the
//! server end of a `memory::pair` and answers by hand. Every await is bounded.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::{Client, ClientOptions};
use switchboard_protocol::jsonrpc::{
    ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response,
};
use switchboard_protocol::types::Implementation;
use switchboard_transport::{memory, Inbound, Receiver, Sender, TransportConfig};

/// The bound on every await in these tests.
pub const BOUND: Duration = Duration::from_secs(10);

/// Awaits `f`, failing the test after [`BOUND`].
pub async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("the test's bound elapsed")
}

/// The server end, driven by hand.
pub struct Script {
    pub tx: Sender,
    pub rx: Receiver,
}

pub fn options() -> ClientOptions {
    ClientOptions::new(Implementation::new("test-client", "0.1.0"))
}

/// A client end and a scripted server end.
pub fn pair() -> (switchboard_transport::Transport, Script) {
    let (client, server) = memory::pair(&TransportConfig::default());
    let (tx, rx) = server.split();
    (client, Script { tx, rx })
}

impl Script {
    /// The next message; panics on close.
    pub async fn recv(&mut self) -> Message {
        match within(self.rx.recv()).await {
            Some(Inbound::Message(m)) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    pub async fn recv_request(&mut self) -> Request {
        match self.recv().await {
            Message::Request(r) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    pub async fn recv_notification(&mut self) -> Notification {
        match self.recv().await {
            Message::Notification(n) => n,
            other => panic!("expected a notification, got {other:?}"),
        }
    }

    /// The next event must be the close.
    pub async fn expect_closed(&mut self) {
        match within(self.rx.recv()).await {
            Some(Inbound::Closed { .. }) => {}
            other => panic!("expected the close, got {other:?}"),
        }
    }

    pub async fn send(&self, m: impl Into<Message>) {
        within(self.tx.send(m.into())).await.expect("send");
    }

    pub async fn respond(&self, id: &Id, result: Value) {
        self.send(Response::new(id.clone(), &result).unwrap()).await;
    }

    pub async fn respond_error(&self, id: &Id, code: i64, message: &str) {
        self.send(ErrorResponse::new(
            Some(id.clone()),
            ErrorObject::new(code, message),
        ))
        .await;
    }

    pub async fn notify(&self, method: &str, params: Value) {
        self.send(Notification::new(method, &params).unwrap()).await;
    }

    pub async fn request(&self, id: impl Into<Id>, method: &str, params: Value) {
        self.send(Request::new(id.into(), method, &params).unwrap())
            .await;
    }

    /// Answers `initialize` with `version` and `capabilities`, then expects
    /// `notifications/initialized`. Returns the `initialize` params.
    pub async fn handshake(&mut self, version: &str, capabilities: Value) -> Value {
        let init = self.recv_request().await;
        assert_eq!(init.method, "initialize");
        let params: Value = init.params_as().unwrap();
        self.respond(
            &init.id,
            json!({
                "protocolVersion": version,
                "capabilities": capabilities,
                "serverInfo": {"name": "scripted", "version": "9.9"},
                "instructions": "be nice"
            }),
        )
        .await;
        let note = self.recv_notification().await;
        assert_eq!(note.method, "notifications/initialized");
        params
    }
}

/// A connected client and its scripted server, after a 2025-11-25 handshake with
/// `capabilities`.
pub async fn connected(options: ClientOptions, capabilities: Value) -> (Client, Script) {
    let (transport, mut script) = pair();
    let (client, _) = within(async {
        tokio::join!(
            Client::connect(transport, options),
            script.handshake("2025-11-25", capabilities)
        )
    })
    .await;
    (client.expect("connect"), script)
}

/// The text of the first content block of a `tools/call` result.
pub fn first_text(r: &switchboard_protocol::types::CallToolResult) -> String {
    let v = serde_json::to_value(&r.content[0]).unwrap();
    v["text"].as_str().unwrap().to_owned()
}
