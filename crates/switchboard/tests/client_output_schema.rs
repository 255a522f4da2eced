//! The client's `structuredContent` check against the `outputSchema` of its last
//! `tools/list` (MCP 2025-06-18+ "Tools → Output Schema": clients SHOULD
//! validate). The library's `Server` refuses to send structured content that
//! breaks its own schema (-32603), so the server that misbehaves here is built on
//! the library's JSON-RPC peer (`switchboard::peer`), answering `initialize` /
//! `server/discover`, `tools/list` and `tools/call` itself. Every await is bounded.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use switchboard::peer::{self, Handler, HandlerContext, HandlerFuture, Peer, PeerConfig};
use switchboard::server::{ServeOptions, Server};
use switchboard::{Client, ClientOptions, EraPolicy};
use switchboard_protocol::jsonrpc::{ErrorObject, Notification, Request};
use switchboard_protocol::types::{
    CallToolResult, Implementation, ServerNotification, TextContent,
};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion::{self, *};
use switchboard_transport::{memory, TransportConfig};
use tokio::sync::mpsc;

const BOUND: Duration = Duration::from_secs(10);

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("the test's bound elapsed")
}

/// The `weather` tool's `outputSchema`.
fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
        "required": ["temperature"]
    })
}

/// A server that lists `weather` with [`output_schema`] and answers each
/// `tools/call` with whatever `answer` holds then. Its `tools/list` results carry
/// `ttlMs` as `ttl` holds then (none when `None`), in every revision.
struct Lying {
    answer: Arc<Mutex<Value>>,
    ttl: Arc<Mutex<Option<i64>>>,
}

impl Handler for Lying {
    fn request(&self, request: Request, _cx: HandlerContext) -> HandlerFuture {
        let version = request
            .params_as::<Value>()
            .ok()
            .and_then(|p| p["protocolVersion"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "lying", "version": "1"}
            }),
            "server/discover" => json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": true}},
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "lying", "version": "1"}}
            }),
            "tools/list" => {
                let mut list = json!({"tools": [
                    {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": output_schema()},
                    {"name": "plain", "inputSchema": {"type": "object"}}
                ]});
                if let Some(ttl) = *self.ttl.lock().unwrap() {
                    list["ttlMs"] = json!(ttl);
                    list["cacheScope"] = json!("private");
                }
                list
            }
            "tools/call" => self.answer.lock().unwrap().clone(),
            other => {
                let e = ErrorObject::new(-32601, format!("{other}: method not found"));
                return Box::pin(async move { Err(e) });
            }
        };
        let raw = serde_json::value::to_raw_value(&result).unwrap();
        Box::pin(async move { Ok::<Box<RawValue>, ErrorObject>(raw) })
    }

    fn notification(&self, _notification: Notification) {}
}

struct Setup {
    client: Client,
    server: Peer,
    answer: Arc<Mutex<Value>>,
    ttl: Arc<Mutex<Option<i64>>>,
    list_changed: mpsc::UnboundedReceiver<()>,
}

impl Setup {
    fn answer(&self, v: Value) {
        *self.answer.lock().unwrap() = v;
    }

    /// The `ttlMs` of the next `tools/list` results (`None`: absent).
    fn ttl(&self, ttl: Option<i64>) {
        *self.ttl.lock().unwrap() = ttl;
    }

    /// Sends `notifications/tools/list_changed` and waits until the client saw it.
    async fn list_changed(&mut self) {
        let n = Notification::new("notifications/tools/list_changed", &json!({})).unwrap();
        within(self.server.notify(n)).await.unwrap();
        within(self.list_changed.recv()).await.unwrap();
    }
}

async fn lying(version: ProtocolVersion, validate: bool) -> Setup {
    let (client_end, server_end) = memory::pair(&TransportConfig::default());
    let answer = Arc::new(Mutex::new(Value::Null));
    // A day: a 2026-07-28 list must carry a ttlMs, and 0 (or none) means stale.
    let ttl = Arc::new(Mutex::new(Some(86_400_000)));
    let (server, driver) = peer::connect(
        server_end,
        PeerConfig::default(),
        Arc::new(Lying {
            answer: answer.clone(),
            ttl: ttl.clone(),
        }),
    );
    tokio::spawn(driver.run());
    let (tx, list_changed) = mpsc::unbounded_channel();
    let mut options =
        ClientOptions::new(Implementation::new("c", "1")).with_notifications(move |n| {
            if matches!(n, ServerNotification::ToolListChanged(_)) {
                let _ = tx.send(());
            }
        });
    options.supported = Supported::new([version]).unwrap();
    options.validate_structured_content = validate;
    if version == V2026_07_28 {
        options = options.with_era(EraPolicy::Modern);
    }
    let client = within(Client::connect(client_end, options)).await.unwrap();
    assert_eq!(client.protocol_version(), version);
    Setup {
        client,
        server,
        answer,
        ttl,
        list_changed,
    }
}

fn result(structured: Option<Value>, is_error: bool) -> Value {
    let mut v = json!({"content": [{"type": "text", "text": "sunny"}]});
    if let Some(s) = structured {
        v["structuredContent"] = s;
    }
    if is_error {
        v["isError"] = json!(true);
    }
    v
}

fn good() -> Value {
    result(
        Some(json!({"temperature": 21.5, "conditions": "sunny"})),
        false,
    )
}

fn bad() -> Value {
    result(Some(json!({"temperature": "warm"})), false)
}

#[tokio::test]
async fn structured_content_is_checked_against_the_listed_output_schema() {
    for version in [V2025_06_18, V2025_11_25, V2026_07_28] {
        let mut s = lying(version, true).await;
        let c = s.client.clone();
        // Not listed yet: nothing to check against, taken as sent.
        s.answer(bad());
        assert!(within(c.call_tool("weather", json!({}))).await.is_ok());

        within(c.list_tools()).await.unwrap();
        s.answer(good());
        let r = within(c.call_tool("weather", json!({}))).await.unwrap();
        assert_eq!(r.structured_content.unwrap()["temperature"], 21.5);

        s.answer(bad());
        let e = within(c.call_tool("weather", json!({}))).await.unwrap_err();
        assert!(e.is_invalid_structured_content(), "{version}: {e}");
        assert!(!e.is_protocol());
        assert_eq!(e.method(), Some("tools/call"));
        let text = e.to_string();
        assert!(text.contains("does not match its outputSchema"), "{text}");
        assert!(text.contains("/temperature"), "{text}");
        let got = e.call_tool_result().expect("the result is kept");
        assert_eq!(
            got.structured_content.as_ref().unwrap()["temperature"],
            "warm"
        );

        // An outputSchema binds the server to send structuredContent.
        s.answer(result(None, false));
        let e = within(c.call_tool("weather", json!({}))).await.unwrap_err();
        assert!(e.is_invalid_structured_content(), "{e}");
        assert!(e.to_string().contains("has no structuredContent"), "{e}");

        // An isError result reports a failure, not the tool's output.
        s.answer(result(Some(json!({"why": "no sensor"})), true));
        assert!(within(c.call_tool("weather", json!({})))
            .await
            .unwrap()
            .is_error());
        // A tool without an outputSchema is not checked.
        s.answer(bad());
        assert!(within(c.call_tool("plain", json!({}))).await.is_ok());

        // A list change forgets the schemas until the next tools/list.
        if version != V2026_07_28 {
            s.list_changed().await;
            assert!(
                within(c.call_tool("weather", json!({}))).await.is_ok(),
                "{version}: the schema was forgotten"
            );
            within(c.list_tools()).await.unwrap();
            assert!(within(c.call_tool("weather", json!({})))
                .await
                .unwrap_err()
                .is_invalid_structured_content());
        }
        // list_tools_page keeps the schemas of its page as well.
        let c2 = lying(version, true).await;
        within(c2.client.list_tools_page(None)).await.unwrap();
        c2.answer(bad());
        assert!(within(c2.client.call_tool("weather", json!({})))
            .await
            .unwrap_err()
            .is_invalid_structured_content());
    }
}

/// In 2026-07-28 `structuredContent` may be any JSON value; the schema decides.
#[tokio::test]
async fn any_json_value_is_checked_in_2026() {
    let s = lying(V2026_07_28, true).await;
    within(s.client.list_tools()).await.unwrap();
    s.answer(result(Some(json!([1, 2])), false));
    let e = within(s.client.call_tool("weather", json!({})))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("is not of type \"object\""), "{e}");
}

/// `ClientOptions::validate_structured_content = false` takes results as sent; a
/// revision without `outputSchema` (before 2025-06-18) is never checked.
#[tokio::test]
async fn the_check_can_be_turned_off_and_older_revisions_are_not_checked() {
    for (version, validate) in [
        (V2025_11_25, false),
        (V2025_03_26, true),
        (V2024_11_05, true),
    ] {
        let s = lying(version, validate).await;
        within(s.client.list_tools()).await.unwrap();
        s.answer(bad());
        let r = within(s.client.call_tool("weather", json!({})))
            .await
            .unwrap();
        assert_eq!(
            r.structured_content.unwrap()["temperature"],
            "warm",
            "{version}"
        );
    }
}

/// Against the library's own `Server`, conforming results pass the check.
#[tokio::test]
async fn the_librarys_server_passes_the_check() {
    let tool = serde_json::from_value(json!({
        "name": "weather", "inputSchema": {"type": "object"}, "outputSchema": output_schema()
    }))
    .unwrap();
    let server = Server::builder(Implementation::new("s", "1"))
        .tool(tool, |_args, _ctx| async {
            Ok(CallToolResult {
                content: vec![TextContent::new("21.5").into()],
                structured_content: Some(json!({"temperature": 21.5})),
                ..Default::default()
            })
        })
        .build()
        .unwrap();
    for era in [EraPolicy::Legacy, EraPolicy::Modern] {
        let (client_end, server_end) = memory::pair(&TransportConfig::default());
        tokio::spawn(server.serve(server_end, ServeOptions::default()).run());
        let options = ClientOptions::new(Implementation::new("c", "1")).with_era(era);
        let client = within(Client::connect(client_end, options)).await.unwrap();
        within(client.list_tools()).await.unwrap();
        let r = within(client.call_tool("weather", json!({})))
            .await
            .unwrap();
        assert_eq!(r.structured_content.unwrap()["temperature"], 21.5);
    }
}

/// A 2026-07-28 `tools/list` result's `ttlMs` bounds how long its schemas are
/// used: once it has run out, results are taken as sent until the next
/// `tools/list`; `ttlMs` 0, and none (which counts as 0, "Caching"), are stale
/// at once. Legacy revisions have no `ttlMs`: one a server sends anyway does not
/// stop the check.
#[tokio::test]
async fn a_2026_tools_list_ttl_bounds_the_use_of_its_schemas() {
    let s = lying(V2026_07_28, true).await;
    let c = s.client.clone();
    s.answer(bad());
    s.ttl(Some(1500));
    within(c.list_tools()).await.unwrap();
    assert!(
        within(c.call_tool("weather", json!({})))
            .await
            .unwrap_err()
            .is_invalid_structured_content(),
        "within its ttlMs the schema is used"
    );
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let r = within(c.call_tool("weather", json!({})))
        .await
        .expect("past its ttlMs the schema is unknown");
    assert_eq!(r.structured_content.unwrap()["temperature"], "warm");
    // The next tools/list brings the check back.
    s.ttl(Some(86_400_000));
    within(c.list_tools()).await.unwrap();
    assert!(within(c.call_tool("weather", json!({})))
        .await
        .unwrap_err()
        .is_invalid_structured_content());
    // Stale at once: 0, none, negative; list_tools_page reads its page's too.
    for ttl in [Some(0), None, Some(-5)] {
        s.ttl(ttl);
        within(c.list_tools()).await.unwrap();
        assert!(
            within(c.call_tool("weather", json!({}))).await.is_ok(),
            "ttlMs {ttl:?}"
        );
        s.ttl(Some(86_400_000));
        within(c.list_tools_page(None)).await.unwrap();
        assert!(within(c.call_tool("weather", json!({})))
            .await
            .unwrap_err()
            .is_invalid_structured_content());
        s.ttl(ttl);
        within(c.list_tools_page(None)).await.unwrap();
        assert!(
            within(c.call_tool("weather", json!({}))).await.is_ok(),
            "list_tools_page, ttlMs {ttl:?}"
        );
    }

    let s = lying(V2025_11_25, true).await;
    s.ttl(Some(0));
    within(s.client.list_tools()).await.unwrap();
    s.answer(bad());
    assert!(within(s.client.call_tool("weather", json!({})))
        .await
        .unwrap_err()
        .is_invalid_structured_content());
}
