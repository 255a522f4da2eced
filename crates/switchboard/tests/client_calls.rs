//! Typed calls, progress, timeouts, cancellation, closing, ids and concurrency,
//! against a scripted server over `memory::pair` (spec notes §2, §3, §7).

mod client_support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client_support::*;
use serde_json::{json, Value};
use switchboard::peer::CancelToken;
use switchboard::CallOptions;
use switchboard_protocol::jsonrpc::{Id, Message};
use switchboard_protocol::types::ServerNotification;
use tokio::time::Instant;

fn tools_caps() -> Value {
    json!({"tools": {"listChanged": true}, "logging": {}})
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

#[tokio::test]
async fn list_tools_follows_cursors() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let server = async {
        let mut cursors = Vec::new();
        for (page, next) in [(0, Some("c1")), (1, Some("c2")), (2, None)] {
            let req = script.recv_request().await;
            assert_eq!(req.method, "tools/list");
            let params: Option<Value> = req.params.as_ref().map(|_| req.params_as().unwrap());
            cursors.push(params.and_then(|p| p["cursor"].as_str().map(str::to_owned)));
            let tool = json!({"name": format!("t{page}"), "inputSchema": {"type": "object"}});
            let mut result = json!({"tools": [tool]});
            if let Some(n) = next {
                result["nextCursor"] = json!(n);
            }
            script.respond(&req.id, result).await;
        }
        cursors
    };
    let (tools, cursors) = within(async { tokio::join!(client.list_tools(), server) }).await;
    let names: Vec<String> = tools.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["t0", "t1", "t2"]);
    assert_eq!(cursors, [None, Some("c1".into()), Some("c2".into())]);
}

#[tokio::test]
async fn a_listing_stops_at_the_page_cap() {
    let mut opts = options();
    opts.max_list_pages = 3;
    let (client, mut script) = connected(opts, tools_caps()).await;
    let server = async {
        for i in 0..3 {
            let req = script.recv_request().await;
            script
                .respond(
                    &req.id,
                    json!({"tools": [], "nextCursor": format!("again{i}")}),
                )
                .await;
        }
    };
    let (r, ()) = within(async { tokio::join!(client.list_tools(), server) }).await;
    assert!(r.unwrap_err().is_limit());
}

#[tokio::test]
async fn a_tool_error_is_a_result_and_a_jsonrpc_error_is_an_err() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let server = async {
        let req = script.recv_request().await;
        let p: Value = req.params_as().unwrap();
        assert_eq!(p, json!({"name": "fails", "arguments": {"x": 1}}));
        script
            .respond(
                &req.id,
                json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
            )
            .await;
        let req = script.recv_request().await;
        script
            .respond_error(&req.id, -32602, "unknown tool: nope")
            .await;
    };
    let calls = async {
        let a = client.call_tool("fails", json!({"x": 1})).await;
        let b = client.call_tool("nope", Value::Null).await;
        (a, b)
    };
    let ((r1, r2), ()) = within(async { tokio::join!(calls, server) }).await;
    let r1 = r1.unwrap();
    assert!(r1.is_error());
    assert_eq!(first_text(&r1), "boom");
    let e = r2.unwrap_err();
    assert!(e.is_protocol());
    assert_eq!(e.error_object().unwrap().code, -32602);
    // Arguments must be an object: refused before sending, and said to be our
    // params (it read "result did not decode").
    let e = client.call_tool("x", json!([1])).await.unwrap_err();
    assert!(e.is_decode());
    assert_eq!(e.to_string(), "tools/call: params did not encode");
}

#[tokio::test]
async fn progress_notifications_reach_the_callback() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let opts = CallOptions::new().on_progress(move |p| {
        s.lock()
            .unwrap()
            .push((p.progress_f64(), p.total_f64(), p.message.clone()));
    });
    let server = async {
        let req = script.recv_request().await;
        let p: Value = req.params_as().unwrap();
        let token = p["_meta"]["progressToken"].clone();
        assert_eq!(
            serde_json::to_value(&req.id).unwrap(),
            token,
            "the token is the id"
        );
        for i in 1..=3 {
            script
                .notify(
                    "notifications/progress",
                    json!({"progressToken": token, "progress": i, "total": 3, "message": format!("step {i}")}),
                )
                .await;
        }
        // Progress for a token nobody holds is ignored.
        script
            .notify(
                "notifications/progress",
                json!({"progressToken": "other", "progress": 1}),
            )
            .await;
        script.respond(&req.id, text_result("done")).await;
    };
    let (r, ()) =
        within(async { tokio::join!(client.call_tool_with("slow", json!({}), opts), server) })
            .await;
    assert_eq!(first_text(&r.unwrap()), "done");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );
}

/// Reads the `notifications/cancelled` the client sends and returns its params.
async fn expect_cancelled(script: &mut Script) -> Value {
    let n = script.recv_notification().await;
    assert_eq!(n.method, "notifications/cancelled");
    n.params_as().unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_timeout_sends_cancelled() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let t0 = Instant::now();
    let server = async {
        let req = script.recv_request().await;
        let c = expect_cancelled(&mut script).await;
        assert_eq!(serde_json::to_value(&req.id).unwrap(), c["requestId"]);
        assert!(c["reason"].as_str().unwrap().contains("timed out"));
        // A late answer is ignored.
        script.respond(&req.id, text_result("late")).await;
    };
    let opts = CallOptions::new().timeout(Duration::from_millis(100));
    let (r, ()) =
        within(async { tokio::join!(client.call_tool_with("t", json!({}), opts), server) }).await;
    let e = r.unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert_eq!(t0.elapsed(), Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn progress_extends_the_timeout_up_to_the_hard_maximum() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let t0 = Instant::now();
    let server = async {
        let req = script.recv_request().await;
        let p: Value = req.params_as().unwrap();
        let token = p["_meta"]["progressToken"].clone();
        // Progress every 80 ms keeps a 100 ms timeout alive...
        for i in 1..=5 {
            tokio::time::sleep(Duration::from_millis(80)).await;
            if i <= 3 {
                script
                    .notify(
                        "notifications/progress",
                        json!({"progressToken": token, "progress": i}),
                    )
                    .await;
            }
        }
        req
    };
    let opts = CallOptions::new()
        .timeout(Duration::from_millis(100))
        .max_total(Duration::from_millis(250))
        .on_progress(|_| {});
    let call = async {
        let r = client.call_tool_with("t", json!({}), opts).await;
        (r, t0.elapsed())
    };
    let ((r, elapsed), req) = within(async { tokio::join!(call, server) }).await;
    // ...but not past the hard maximum of 250 ms (progress at 240 ms would give 340).
    let e = r.unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(
        elapsed >= Duration::from_millis(250) && elapsed < Duration::from_millis(260),
        "{elapsed:?}"
    );
    let c = within(expect_cancelled(&mut script)).await;
    assert_eq!(serde_json::to_value(&req.id).unwrap(), c["requestId"]);
}

#[tokio::test]
async fn cancellation_sends_cancelled_with_the_request_id() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let token = CancelToken::new();
    let t = token.clone();
    let server = async {
        let req = script.recv_request().await;
        t.cancel_with("user pressed stop");
        let c = expect_cancelled(&mut script).await;
        assert_eq!(
            c,
            json!({"requestId": serde_json::to_value(&req.id).unwrap(), "reason": "user pressed stop"})
        );
        // The response races the cancellation: ignored.
        script.respond(&req.id, text_result("late")).await;
        req.id
    };
    let opts = CallOptions::new().cancel(token);
    let (r, cancelled_id) =
        within(async { tokio::join!(client.call_tool_with("t", json!({}), opts), server) }).await;
    let e = r.unwrap_err();
    assert!(e.is_cancelled(), "{e:?}");
    // The session goes on, with a new id.
    let ping = async {
        let req = script.recv_request().await;
        assert_eq!(req.method, "ping");
        assert_ne!(req.id, cancelled_id);
        script.respond(&req.id, json!({})).await;
    };
    let (r, ()) = within(async { tokio::join!(client.ping(), ping) }).await;
    r.unwrap();
}

#[tokio::test]
async fn a_dropped_call_is_cancelled_in_the_background() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let call = client.call_tool("t", json!({}));
    let req = {
        let server = script.recv_request();
        tokio::pin!(call);
        tokio::select! {
            _ = &mut call => panic!("no answer was sent"),
            r = server => r,
        }
        // `call` is dropped here.
    };
    let c = expect_cancelled(&mut script).await;
    assert_eq!(serde_json::to_value(&req.id).unwrap(), c["requestId"]);
}

#[tokio::test]
async fn a_closed_transport_fails_every_pending_call_at_once() {
    let (client, script) = connected(options(), tools_caps()).await;
    let Script { tx, mut rx } = script;
    let calls: Vec<_> = (0..10)
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move { c.call_tool(&format!("t{i}"), json!({})).await })
        })
        .collect();
    for _ in 0..10 {
        match within(rx.recv()).await {
            Some(switchboard_transport::Inbound::Message(Message::Request(_))) => {}
            other => panic!("{other:?}"),
        }
    }
    drop(tx);
    drop(rx);
    for c in calls {
        let e = within(c).await.unwrap().unwrap_err();
        assert!(e.is_closed(), "{e:?}");
        assert!(e.to_string().contains("peer closed"), "{e}");
    }
    // Every later call fails at once too.
    let e = within(client.ping()).await.unwrap_err();
    assert!(e.is_closed(), "{e:?}");
    assert!(e.to_string().contains("peer closed"), "{e}");
    assert!(client.peer().is_closed());
}

#[tokio::test]
async fn ids_never_repeat_across_a_thousand_calls() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let server = async {
        let mut ids = HashSet::new();
        for _ in 0..1000 {
            let req = script.recv_request().await;
            assert!(ids.insert(req.id.clone()), "id {} repeated", req.id);
            script.respond(&req.id, json!({})).await;
        }
        ids.len()
    };
    let calls = async {
        for _ in 0..1000 {
            client.ping().await.unwrap();
        }
    };
    let ((), n) = within(async { tokio::join!(calls, server) }).await;
    assert_eq!(n, 1000);
}

#[tokio::test]
async fn sixty_four_concurrent_calls_get_their_own_answers() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let calls: Vec<_> = (0..64)
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move { (i, c.call_tool("echo", json!({"n": i})).await) })
        })
        .collect();
    let mut requests = Vec::new();
    for _ in 0..64 {
        requests.push(script.recv_request().await);
    }
    // Answer in reverse order of arrival.
    for req in requests.iter().rev() {
        let p: Value = req.params_as().unwrap();
        let n = p["arguments"]["n"].as_i64().unwrap();
        script
            .respond(&req.id, text_result(&format!("answer {n}")))
            .await;
    }
    for c in calls {
        let (i, r) = within(c).await.unwrap();
        assert_eq!(first_text(&r.unwrap()), format!("answer {i}"));
    }
}

#[tokio::test]
async fn an_undeclared_capability_fails_locally_and_sends_nothing() {
    // The server declares tools only: no prompts, resources, completions, logging.
    let (client, mut script) = connected(options(), json!({"tools": {}})).await;
    let e = within(client.get_prompt("p", None)).await.unwrap_err();
    assert!(e.is_local_refusal(), "{e:?}");
    assert_eq!(e.lifecycle_error().unwrap().code(), -32601);
    assert!(within(client.list_resources())
        .await
        .unwrap_err()
        .is_local_refusal());
    assert!(within(client.subscribe("file:///x"))
        .await
        .unwrap_err()
        .is_local_refusal());
    assert!(
        within(client.set_level(switchboard_protocol::types::LoggingLevel::Info))
            .await
            .unwrap_err()
            .is_local_refusal()
    );
    // Nothing was sent: the next message the server sees is this ping.
    let server = async {
        let req = script.recv_request().await;
        assert_eq!(req.method, "ping");
        script.respond(&req.id, json!({})).await;
    };
    let (r, ()) = within(async { tokio::join!(client.ping(), server) }).await;
    r.unwrap();
}

#[tokio::test]
async fn server_notifications_reach_the_callback() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let opts = options().with_notifications(move |n| s.lock().unwrap().push(n));
    let (client, script) = connected(opts, tools_caps()).await;
    script
        .notify("notifications/tools/list_changed", json!({}))
        .await;
    script
        .notify(
            "notifications/message",
            json!({"level": "info", "data": "hello"}),
        )
        .await;
    // Not declared (no resources.subscribe): dropped.
    script
        .notify(
            "notifications/resources/updated",
            json!({"uri": "file:///x"}),
        )
        .await;
    // A round trip orders the notifications before it.
    let server = async {
        let mut script = script;
        let req = script.recv_request().await;
        script.respond(&req.id, json!({})).await;
    };
    let (r, ()) = within(async { tokio::join!(client.ping(), server) }).await;
    r.unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(matches!(seen[0], ServerNotification::ToolListChanged(_)));
    assert!(matches!(seen[1], ServerNotification::LoggingMessage(_)));
}

#[tokio::test]
async fn typed_calls_send_the_spec_shapes() {
    let caps = json!({"tools": {}, "resources": {"subscribe": true}, "prompts": {}, "completions": {}, "logging": {}});
    let (client, mut script) = connected(options(), caps).await;
    let server = async {
        let expect = [
            (
                "resources/read",
                json!({"uri": "file:///a"}),
                json!({"contents": [{"uri": "file:///a", "text": "A"}]}),
            ),
            (
                "resources/subscribe",
                json!({"uri": "file:///a"}),
                json!({}),
            ),
            (
                "resources/unsubscribe",
                json!({"uri": "file:///a"}),
                json!({}),
            ),
            (
                "prompts/get",
                json!({"name": "p", "arguments": {"k": "v"}}),
                json!({"messages": []}),
            ),
            ("logging/setLevel", json!({"level": "warning"}), json!({})),
            (
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "k", "value": "v"}}),
                json!({"completion": {"values": ["v1"]}}),
            ),
            (
                "resources/templates/list",
                Value::Null,
                json!({"resourceTemplates": [{"uriTemplate": "file:///{x}", "name": "x"}]}),
            ),
            (
                "prompts/list",
                Value::Null,
                json!({"prompts": [{"name": "p"}]}),
            ),
        ];
        for (method, params, result) in expect {
            let req = script.recv_request().await;
            assert_eq!(req.method, method);
            let got: Value = req
                .params
                .as_ref()
                .map_or(Value::Null, |_| req.params_as().unwrap());
            assert_eq!(got, params, "{method}");
            script.respond(&req.id, result).await;
        }
    };
    let calls = async {
        let r = client.read_resource("file:///a").await.unwrap();
        assert_eq!(r.contents.len(), 1);
        client.subscribe("file:///a").await.unwrap();
        client.unsubscribe("file:///a").await.unwrap();
        let args = [("k".to_owned(), "v".to_owned())].into_iter().collect();
        client.get_prompt("p", Some(args)).await.unwrap();
        client
            .set_level(switchboard_protocol::types::LoggingLevel::Warning)
            .await
            .unwrap();
        let params = serde_json::from_value(json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "k", "value": "v"}})).unwrap();
        let c = client.complete(&params).await.unwrap();
        assert_eq!(c.completion.values, ["v1"]);
        assert_eq!(client.list_resource_templates().await.unwrap().len(), 1);
        assert_eq!(client.list_prompts().await.unwrap()[0].name, "p");
    };
    within(async { tokio::join!(calls, server) }).await;
}

#[tokio::test]
async fn id_type_is_integer() {
    let (client, mut script) = connected(options(), tools_caps()).await;
    let server = async {
        let req = script.recv_request().await;
        assert!(matches!(req.id, Id::Int(_)));
        script.respond(&req.id, json!({})).await;
    };
    let (r, ()) = within(async { tokio::join!(client.ping(), server) }).await;
    r.unwrap();
}

#[tokio::test]
async fn pending_calls_are_bounded() {
    let mut opts = options();
    opts.max_pending = 2;
    let (client, mut script) = connected(opts, tools_caps()).await;
    let a = tokio::spawn({
        let c = client.clone();
        async move { c.call_tool("a", json!({})).await }
    });
    let b = tokio::spawn({
        let c = client.clone();
        async move { c.call_tool("b", json!({})).await }
    });
    let ra = script.recv_request().await;
    let rb = script.recv_request().await;
    // A third while two await: refused at once, nothing sent.
    let e = within(client.call_tool("c", json!({}))).await.unwrap_err();
    assert!(e.is_limit(), "{e:?}");
    script.respond(&ra.id, text_result("a")).await;
    script.respond(&rb.id, text_result("b")).await;
    within(a).await.unwrap().unwrap();
    within(b).await.unwrap().unwrap();
    // Room again; the next request the server sees is this one.
    let server = async {
        let req = script.recv_request().await;
        let p: Value = req.params_as().unwrap();
        assert_eq!(p["name"], "d");
        script.respond(&req.id, text_result("d")).await;
    };
    let (r, ()) = within(async { tokio::join!(client.call_tool("d", json!({})), server) }).await;
    assert_eq!(first_text(&r.unwrap()), "d");
}
