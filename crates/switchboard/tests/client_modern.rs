//! The Client in the 2026-07-28 era over the in-memory pair: the `server/discover`
//! probe and its fallback (spec notes §6, stdio rules), `_meta` on every request,
//! MRTR rounds answered with the client's handlers (§5.5), `resultType` checks,
//! the -32022 version switch, the removed methods (`ping`, `logging/setLevel`,
//! `resources/subscribe`), against our own Server and against scripted servers.
//! Every await is bounded.

mod client_support;
#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;

use std::sync::{Arc, Mutex};

use client_support::{first_text, options, pair, within, Script};
use serde_json::{json, Value};
use switchboard::client::EraPolicy;
use switchboard::server::ServeOptions;
use switchboard::{CallOptions, Client};
use switchboard_protocol::types::{ElicitResult, LoggingLevel, ServerNotification};
use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::{memory, TransportConfig};

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

fn discover_result(versions: Value) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": {"tools": {}, "prompts": {}, "resources": {"subscribe": true}},
        "instructions": "modern and scripted",
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted-modern", "version": "2"}}
    })
}

/// Answers the probe as a 2026-07-28 server.
async fn modern_handshake(script: &mut Script) {
    let d = script.recv_request().await;
    assert_eq!(d.method, "server/discover");
    let p: Value = d.params_as().unwrap();
    assert_eq!(p["_meta"][META_VERSION], "2026-07-28");
    script
        .respond(&d.id, discover_result(json!(["2026-07-28", "2025-11-25"])))
        .await;
}

async fn modern_client(opts: switchboard::ClientOptions) -> (Client, Script) {
    let (transport, mut script) = pair();
    let (client, ()) = within(async {
        tokio::join!(
            Client::connect(transport, opts.with_era(EraPolicy::Auto)),
            modern_handshake(&mut script)
        )
    })
    .await;
    (client.expect("connect"), script)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_finds_our_dual_era_server_modern_and_calls_tools_with_progress() {
    within(async {
        let (client_end, server_end) = memory::pair(&TransportConfig::default());
        let server = echo_server::builder().build().unwrap();
        let session = server.serve(server_end, ServeOptions::default());
        let task = tokio::spawn(session.run());
        let client = Client::connect(client_end, options().with_era(EraPolicy::Auto))
            .await
            .unwrap();
        assert_eq!(client.era(), Era::Modern);
        assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
        assert_eq!(client.server_info().name, "echo-server");
        assert!(client.discover_result().is_some());
        assert!(client.server_capabilities().tools.is_some());

        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "slow_progress"));
        let r = client
            .call_tool("echo", json!({"text": "hi modern"}))
            .await
            .unwrap();
        assert_eq!(first_text(&r), "hi modern");

        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let r = client
            .call_tool_with(
                "slow_progress",
                json!({"steps": 3, "delay_ms": 1}),
                CallOptions::new()
                    .on_progress(move |p| s2.lock().unwrap().push(p.progress.as_f64().unwrap())),
            )
            .await
            .unwrap();
        assert_eq!(first_text(&r), "done");
        assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);

        // `ping` is gone in 2026-07-28: it becomes server/discover.
        client.ping().await.unwrap();
        // A tool error is a result; an unknown tool is a JSON-RPC error.
        assert!(client
            .call_tool("fail", json!({}))
            .await
            .unwrap()
            .is_error());
        let e = client.call_tool("nope", json!({})).await.unwrap_err();
        assert!(e.is_protocol(), "{e}");
        drop(client);
        within(task).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_carries_meta_and_log_level_replaces_set_level() {
    within(async {
        let (client, mut script) = modern_client(options()).await;
        assert_eq!(client.server_info().name, "scripted-modern");
        assert_eq!(
            client.instructions().as_deref(),
            Some("modern and scripted")
        );

        client.set_level(LoggingLevel::Warning).await.unwrap();
        let call = tokio::spawn({
            let c = client.clone();
            async move { c.list_tools().await }
        });
        let r = script.recv_request().await;
        assert_eq!(r.method, "tools/list");
        let p: Value = r.params_as().unwrap();
        assert_eq!(p["_meta"][META_VERSION], "2026-07-28");
        assert_eq!(
            p["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            json!({})
        );
        assert_eq!(
            p["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
            "test-client"
        );
        assert_eq!(p["_meta"]["io.modelcontextprotocol/logLevel"], "warning");
        script
            .respond(
                &r.id,
                json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"}),
            )
            .await;
        assert!(within(call).await.unwrap().unwrap().is_empty());

        // Methods removed in 2026-07-28 are refused locally when sent raw.
        let e = client
            .request("logging/setLevel", None, CallOptions::default())
            .await
            .unwrap_err();
        assert!(e.is_local_refusal(), "{e}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_is_answered_by_the_handlers_and_retried_with_a_new_id() {
    within(async {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let a2 = asked.clone();
        let opts = options().with_elicitation(move |p, _cx| {
            let a2 = a2.clone();
            async move {
                a2.lock().unwrap().push(serde_json::to_value(&p).unwrap());
                Ok(serde_json::from_value::<ElicitResult>(
                    json!({"action": "accept", "content": {"name": "Ada"}}),
                )
                .unwrap())
            }
        });
        let (client, mut script) = modern_client(opts).await;
        let call = tokio::spawn({
            let c = client.clone();
            async move { c.call_tool("greet", json!({"x": 1})).await }
        });
        // Round 1: ask for input, with state.
        let first = script.recv_request().await;
        assert_eq!(first.method, "tools/call");
        let p: Value = first.params_as().unwrap();
        assert_eq!(p["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"], json!({}));
        assert!(p.get("inputResponses").is_none());
        script
            .respond(
                &first.id,
                json!({"resultType": "input_required", "requestState": "st-1",
                       "inputRequests": {"who": {"method": "elicitation/create", "params": {
                           "mode": "form", "message": "Your name?",
                           "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}),
            )
            .await;
        // Round 2: the retry has a new id, the answers and the echoed state; ask again
        // without state.
        let second = script.recv_request().await;
        assert_eq!(second.method, "tools/call");
        assert_ne!(second.id, first.id, "a retry gets a new id");
        let p: Value = second.params_as().unwrap();
        assert_eq!(p["name"], "greet");
        assert_eq!(p["arguments"], json!({"x": 1}));
        assert_eq!(p["inputResponses"]["who"]["action"], "accept");
        assert_eq!(p["inputResponses"]["who"]["content"]["name"], "Ada");
        assert_eq!(p["requestState"], "st-1");
        assert_eq!(p["_meta"][META_VERSION], "2026-07-28");
        script
            .respond(
                &second.id,
                json!({"resultType": "input_required",
                       "inputRequests": {"again": {"method": "elicitation/create", "params": {
                           "message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}}}}),
            )
            .await;
        // Round 3: no requestState was sent, so none is echoed.
        let third = script.recv_request().await;
        let p: Value = third.params_as().unwrap();
        assert!(p.get("requestState").is_none(), "{p}");
        assert_eq!(p["inputResponses"]["again"]["action"], "accept");
        script
            .respond(
                &third.id,
                json!({"resultType": "complete", "content": [{"type": "text", "text": "hello Ada"}]}),
            )
            .await;
        let r = within(call).await.unwrap().unwrap();
        assert_eq!(first_text(&r), "hello Ada");
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 2);
        assert_eq!(asked[0]["message"], "Your name?");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mrtr_refuses_undeclared_input_unknown_result_types_and_endless_rounds() {
    within(async {
        let mut opts = options().with_roots(|_| async {
            Ok(serde_json::from_value(json!({"roots": [{"uri": "file:///w"}]})).unwrap())
        });
        opts.max_input_rounds = 2;
        let (client, mut script) = modern_client(opts).await;

        // Sampling was not declared: the call fails locally, nothing more is sent.
        let call = tokio::spawn({
            let c = client.clone();
            async move { c.call_tool("t", json!({})).await }
        });
        let r = script.recv_request().await;
        script
            .respond(
                &r.id,
                json!({"resultType": "input_required", "inputRequests": {"s": {
                    "method": "sampling/createMessage",
                    "params": {"messages": [], "maxTokens": 5}}}}),
            )
            .await;
        let e = within(call).await.unwrap().unwrap_err();
        assert!(e.is_local_refusal(), "{e}");

        // An unknown resultType is rejected.
        let call = tokio::spawn({
            let c = client.clone();
            async move { c.call_tool("t", json!({})).await }
        });
        let r = script.recv_request().await;
        script
            .respond(&r.id, json!({"resultType": "mystery"}))
            .await;
        let e = within(call).await.unwrap().unwrap_err();
        assert!(e.is_decode(), "{e}");

        // Rounds are bounded: roots asked forever → a limit error after 2 rounds.
        let call = tokio::spawn({
            let c = client.clone();
            async move { c.get_prompt("p", None).await }
        });
        for round in 0..3 {
            let r = script.recv_request().await;
            assert_eq!(r.method, "prompts/get");
            if round > 0 {
                let p: Value = r.params_as().unwrap();
                assert_eq!(p["inputResponses"]["r"]["roots"][0]["uri"], "file:///w");
            }
            script
                .respond(
                    &r.id,
                    json!({"resultType": "input_required", "requestState": format!("s{round}"),
                           "inputRequests": {"r": {"method": "roots/list"}}}),
                )
                .await;
        }
        let e = within(call).await.unwrap().unwrap_err();
        assert!(e.is_limit(), "{e}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_server_refusing_the_probe_gets_initialize() {
    within(async {
        let (transport, mut script) = pair();
        let server = async {
            let d = script.recv_request().await;
            assert_eq!(d.method, "server/discover");
            script
                .respond_error(&d.id, -32601, "method not found")
                .await;
            script.handshake("2025-06-18", json!({"tools": {}})).await;
        };
        let (client, _) = within(async {
            tokio::join!(
                Client::connect(transport, options().with_era(EraPolicy::Auto)),
                server
            )
        })
        .await;
        let client = client.unwrap();
        assert_eq!(client.era(), Era::Legacy);
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_06_18);
        assert_eq!(client.server_info().name, "scripted");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_timeout_means_legacy_and_modern_only_never_falls_back() {
    within(async {
        let (transport, mut script) = pair();
        let mut opts = options().with_era(EraPolicy::Auto);
        opts.probe_timeout = std::time::Duration::from_millis(200);
        let server = async {
            let d = script.recv_request().await;
            assert_eq!(d.method, "server/discover");
            // No answer: the probe times out (and is not cancelled).
            script.handshake("2025-11-25", json!({})).await;
        };
        let (client, _) =
            within(async { tokio::join!(Client::connect(transport, opts), server) }).await;
        assert_eq!(client.unwrap().era(), Era::Legacy);

        let (transport, mut script) = pair();
        let server = async {
            let d = script.recv_request().await;
            script
                .respond_error(&d.id, -32601, "method not found")
                .await;
        };
        let (client, _) = within(async {
            tokio::join!(
                Client::connect(transport, options().with_era(EraPolicy::Modern)),
                server
            )
        })
        .await;
        assert!(client.unwrap_err().is_protocol());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_version_errors_are_modern_and_never_fall_back() {
    within(async {
        // -32022 naming only legacy revisions: a dual-era server that does not speak
        // 2026-07-28; initialize follows.
        let (transport, mut script) = pair();
        let server = async {
            let d = script.recv_request().await;
            script
                .send(switchboard_protocol::jsonrpc::ErrorResponse::new(
                    Some(d.id.clone()),
                    switchboard_protocol::jsonrpc::ErrorObject::new(-32022, "unsupported")
                        .with_data(
                            &json!({"supported": ["2025-11-25"], "requested": "2026-07-28"}),
                        ),
                ))
                .await;
            script.handshake("2025-11-25", json!({})).await;
        };
        let (client, _) = within(async {
            tokio::join!(
                Client::connect(transport, options().with_era(EraPolicy::Auto)),
                server
            )
        })
        .await;
        assert_eq!(client.unwrap().era(), Era::Legacy);

        // -32022 naming nothing we speak: an error, no initialize.
        let (transport, mut script) = pair();
        let server = async {
            let d = script.recv_request().await;
            script
                .send(switchboard_protocol::jsonrpc::ErrorResponse::new(
                    Some(d.id.clone()),
                    switchboard_protocol::jsonrpc::ErrorObject::new(-32022, "unsupported")
                        .with_data(
                            &json!({"supported": ["2099-01-01"], "requested": "2026-07-28"}),
                        ),
                ))
                .await;
            script.expect_closed().await;
        };
        // The client gives up (no initialize) and closes its side.
        within(async {
            tokio::join!(
                async {
                    let r = Client::connect(transport, options().with_era(EraPolicy::Auto)).await;
                    assert_eq!(r.unwrap_err().error_object().unwrap().code, -32022);
                },
                server
            )
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_opens_a_listen_stream_and_unsubscribe_closes_it() {
    within(async {
        let updates = Arc::new(Mutex::new(Vec::new()));
        let u2 = updates.clone();
        let opts = options().with_notifications(move |n| {
            if let ServerNotification::ResourceUpdated(p) = n {
                u2.lock().unwrap().push(p.uri.clone());
            }
        });
        let (client, mut script) = modern_client(opts).await;
        let sub = tokio::spawn({
            let c = client.clone();
            async move { c.subscribe("file:///a").await }
        });
        let listen = script.recv_request().await;
        assert_eq!(listen.method, "subscriptions/listen");
        let p: Value = listen.params_as().unwrap();
        assert_eq!(p["notifications"]["resourceSubscriptions"], json!(["file:///a"]));
        assert_eq!(p["_meta"][META_VERSION], "2026-07-28");
        let sid = serde_json::to_value(&listen.id).unwrap();
        script
            .notify(
                "notifications/subscriptions/acknowledged",
                json!({"notifications": {"resourceSubscriptions": ["file:///a"]},
                       "_meta": {"io.modelcontextprotocol/subscriptionId": sid}}),
            )
            .await;
        within(sub).await.unwrap().unwrap();
        script
            .notify(
                "notifications/resources/updated",
                json!({"uri": "file:///a", "_meta": {"io.modelcontextprotocol/subscriptionId": sid}}),
            )
            .await;
        for _ in 0..100 {
            if !updates.lock().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(*updates.lock().unwrap(), vec!["file:///a".to_owned()]);
        // Unsubscribe: on this (stdio-like) transport, notifications/cancelled.
        client.unsubscribe("file:///a").await.unwrap();
        let n = script.recv_notification().await;
        assert_eq!(n.method, "notifications/cancelled");
        let p: Value = n.params_as().unwrap();
        assert_eq!(p["requestId"], sid);
    })
    .await;
}
