//! Shared test helpers: the conformance-suite fixture server and a harness that
//! drives `Server::handle` with a recording sink, every call bounded by a timeout.
#![allow(dead_code)]

pub mod conformance_fixture;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::server::testing::RecordingSink;
use switchboard::server::{Server, SessionState};
use switchboard_protocol::jsonrpc::{ErrorObject, Id, Request};
use switchboard_protocol::types::{ClientCapabilities, ClientRequest};
use switchboard_protocol::ProtocolVersion;

/// Every revision, oldest first.
pub const ALL: [ProtocolVersion; 5] = ProtocolVersion::ALL;

/// A typed client request from a method and JSON params.
pub fn request(method: &str, params: Value) -> ClientRequest {
    let req = Request {
        id: Id::from(1),
        method: method.to_owned(),
        params: Some(serde_json::value::to_raw_value(&params).unwrap()),
    };
    ClientRequest::from_request(&req).expect("params decode")
}

/// One server, one session, one revision, one client capability set.
pub struct Harness {
    pub server: Server,
    pub session: SessionState,
    pub version: ProtocolVersion,
    pub caps: ClientCapabilities,
}

impl Harness {
    pub fn new(server: Server, version: ProtocolVersion) -> Self {
        Harness {
            server,
            session: SessionState::new(),
            version,
            caps: ClientCapabilities::default(),
        }
    }

    pub fn with_caps(mut self, caps: Value) -> Self {
        self.caps = serde_json::from_value(caps).unwrap();
        self
    }

    /// Calls `Server::handle` with a fresh recording sink (returned for inspection),
    /// failing the test after 5 s.
    pub async fn call_with(
        &self,
        method: &str,
        params: Value,
        sink: Arc<RecordingSink>,
    ) -> Result<Value, ErrorObject> {
        tokio::time::timeout(
            Duration::from_secs(5),
            self.server.handle(
                &self.session,
                self.version,
                &self.caps,
                request(method, params),
                sink,
            ),
        )
        .await
        .expect("Server::handle timed out")
    }

    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        self.call_with(method, params, RecordingSink::new()).await
    }

    /// `tools/call` of `name` with `arguments`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, ErrorObject> {
        self.call("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }
}
