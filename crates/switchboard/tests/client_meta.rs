//! `RequestOptions::meta` (`CallOptions`) end to end: the library's `Client`
//! against `Server::serve` over `memory::pair`, in every era. A tool reports the
//! `_meta` it was called with (`ToolContext::meta`), so the test sees what reached
//! the server; for the other methods (lists, `prompts/get`, `resources/read`,
//! `completion/complete`), whose handlers get no `_meta`, a relay between the two
//! ends records every request on its way to the server. Every await is bounded.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchboard::server::{ServeOptions, Server};
use switchboard::{CallOptions, Client, ClientOptions, EraPolicy};
use switchboard_protocol::jsonrpc::Message;
use switchboard_protocol::types::{
    meta, CallToolResult, ElicitRequestParams, ElicitResult, Implementation, TextContent,
};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion::{self, *};
use switchboard_transport::{memory, Inbound, Transport, TransportConfig};

const BOUND: Duration = Duration::from_secs(10);

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("the test's bound elapsed")
}

/// Every `_meta` the `meta` tool was called with, in order (one per attempt: a
/// 2026-07-28 `input_required` round runs the handler again).
type Seen = Arc<Mutex<Vec<Map<String, Value>>>>;

/// A server with `meta` (records its `_meta`, answers "ok") and `ask` (records
/// it too, then elicits: a 2026-07-28 `input_required` round trip).
fn server(seen: &Seen) -> Server {
    let tool = |name: &str| {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    };
    let (s1, s2) = (seen.clone(), seen.clone());
    Server::builder(Implementation::new("meta-server", "1"))
        .tool(tool("meta"), move |_args, ctx| {
            s1.lock().unwrap().push(ctx.meta().clone());
            async move { Ok(text("ok")) }
        })
        .tool(tool("ask"), move |_args, ctx| {
            s2.lock().unwrap().push(ctx.meta().clone());
            async move {
                let params: ElicitRequestParams = serde_json::from_value(json!({
                    "message": "name?",
                    "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}
                }))
                .unwrap();
                let answer = ctx.elicit(params).await?;
                Ok(text(&format!("{:?}", answer.action)))
            }
        })
        .build()
        .unwrap()
}

fn text(t: &str) -> CallToolResult {
    CallToolResult {
        content: vec![TextContent::new(t).into()],
        ..Default::default()
    }
}

async fn connect(server: &Server, version: ProtocolVersion) -> Client {
    let (client_end, server_end) = memory::pair(&TransportConfig::default());
    tokio::spawn(server.serve(server_end, ServeOptions::default()).run());
    let mut options = ClientOptions::new(Implementation::new("meta-client", "1")).with_elicitation(
        |_, _| async {
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "decline"})).unwrap())
        },
    );
    options.supported = Supported::new([version]).unwrap();
    if version == V2026_07_28 {
        options = options.with_era(EraPolicy::Modern);
    }
    within(Client::connect(client_end, options))
        .await
        .expect("connects")
}

fn caller_options() -> CallOptions {
    CallOptions::new()
        .meta_entry(
            meta::TRACEPARENT,
            json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        )
        .meta_entry("com.example/tenant", json!({"id": 7}))
}

/// In every revision the caller's members reach the server beside the library's
/// `progressToken`; in 2026-07-28 beside the `io.modelcontextprotocol/*` members
/// the library fills in, which the caller's do not disturb.
#[tokio::test]
async fn the_callers_meta_reaches_the_tool_in_every_era() {
    for version in [
        V2024_11_05,
        V2025_03_26,
        V2025_06_18,
        V2025_11_25,
        V2026_07_28,
    ] {
        let seen = Seen::default();
        let client = connect(&server(&seen), version).await;
        assert_eq!(client.protocol_version(), version);
        let r =
            within(client.call_tool_with("meta", json!({}), caller_options().on_progress(|_| {})))
                .await
                .unwrap();
        assert!(!r.is_error(), "{version}");
        let got = seen.lock().unwrap().pop().expect("the tool ran");
        assert_eq!(
            got[meta::TRACEPARENT],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "{version}"
        );
        assert_eq!(got["com.example/tenant"], json!({"id": 7}), "{version}");
        assert!(got.contains_key(meta::PROGRESS_TOKEN), "{version}: {got:?}");
        if version == V2026_07_28 {
            assert_eq!(got[meta::PROTOCOL_VERSION], "2026-07-28");
            assert_eq!(got[meta::CLIENT_INFO]["name"], "meta-client");
            assert!(got[meta::CLIENT_CAPABILITIES]["elicitation"].is_object());
            assert_eq!(got.len(), 6, "{got:?}");
        } else {
            assert_eq!(got.len(), 3, "{version}: {got:?}");
        }
        // Without on_progress: no progressToken, the caller's members only.
        within(client.call_tool_with("meta", json!({}), caller_options()))
            .await
            .unwrap();
        let got = seen.lock().unwrap().pop().unwrap();
        assert!(!got.contains_key(meta::PROGRESS_TOKEN), "{version}");
        assert_eq!(got["com.example/tenant"], json!({"id": 7}));
        // The raw `request` takes the same options.
        let params = serde_json::value::to_raw_value(&json!({"name": "meta"})).unwrap();
        within(client.request("tools/call", Some(params), caller_options()))
            .await
            .unwrap();
        let got = seen.lock().unwrap().pop().unwrap();
        assert_eq!(got["com.example/tenant"], json!({"id": 7}), "{version}");
    }
}

/// A 2026-07-28 `input_required` retry is a new request: it carries the caller's
/// members again.
#[tokio::test]
async fn every_input_required_round_carries_the_callers_meta() {
    let seen = Seen::default();
    let client = connect(&server(&seen), V2026_07_28).await;
    let r = within(client.call_tool_with("ask", json!({}), caller_options()))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&r.content[0]).unwrap()["text"],
        "Decline"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "the first attempt and the retry");
    for got in seen.iter() {
        assert_eq!(got["com.example/tenant"], json!({"id": 7}));
        assert_eq!(got[meta::PROTOCOL_VERSION], "2026-07-28");
    }
}

/// Keys the caller may not set are refused before anything is sent: MCP's
/// reserved prefixes (among them the 2026-07-28 members the library fills in),
/// `progressToken`, and malformed keys.
#[tokio::test]
async fn reserved_and_malformed_keys_are_refused_and_nothing_is_sent() {
    for version in [V2025_11_25, V2026_07_28] {
        let seen = Seen::default();
        let client = connect(&server(&seen), version).await;
        for key in [
            meta::PROTOCOL_VERSION,
            meta::CLIENT_CAPABILITIES,
            meta::CLIENT_INFO,
            meta::LOG_LEVEL,
            "io.modelcontextprotocol/anything",
            meta::PROGRESS_TOKEN,
            "not a key",
        ] {
            let options = caller_options().meta_entry(key, json!("2025-06-18"));
            let e = within(client.call_tool_with("meta", json!({}), options))
                .await
                .unwrap_err();
            assert!(e.is_decode(), "{version} {key}: {e}");
            assert_eq!(e.method(), Some("tools/call"));
            let why = std::error::Error::source(&e).unwrap().to_string();
            assert!(
                why.contains(&format!("{key:?}")) || why.contains(key),
                "{why}"
            );
        }
        assert!(
            seen.lock().unwrap().is_empty(),
            "{version}: nothing reached the tool"
        );
        // The session is fine afterwards.
        within(client.call_tool_with("meta", json!({}), caller_options()))
            .await
            .unwrap();
        assert_eq!(seen.lock().unwrap().len(), 1);
    }
}

/// Each request that reached the server: method and params.
type Wire = Arc<Mutex<Vec<(String, Value)>>>;

/// A client end joined to `server_end` through a relay that records every
/// request it passes to the server (a batch is passed on item by item).
fn relayed(server_end: Transport) -> (Transport, Wire) {
    let config = TransportConfig::default();
    let (client_end, near) = memory::pair(&config);
    let (near_tx, mut near_rx) = near.split();
    let (far_tx, mut far_rx) = server_end.split();
    let wire = Wire::default();
    let seen = wire.clone();
    tokio::spawn(async move {
        loop {
            let messages = match near_rx.recv().await {
                Some(Inbound::Message(m)) => vec![m],
                Some(Inbound::Batch(items)) => items.into_iter().flatten().collect(),
                _ => return,
            };
            for m in messages {
                if let Message::Request(r) = &m {
                    let params = r.params_as::<Value>().unwrap_or(Value::Null);
                    seen.lock().unwrap().push((r.method.clone(), params));
                }
                if far_tx.send(m).await.is_err() {
                    return;
                }
            }
        }
    });
    tokio::spawn(async move {
        while let Some(Inbound::Message(m)) = far_rx.recv().await {
            if near_tx.send(m).await.is_err() {
                return;
            }
        }
    });
    (client_end, wire)
}

/// A server with two of each thing listed (one per page: every listing takes
/// two pages), a prompt with a completion, a resource template.
fn catalogue() -> Server {
    fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }
    let contents = |uri: String| -> Vec<switchboard_protocol::types::ResourceContents> {
        vec![from(
            json!({"uri": uri, "mimeType": "text/plain", "text": "x"}),
        )]
    };
    let prompt = |name: &str| -> switchboard_protocol::types::Prompt {
        from(json!({"name": name, "arguments": [{"name": "style"}]}))
    };
    let rendered = || -> switchboard_protocol::types::GetPromptResult {
        from(json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}))
    };
    Server::builder(Implementation::new("catalogue", "1"))
        .page_size(1)
        .tool(
            from(json!({"name": "t1", "inputSchema": {"type": "object"}})),
            |_, _| async { Ok(text("1")) },
        )
        .tool(
            from(json!({"name": "t2", "inputSchema": {"type": "object"}})),
            |_, _| async { Ok(text("2")) },
        )
        .resource(from(json!({"uri": "test://a", "name": "a"})), move |r| {
            let c = contents(r.uri);
            async move { Ok(c) }
        })
        .resource(from(json!({"uri": "test://b", "name": "b"})), move |r| {
            let c = contents(r.uri);
            async move { Ok(c) }
        })
        .resource_template(
            from(json!({"uriTemplate": "test://t/{id}", "name": "t"})),
            move |r| {
                let c = contents(r.uri);
                async move { Ok(c) }
            },
        )
        .resource_template(
            from(json!({"uriTemplate": "test://u/{id}", "name": "u"})),
            move |r| {
                let c = contents(r.uri);
                async move { Ok(c) }
            },
        )
        .prompt(prompt("greet"), move |_| {
            let r = rendered();
            async move { Ok(r) }
        })
        .prompt(prompt("part"), move |_| {
            let r = rendered();
            async move { Ok(r) }
        })
        .prompt_completion("greet", "style", |_| async {
            Ok(vec!["formal".to_owned()])
        })
        .build()
        .unwrap()
}

/// The `_with` variants of every typed call but `tools/call` (tested above) send
/// the caller's `_meta` members, on every page of a listing, beside the
/// library's own in 2026-07-28, in every revision.
#[tokio::test]
async fn the_callers_meta_reaches_the_server_from_every_typed_call() {
    let server = catalogue();
    for version in [
        V2024_11_05,
        V2025_03_26,
        V2025_06_18,
        V2025_11_25,
        V2026_07_28,
    ] {
        let (client_end, server_end) = memory::pair(&TransportConfig::default());
        tokio::spawn(server.serve(server_end, ServeOptions::default()).run());
        let (client_end, wire) = relayed(client_end);
        let mut options = ClientOptions::new(Implementation::new("meta-client", "1"));
        options.supported = Supported::new([version]).unwrap();
        if version == V2026_07_28 {
            options = options.with_era(EraPolicy::Modern);
        }
        let client = within(Client::connect(client_end, options))
            .await
            .expect("connects");
        assert_eq!(client.protocol_version(), version);
        wire.lock().unwrap().clear();

        let o = caller_options;
        assert_eq!(within(client.list_tools_with(o())).await.unwrap().len(), 2);
        let page = within(client.list_tools_page_with(None, o()))
            .await
            .unwrap();
        assert_eq!(page.tools.len(), 1);
        assert_eq!(
            within(client.list_resources_with(o())).await.unwrap().len(),
            2
        );
        assert_eq!(
            within(client.list_resource_templates_with(o()))
                .await
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            within(client.list_prompts_with(o())).await.unwrap().len(),
            2
        );
        let r = within(client.read_resource_with("test://t/7", o()))
            .await
            .unwrap();
        assert_eq!(r.contents.len(), 1);
        let p = within(client.get_prompt_with("greet", None, o()))
            .await
            .unwrap();
        assert_eq!(p.messages.len(), 1);
        // completion/complete: the server's `completions` is 2025-03-26+.
        let completes = version != V2024_11_05;
        if completes {
            let params = serde_json::from_value(json!({
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "style", "value": "f"}
            }))
            .unwrap();
            let c = within(client.complete_with(&params, o())).await.unwrap();
            assert_eq!(c.completion.values, ["formal"]);
        }

        let wire = wire.lock().unwrap();
        let count = |method: &str| wire.iter().filter(|(m, _)| m == method).count();
        assert_eq!(count("tools/list"), 3, "{version}: two pages, then one");
        assert_eq!(count("resources/list"), 2, "{version}");
        assert_eq!(count("resources/templates/list"), 2, "{version}");
        assert_eq!(count("prompts/list"), 2, "{version}");
        assert_eq!(count("resources/read"), 1, "{version}");
        assert_eq!(count("prompts/get"), 1, "{version}");
        assert_eq!(
            count("completion/complete"),
            usize::from(completes),
            "{version}"
        );
        assert_eq!(
            wire.len(),
            11 + usize::from(completes),
            "{version}: {wire:?}"
        );
        for (method, params) in wire.iter() {
            let got = &params["_meta"];
            assert_eq!(
                got[meta::TRACEPARENT],
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "{version} {method}: {params}"
            );
            assert_eq!(
                got["com.example/tenant"],
                json!({"id": 7}),
                "{version} {method}"
            );
            if version == V2026_07_28 {
                assert_eq!(got[meta::PROTOCOL_VERSION], "2026-07-28", "{method}");
                assert_eq!(got[meta::CLIENT_INFO]["name"], "meta-client", "{method}");
            } else {
                assert_eq!(
                    got.as_object().unwrap().len(),
                    2,
                    "{version} {method}: the caller's members only"
                );
            }
        }
        // The pages after the first carry their cursor beside the `_meta`.
        assert!(wire
            .iter()
            .any(|(m, p)| m == "tools/list" && p["cursor"].is_string()));
    }
}
