//! `switchboard bridge` in front of `switchboard example-server`, driven over raw
//! HTTP by clients of every era: Streamable HTTP sessions (2025-03-26 to
//! 2025-11-25), stateless 2026-07-28 exchanges, legacy HTTP+SSE (2024-11-05).

mod bridge_util;

use bridge_util::*;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_era_calls_a_tool_through_the_bridge() {
    let bridge = BridgeProc::start(&[], &[]).await;
    let c = client();

    // Streamable HTTP, 2025-11-25 and 2025-03-26.
    for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let s = open_session(&c, &bridge.url, version, json!({})).await;
        assert_eq!(s.version, version);
        let list = s
            .request(&c, &bridge.url, json!(1), "tools/list", json!({}))
            .await;
        let tools = list.response(&json!(1))["result"]["tools"]
            .as_array()
            .unwrap()
            .clone();
        assert!(tools.iter().any(|t| t["name"] == "echo"), "{tools:?}");
        let call = s
            .request(
                &c,
                &bridge.url,
                json!("a"),
                "tools/call",
                json!({"name":"echo","arguments":{"text":version}}),
            )
            .await;
        assert_eq!(first_text(&call.response(&json!("a"))["result"]), version);
    }

    // 2026-07-28, stateless.
    let discover = modern(
        &c,
        &bridge.url,
        json!(1),
        "server/discover",
        json!({}),
        json!({}),
    )
    .await;
    assert_eq!(discover.status, 200, "{}", discover.body);
    let result = &discover.response(&json!(1))["result"];
    let versions: Vec<&str> = result["supportedVersions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        versions.contains(&"2026-07-28") && versions.contains(&"2025-11-25"),
        "{result}"
    );
    assert!(
        result["capabilities"]["tools"].is_object(),
        "the child's capabilities: {result}"
    );
    assert_eq!(result["resultType"], "complete");
    let call = modern(
        &c,
        &bridge.url,
        json!(2),
        "tools/call",
        json!({"name":"echo","arguments":{"text":"modern"}}),
        json!({}),
    )
    .await;
    assert_eq!(call.status, 200, "{}", call.body);
    let result = &call.response(&json!(2))["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(first_text(result), "modern");

    // Legacy HTTP+SSE.
    let mut legacy = open_legacy(&c, &bridge.base).await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}});
    assert_eq!(legacy.send(&c, &init).await, 202);
    let got = legacy.until_response(&json!(1)).await;
    assert_eq!(
        got.last().unwrap()["result"]["protocolVersion"],
        "2024-11-05"
    );
    assert_eq!(
        legacy
            .send(
                &c,
                &json!({"jsonrpc":"2.0","method":"notifications/initialized"})
            )
            .await,
        202
    );
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"sse"}}});
    assert_eq!(legacy.send(&c, &call).await, 202);
    let got = legacy.until_response(&json!(2)).await;
    assert_eq!(first_text(&got.last().unwrap()["result"]), "sse");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_rides_the_calls_own_stream_with_the_clients_token() {
    // The multi-threaded runtime (the default is one thread).
    let bridge = BridgeProc::start(&["--threads", "2"], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let reply = s
        .request(
            &c,
            &bridge.url,
            json!(7),
            "tools/call",
            json!({"name":"progress","arguments":{"seconds":0.3,"steps":3},"_meta":{"progressToken":"tok-1"}}),
        )
        .await;
    let progress: Vec<&Value> = reply
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 3, "{:?}", reply.messages);
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "tok-1"),
        "the client's own token comes back: {progress:?}"
    );
    assert_eq!(
        reply.messages.last().unwrap()["id"],
        7,
        "the response is last"
    );

    // The same for a 2026-07-28 client, with an integer token.
    let reply = modern(
        &c,
        &bridge.url,
        json!(8),
        "tools/call",
        json!({"name":"progress","arguments":{"seconds":0.3,"steps":3},"_meta":{"progressToken":5}}),
        json!({}),
    )
    .await;
    let progress: Vec<&Value> = reply
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(
        progress.len() >= 3 && progress.iter().all(|p| p["params"]["progressToken"] == 5),
        "{:?}",
        reply.messages
    );
    assert_eq!(
        reply.response(&json!(8))["result"]["resultType"],
        "complete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_client_answers_the_childs_elicitation_with_input_required() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let c = client();
    let caps = json!({"elicitation": {"form": {}}});
    let first = modern(
        &c,
        &bridge.url,
        json!(1),
        "tools/call",
        json!({"name":"elicit","arguments":{}}),
        caps.clone(),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let result = first.response(&json!(1))["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    let state = result["requestState"].as_str().unwrap().to_owned();

    // A retry for another tool may not use this state.
    let wrong = modern(
        &c,
        &bridge.url,
        json!(2),
        "tools/call",
        json!({"name":"echo","arguments":{"text":"x"},"requestState":state,"inputResponses":{}}),
        caps.clone(),
    )
    .await;
    assert_eq!(
        wrong.response(&json!(2))["error"]["code"],
        -32602,
        "{}",
        wrong.body
    );

    let answer = json!({"action":"accept","content":{"name":"Ada"}});
    let retry = modern(
        &c,
        &bridge.url,
        json!(3),
        "tools/call",
        json!({"name":"elicit","arguments":{},"requestState":state,"inputResponses":{ key.clone(): answer }}),
        caps.clone(),
    )
    .await;
    let result = &retry.response(&json!(3))["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert!(first_text(result).contains("Ada"), "{result}");

    // The state is used up.
    let again = modern(
        &c,
        &bridge.url,
        json!(4),
        "tools/call",
        json!({"name":"elicit","arguments":{},"requestState":state,"inputResponses":{}}),
        caps,
    )
    .await;
    assert_eq!(again.response(&json!(4))["error"]["code"], -32602);
}

/// A 2026-07-28 retry must repeat the method and params of the request that got
/// `input_required` (2026-07-28 "Multi round-trip requests": the same method and
/// params, a new id, `inputResponses` and `requestState` added). One with other
/// arguments is -32602 and leaves the held call alone; the bridge used to
/// resume the held call with it, so the client got the result of a call it had
/// not made. The retry that repeats the params (its members in another order,
/// with a `_meta` of its own) then resumes the held call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_other_arguments_does_not_resume_the_held_call() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let c = client();
    let caps = json!({"sampling": {}});
    let first = modern(
        &c,
        &bridge.url,
        json!(1),
        "tools/call",
        json!({"name": "sample", "arguments": {"prompt": "a", "n": 1}}),
        caps.clone(),
    )
    .await;
    let result = first.response(&json!(1))["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{result}");
    let key = first_input_key(&result);
    let state = result["requestState"].clone();
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"});
    let others = [
        json!({"prompt": "b", "n": 1}),
        json!({"prompt": "a", "n": 2}),
        json!({"prompt": "a"}),
        json!({"prompt": "a", "n": 1, "more": true}),
    ];
    for (i, arguments) in others.into_iter().enumerate() {
        let id = json!(10 + i);
        let wrong = modern(
            &c,
            &bridge.url,
            id.clone(),
            "tools/call",
            json!({"name": "sample", "arguments": arguments, "requestState": state,
                   "inputResponses": {key.clone(): answer.clone()}}),
            caps.clone(),
        )
        .await;
        let error = &wrong.response(&id)["error"];
        assert_eq!(error["code"], -32602, "{arguments}: {}", wrong.body);
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("another request"),
            "{error}"
        );
    }
    let retry = modern(
        &c,
        &bridge.url,
        json!(2),
        "tools/call",
        json!({"inputResponses": {key: answer}, "requestState": state,
               "arguments": {"n": 1, "prompt": "a"}, "_meta": {"progressToken": "p2"},
               "name": "sample"}),
        caps,
    )
    .await;
    let result = &retry.response(&json!(2))["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(first_text(result), "the model said: hi");
}

/// A legacy stdio server (2025-11-25) that records its pid in `argv[1]`; its
/// `tools/list` has two pages, the second with tool `where`, whose `region`
/// and `count` arguments carry `x-mcp-header` (`Region`, `Count`); `where`
/// returns its arguments as JSON text. Tool `rename` renames `Region` to
/// `Zone` and says so with `notifications/tools/list_changed`.
const HEADER_CHILD: &str = r#"
import json, sys, os
open(sys.argv[1], "a").write(f"{os.getpid()}\n")
header = ["Region"]
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def where():
    return {"name": "where", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": header[0]},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "note": {"type": "string"}}}}
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m or "id" not in m:
        continue
    method, p = m["method"], m.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
                  "serverInfo": {"name": "headers", "version": "1"}}
    elif method == "tools/list" and p.get("cursor") == "2":
        result = {"tools": [where()]}
    elif method == "tools/list":
        result = {"tools": [{"name": "rename", "inputSchema": {"type": "object"}}], "nextCursor": "2"}
    elif method == "tools/call" and p.get("name") == "rename":
        header[0] = "Zone"
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        result = {"content": [{"type": "text", "text": "renamed"}]}
    elif method == "tools/call":
        text = json.dumps(p.get("arguments"), sort_keys=True)
        result = {"content": [{"type": "text", "text": text}]}
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
        continue
    send({"jsonrpc": "2.0", "id": m["id"], "result": result})
"#;

/// A 2026-07-28 `tools/call` of `where` with `arguments` and `extra` headers.
async fn call_where(
    c: &reqwest::Client,
    url: &str,
    id: u64,
    arguments: Value,
    extra: &[(&str, &str)],
) -> Reply {
    let params = json!({"name": "where", "arguments": arguments});
    modern_with(c, url, json!(id), "tools/call", params, json!({}), extra).await
}

/// Calls `where` with `extra` headers, under ids counted on from `id`, until
/// the call is answered with a result (the bridge may still know the child's
/// old schemas for a while); fails after [`WAIT`].
async fn until_answered(
    c: &reqwest::Client,
    url: &str,
    id: &mut u64,
    args: &Value,
    extra: &[(&str, &str)],
) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        *id += 1;
        let reply = call_where(c, url, *id, args.clone(), extra).await;
        if reply.status == 200 && reply.response(&json!(*id)).get("result").is_some() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never answered with {extra:?}: {}",
            reply.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The `Mcp-Param-*` headers of a 2026-07-28 `tools/call` are checked against
/// the arguments the child's tool schema annotates with `x-mcp-header`
/// (2026-07-28 "Request headers"; 400 / -32020 otherwise), with the library's
/// own checking code. The bridge did not check them at all: it had no tool
/// schemas. The very first call is checked (the bridge lists the tools, every
/// page, before answering it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_param_headers_are_checked_against_the_childs_tool_schema() {
    let pids = temp_path("param-headers");
    let pid_arg = pids.display().to_string();
    let bridge = BridgeProc::start(
        &["--child", "shared"],
        &["python3", "-c", HEADER_CHILD, &pid_arg],
    )
    .await;
    let c = client();
    let args = json!({"region": "eu-west", "count": 3});
    let mismatch = call_where(
        &c,
        &bridge.url,
        1,
        args.clone(),
        &[("mcp-param-region", "us-east"), ("mcp-param-count", "3")],
    )
    .await;
    assert_eq!(mismatch.status, 400, "{}", mismatch.body);
    let error = &mismatch.response(&json!(1))["error"];
    assert_eq!(error["code"], -32020, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Param-Region"),
        "{error}"
    );
    for (id, extra) in [
        // Missing.
        (2, vec![("mcp-param-count", "3")]),
        // Integers compare numerically: 4 is not 3.
        (
            3,
            vec![("mcp-param-region", "eu-west"), ("mcp-param-count", "4")],
        ),
        // Not valid base64.
        (
            4,
            vec![
                ("mcp-param-region", "=?base64?ZXUtd2VzdA?="),
                ("mcp-param-count", "3"),
            ],
        ),
    ] {
        let reply = call_where(&c, &bridge.url, id, args.clone(), &extra).await;
        assert_eq!(reply.status, 400, "{extra:?}: {}", reply.body);
        assert_eq!(reply.response(&json!(id))["error"]["code"], -32020);
    }
    // A header for an argument that is absent.
    let reply = call_where(&c, &bridge.url, 5, json!({}), &[("mcp-param-count", "3")]).await;
    assert_eq!(reply.status, 400, "{}", reply.body);

    let ok = call_where(
        &c,
        &bridge.url,
        6,
        args.clone(),
        &[("mcp-param-region", "eu-west"), ("mcp-param-count", "03")],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let result = &ok.response(&json!(6))["result"];
    assert_eq!(first_text(result), r#"{"count": 3, "region": "eu-west"}"#);
    // Base64-encoded, and an argument without x-mcp-header needs no header.
    let ok = call_where(
        &c,
        &bridge.url,
        7,
        json!({"region": "été", "note": "n"}),
        &[("mcp-param-region", "=?base64?w6l0w6k=?=")],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.response(&json!(7))["result"]["resultType"], "complete");
    let _ = std::fs::remove_file(&pids);
}

/// The schemas the bridge checks `Mcp-Param-*` against follow the child: its
/// `notifications/tools/list_changed` (the tool's header renamed) and its
/// restart (a new process, the old name again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_param_headers_follow_list_changes_and_restarts() {
    let pids = temp_path("param-headers-follow");
    let pid_arg = pids.display().to_string();
    let bridge = BridgeProc::start(
        &["--child", "shared"],
        &["python3", "-c", HEADER_CHILD, &pid_arg],
    )
    .await;
    let c = client();
    let args = json!({"region": "eu"});
    let region = [("mcp-param-region", "eu")];
    let zone = [("mcp-param-zone", "eu")];
    let ok = call_where(&c, &bridge.url, 1, args.clone(), &region).await;
    assert_eq!(ok.status, 200, "{}", ok.body);

    let renamed = modern(
        &c,
        &bridge.url,
        json!(2),
        "tools/call",
        json!({"name": "rename", "arguments": {}}),
        json!({}),
    )
    .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    // The list is fetched again on the child's notification.
    let mut id = 10;
    until_answered(&c, &bridge.url, &mut id, &args, &zone).await;
    let old = call_where(&c, &bridge.url, 3, args.clone(), &region).await;
    assert_eq!(old.status, 400, "{}", old.body);
    assert!(old.body.contains("Mcp-Param-Zone"), "{}", old.body);

    // A restarted child names it Region again.
    wait_until("the child recorded its pid", || pids_in(&pids).len() == 1).await;
    kill_hard(pids_in(&pids)[0]);
    wait_until("the child is restarted", || pids_in(&pids).len() == 2).await;
    until_answered(&c, &bridge.url, &mut id, &args, &region).await;
    let stale = call_where(&c, &bridge.url, 4, args, &zone).await;
    assert_eq!(stale.status, 400, "{}", stale.body);
    let _ = std::fs::remove_file(&pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_answers_the_childs_sampling_request_on_the_calls_stream() {
    let bridge = BridgeProc::start(&[], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({"sampling": {}})).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"hi"}}});
    let mut stream = post_streaming(&c, &bridge.url, &s.headers(), &body).await;
    let request = loop {
        let m = stream.next_message().await.expect("the sampling request");
        if m["method"] == "sampling/createMessage" {
            break m;
        }
    };
    let answer = json!({"jsonrpc":"2.0","id":request["id"],"result":{
        "role":"assistant","content":{"type":"text","text":"from the model"},"model":"test-model"}});
    let accepted = post(&c, &bridge.url, &s.headers(), &answer).await;
    assert_eq!(accepted.status, 202);
    let done = loop {
        let m = stream.next_message().await.expect("the response");
        if m["id"] == 1 && m.get("method").is_none() {
            break m;
        }
    };
    assert!(
        done["result"].to_string().contains("from the model"),
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allowlist_is_an_intersection_and_refuses_other_calls() {
    let bridge =
        BridgeProc::start(&["--allow-tool", "echo", "--allow-tool", "not-there"], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let list = s
        .request(&c, &bridge.url, json!(1), "tools/list", json!({}))
        .await;
    let names: Vec<String> = list.response(&json!(1))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, vec!["echo".to_owned()]);
    let refused = s
        .request(
            &c,
            &bridge.url,
            json!(2),
            "tools/call",
            json!({"name":"fail","arguments":{}}),
        )
        .await;
    assert_eq!(refused.response(&json!(2))["error"]["code"], -32602);
    let modern_refused = modern(
        &c,
        &bridge.url,
        json!(3),
        "tools/call",
        json!({"name":"add","arguments":{"a":1,"b":2}}),
        json!({}),
    )
    .await;
    assert_eq!(modern_refused.response(&json!(3))["error"]["code"], -32602);
    let modern_list = modern(
        &c,
        &bridge.url,
        json!(5),
        "tools/list",
        json!({}),
        json!({}),
    )
    .await;
    let tools = modern_list.response(&json!(5))["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["name"], "echo");
    let ok = s.echo(&c, &bridge.url, 4, "fine").await;
    assert_eq!(first_text(&ok.response(&json!(4))["result"]), "fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_header_mismatch_is_400_with_32020() {
    let bridge = BridgeProc::start(&[], &[]).await;
    let c = client();
    let mut params = json!({"name":"echo","arguments":{"text":"x"}});
    params["_meta"] = modern_meta(json!({}));
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params});
    let reply = post(
        &c,
        &bridge.url,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "other"),
        ],
        &body,
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.response(&json!(1))["error"]["code"], -32020);
}

/// A 2026-07-28 request (its `_meta` says so) without the `MCP-Protocol-Version`
/// header is 400 / -32020, as the library's own server answers it (2026-07-28
/// "Server validation": the header missing, mismatched or malformed); the
/// bridge used to serve it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_request_without_the_version_header_is_400_with_32020() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let c = client();
    let mut params = json!({"name":"echo","arguments":{"text":"x"}});
    params["_meta"] = modern_meta(json!({}));
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params});
    let headers = [("mcp-method", "tools/call"), ("mcp-name", "echo")];
    let reply = post(&c, &bridge.url, &headers, &body).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.response(&json!(1))["error"]["code"], -32020);
}

/// A second `initialize` in a session is refused in both child modes; with a
/// shared child it used to be answered, renegotiating the session's revision
/// (here from 2025-11-25 to 2025-03-26, which turns batching on) mid-session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_initialize_in_a_session_is_refused_in_both_modes() {
    for mode in ["per-session", "shared"] {
        let bridge = BridgeProc::start(&["--child", mode], &[]).await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
        let again = s
            .request(
                &c,
                &bridge.url,
                json!(1),
                "initialize",
                json!({"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "again", "version": "1"}}),
            )
            .await;
        assert_eq!(
            again.response(&json!(1))["error"]["code"],
            -32600,
            "{mode}: {}",
            again.body
        );
        let ping = s
            .request(&c, &bridge.url, json!(2), "ping", json!({}))
            .await;
        assert!(ping.response(&json!(2)).get("result").is_some(), "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_sessions_on_a_shared_child_get_their_own_answers() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let c = client();
    let mut tasks = Vec::new();
    for n in 0..200u32 {
        let c = c.clone();
        let url = bridge.url.clone();
        tasks.push(tokio::spawn(async move {
            let s = open_session(&c, &url, "2025-11-25", json!({})).await;
            for i in 1..=3u32 {
                // Every session uses the same ids: the bridge must keep them apart.
                let text = format!("session {n} call {i}");
                let reply = s
                    .request(
                        &c,
                        &url,
                        json!(i),
                        "tools/call",
                        json!({"name":"echo","arguments":{"text":text}}),
                    )
                    .await;
                let responses: Vec<&Value> = reply
                    .messages
                    .iter()
                    .filter(|m| m.get("id").is_some() && m.get("method").is_none())
                    .collect();
                assert_eq!(
                    responses.len(),
                    1,
                    "exactly one response: {:?}",
                    reply.messages
                );
                assert!(
                    responses[0]["result"].is_object(),
                    "session {n} call {i}: {}",
                    responses[0]
                );
                assert_eq!(first_text(&responses[0]["result"]), text);
            }
        }));
    }
    for t in tasks {
        t.await.expect("every session got its own answers");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_session_is_404_and_others_keep_working() {
    let bridge = BridgeProc::start(&[], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}});
    let bad = post(
        &c,
        &bridge.url,
        &[
            ("mcp-session-id", "0123"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        &body,
    )
    .await;
    assert_eq!(bad.status, 404);
    let good = s
        .request(&c, &bridge.url, json!(1), "tools/list", json!({}))
        .await;
    assert!(good.response(&json!(1))["result"]["tools"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_mebibyte_result_passes_through() {
    let bridge = BridgeProc::start(&["--max-body", "20000000"], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let text: String = "0123456789abcdef".repeat(10 * 1024 * 1024 / 16);
    let reply = s
        .request(
            &c,
            &bridge.url,
            json!(1),
            "tools/call",
            json!({"name":"echo","arguments":{"text":text}}),
        )
        .await;
    assert_eq!(
        first_text(&reply.response(&json!(1))["result"]).len(),
        text.len()
    );
}

/// `switchboard connect URL` as a host app would run it: JSON-RPC lines on its
/// stdin and stdout.
struct Connect {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Connect {
    fn start(url: &str) -> Connect {
        use std::process::Stdio;
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(BIN)
            .args(["connect", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        Connect {
            child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, m: Value) {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{m}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The next line that answers `id`.
    async fn answer(&mut self, id: Value) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("connect keeps running");
                let m: Value = serde_json::from_str(&line).expect("only JSON-RPC on stdout");
                if m["id"] == id && m.get("method").is_none() {
                    return m;
                }
            }
        })
        .await
        .expect("an answer in time")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_relays_a_host_app_to_a_remote_of_every_era() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let init = |v: &str| {
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": v, "capabilities": {}, "clientInfo": {"name":"host","version":"1"}}})
    };
    // Streamable HTTP, and legacy HTTP+SSE (the /sse URL refuses the POST, so the
    // fallback opens the SSE stream).
    for (url, version) in [
        (bridge.url.clone(), "2025-11-25"),
        (format!("{}/sse", bridge.base), "2024-11-05"),
    ] {
        let mut host = Connect::start(&url);
        host.send(init(version)).await;
        let answer = host.answer(json!(0)).await;
        assert_eq!(
            answer["result"]["protocolVersion"], version,
            "{url}: {answer}"
        );
        host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        host.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":url}}})).await;
        let answer = host.answer(json!(1)).await;
        assert_eq!(first_text(&answer["result"]), url);
        drop(host.stdin);
        let status = tokio::time::timeout(WAIT, host.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(
            status.success(),
            "a clean end when the host app closes stdin"
        );
    }
    // A 2026-07-28 host app.
    let mut host = Connect::start(&bridge.url);
    let mut params = json!({"name":"echo","arguments":{"text":"modern"}});
    params["_meta"] = modern_meta(json!({}));
    host.send(json!({"jsonrpc":"2.0","id":"m1","method":"tools/call","params":params}))
        .await;
    let answer = host.answer(json!("m1")).await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(first_text(&answer["result"]), "modern");
}

/// MCP 2025-03-26 ("Base protocol → Batching"): implementations MUST support
/// receiving JSON-RPC batches, and on stdio a line may be a batch. A host app
/// that negotiated 2025-03-26 through `connect` gets every item of its batch
/// answered (an invalid item with its own error, JSON-RPC 2.0 §6), all in one
/// array on one line, as from the library's own stdio server; `connect` used
/// to refuse the whole batch (-32600 "batches are not supported in this
/// protocol revision"), then answered it line by line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_takes_a_batch_from_a_2025_03_26_host_app() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let mut host = Connect::start(&bridge.url);
    host.send(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}),
    )
    .await;
    let answer = host.answer(json!(0)).await;
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-03-26",
        "{answer}"
    );
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    host.send(json!([
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"2.0","id":2,"method":"tools/call",
            "params":{"name":"echo","arguments":{"text":"in a batch"}}},
        {"jsonrpc":"2.0","id":3}
    ]))
    .await;
    let (out, status) = host.close_and_collect().await;
    assert!(status.success(), "{out:?}");
    // One line, an array (JSON-RPC 2.0 §6), as the library's stdio server
    // answers a batch; the answers used to come one per line.
    let arrays: Vec<&Vec<Value>> = out.iter().filter_map(Value::as_array).collect();
    assert_eq!(arrays.len(), 1, "{out:?}");
    assert_eq!(arrays[0].len(), 3, "{out:?}");
    let answer = |id: u64| {
        arrays[0]
            .iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
    };
    assert_eq!(answer(1).map(|m| &m["result"]), Some(&json!({})), "{out:?}");
    assert_eq!(
        answer(2).map(|m| first_text(&m["result"])),
        Some("in a batch"),
        "{out:?}"
    );
    assert_eq!(
        answer(3).and_then(|m| m["error"]["code"].as_i64()),
        Some(-32600),
        "{out:?}"
    );
}

/// A 2026-aware host app (the official Python SDK's default) probes with
/// `server/discover` and falls back to `initialize` when the remote refuses the
/// probe. In front of a remote without 2026-07-28 (here the bridge's legacy
/// HTTP+SSE endpoint), `connect` took the probe for the era and sent the
/// `initialize` and everything after it as stateless 2026-07-28 requests, which
/// such a remote refuses: the host app could never get a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_lets_a_host_app_fall_back_after_a_refused_discover() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let mut host = Connect::start(&format!("{}/sse", bridge.base));
    host.send(
        json!({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{
        "_meta": modern_meta(json!({}))}}),
    )
    .await;
    let refused = host.answer(json!("d")).await;
    assert!(refused.get("error").is_some(), "{refused}");
    host.send(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name":"host","version":"1"}}}),
    )
    .await;
    let answer = host.answer(json!(0)).await;
    assert_eq!(
        answer["result"]["protocolVersion"], "2024-11-05",
        "{answer}"
    );
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    host.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after the probe"}}})).await;
    let answer = host.answer(json!(1)).await;
    assert_eq!(first_text(&answer["result"]), "after the probe", "{answer}");
}

/// Requests before the host app's first `initialize` (or 2026-07-28 request) are
/// answered by `connect` itself, which then goes on: `ping` with `{}`, anything
/// else with -32600; it used to exit, leaving the host app with no answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_answers_requests_before_initialize_and_goes_on() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let mut host = Connect::start(&bridge.url);
    host.send(json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .await;
    assert_eq!(host.answer(json!(1)).await["result"], json!({}));
    host.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))
        .await;
    let answer = host.answer(json!(2)).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    host.send(
        json!({"jsonrpc":"2.0","id":3,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}),
    )
    .await;
    let answer = host.answer(json!(3)).await;
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "{answer}"
    );
}

impl Connect {
    /// Closes stdin (the host app is done) and reads stdout to its end; returns
    /// every message and the exit status.
    async fn close_and_collect(self) -> (Vec<Value>, std::process::ExitStatus) {
        let Connect {
            mut child,
            stdin,
            mut lines,
        } = self;
        drop(stdin);
        let mut out = Vec::new();
        tokio::time::timeout(WAIT, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                out.push(serde_json::from_str::<Value>(&line).expect("only JSON-RPC on stdout"));
            }
        })
        .await
        .expect("stdout ends in time");
        let status = tokio::time::timeout(WAIT, child.wait())
            .await
            .expect("connect exits in time")
            .unwrap();
        (out, status)
    }
}

/// The host app writes its requests, a slow call among them, and closes stdin at
/// once: the answer to the call, forwarded before stdin ended, is written to
/// stdout before `connect` exits (0); it used to be dropped. Legacy (initialize
/// first) and 2026-07-28 (the slow call is the first request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_relays_the_answers_owed_when_the_host_app_closes_stdin() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let slow = json!({"name":"progress","arguments":{"seconds":0.6,"steps":2}});
    let mut host = Connect::start(&bridge.url);
    host.send(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}),
    )
    .await;
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    host.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":slow}))
        .await;
    let (out, status) = host.close_and_collect().await;
    assert!(status.success(), "{status}");
    let answer = |id: Value| {
        out.iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
    };
    assert!(answer(json!(0)).is_some(), "{out:?}");
    let call = answer(json!(1)).expect("the slow call's answer");
    assert!(
        first_text(&call["result"]).starts_with("done: 2 steps"),
        "{call}"
    );

    let mut host = Connect::start(&bridge.url);
    let mut params = slow.clone();
    params["_meta"] = modern_meta(json!({}));
    host.send(json!({"jsonrpc":"2.0","id":"m1","method":"tools/call","params":params}))
        .await;
    let (out, status) = host.close_and_collect().await;
    assert!(status.success(), "{status}");
    let call = out
        .iter()
        .find(|m| m["id"] == "m1" && m.get("method").is_none())
        .expect("the 2026-07-28 call's answer");
    assert!(
        first_text(&call["result"]).starts_with("done: 2 steps"),
        "{call}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_nothing_fails_with_one_line() {
    let out = tokio::process::Command::new(BIN)
        .args(["connect", "http://127.0.0.1:9/mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = out;
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = out.stdin.take().unwrap();
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}});
        stdin
            .write_all(format!("{init}\n").as_bytes())
            .await
            .unwrap();
        // Keep stdin open: the relay must end on its own.
        let output = tokio::time::timeout(WAIT, out.wait_with_output())
            .await
            .expect("ends in time")
            .unwrap();
        drop(stdin);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.lines().any(|l| l.starts_with("switchboard: ")),
            "{stderr}"
        );
        // The host app got an error answer for its initialize, never silence.
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("\"error\""), "{stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_clients_reach_a_2026_only_child_through_translation() {
    for mode in ["per-session", "shared"] {
        let bridge = BridgeProc::start(
            &["--child", mode],
            &[BIN, "example-server", "--modern-only"],
        )
        .await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-06-18", json!({"elicitation": {}})).await;
        assert_eq!(
            s.version, "2025-06-18",
            "the bridge agrees the client's revision"
        );
        let call = s
            .request(
                &c,
                &bridge.url,
                json!(1),
                "tools/call",
                json!({"name":"echo","arguments":{"text":mode}}),
            )
            .await;
        assert_eq!(
            first_text(&call.response(&json!(1))["result"]),
            mode,
            "{}",
            call.body
        );
        // No 2026-07-28-only member reaches the legacy client.
        let list = s
            .request(&c, &bridge.url, json!(11), "tools/list", json!({}))
            .await;
        for reply in [
            &call.response(&json!(1))["result"],
            &list.response(&json!(11))["result"],
        ] {
            for k in ["resultType", "ttlMs", "cacheScope"] {
                assert!(reply.get(k).is_none(), "{mode}: {k} in {reply}");
            }
            assert!(
                reply
                    .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
                    .is_none(),
                "{mode}: serverInfo in {reply}"
            );
        }
        assert!(
            list.response(&json!(11))["result"]["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty()),
            "{}",
            list.body
        );
        // Progress for the legacy client, with its own token.
        let call = s
            .request(
                &c,
                &bridge.url,
                json!(2),
                "tools/call",
                json!({"name":"progress","arguments":{"seconds":0.2,"steps":2},"_meta":{"progressToken":"lt"}}),
            )
            .await;
        assert!(
            call.messages
                .iter()
                .any(|m| m["params"]["progressToken"] == "lt"),
            "{:?}",
            call.messages
        );
        // The child's input_required becomes a real elicitation request on the call's
        // stream; the answer goes back in the retry.
        let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"elicit","arguments":{}}});
        let mut stream = post_streaming(&c, &bridge.url, &s.headers(), &body).await;
        let ask = loop {
            let m = stream
                .next_message()
                .await
                .expect("the elicitation request");
            if m["method"] == "elicitation/create" {
                break m;
            }
        };
        let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"name":"Grace"}}});
        assert_eq!(
            post(&c, &bridge.url, &s.headers(), &answer).await.status,
            202
        );
        let done = loop {
            let m = stream.next_message().await.expect("the response");
            if m["id"] == 3 && m.get("method").is_none() {
                break m;
            }
        };
        assert!(
            first_text(&done["result"]).contains("Grace"),
            "{mode}: {done}"
        );
        // A 2026-07-28 client gets the child's own MRTR round trip.
        let caps = json!({"elicitation": {"form": {}}});
        let first = modern(
            &c,
            &bridge.url,
            json!(4),
            "tools/call",
            json!({"name":"elicit","arguments":{}}),
            caps.clone(),
        )
        .await;
        let result = first.response(&json!(4))["result"].clone();
        assert_eq!(result["resultType"], "input_required", "{result}");
        let key = first_input_key(&result);
        let mut params = json!({"name":"elicit","arguments":{},"inputResponses":{}});
        params["inputResponses"][&key] = json!({"action":"accept","content":{"name":"Linus"}});
        if let Some(state) = result.get("requestState") {
            params["requestState"] = state.clone();
        }
        let retry = modern(&c, &bridge.url, json!(5), "tools/call", params, caps).await;
        assert!(
            first_text(&retry.response(&json!(5))["result"]).contains("Linus"),
            "{}",
            retry.body
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_beyond_the_childs_own_limit_waits_instead_of_failing() {
    // The example server (the library's default) handles 64 requests at once and
    // refuses more; the bridge queues beyond --max-in-flight (64) instead.
    let bridge = BridgeProc::start(&[], &[]).await;
    let c = client();
    let mut calls = Vec::new();
    for n in 0..150u32 {
        let c = c.clone();
        let url = bridge.url.clone();
        calls.push(tokio::spawn(async move {
            let reply = modern(
                &c,
                &url,
                json!(n),
                "tools/call",
                json!({"name":"progress","arguments":{"seconds":0.3,"steps":1}}),
                json!({}),
            )
            .await;
            let response = reply.response(&json!(n)).clone();
            assert!(
                response["result"]["content"].is_array(),
                "call {n}: {response}"
            );
        }));
    }
    for call in calls {
        call.await.expect("every call of the burst succeeds");
    }
}

/// A stdio server that speaks only 2026-07-28 and whose `confirm` tool asks for
/// elicitation whatever the request declared (which MRTR forbids).
const PUSHY_MODERN_SERVER: &str = r#"
import json, sys
V = "2026-07-28"
def send(x):
    sys.stdout.write(json.dumps(x) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    mid, meth, p = m.get("id"), m.get("method"), m.get("params") or {}
    if mid is None or meth is None:
        continue
    if (p.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion") != V:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32022, "message": "2026-07-28 only",
              "data": {"supported": [V]}}})
    elif meth == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete", "supportedVersions": [V],
              "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
              "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "pushy", "version": "1"}}}})
    elif meth == "tools/call" and p.get("name") == "confirm":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "input_required",
              "inputRequests": {"ok": {"method": "elicitation/create", "params": {"mode": "form",
              "message": "sure?", "requestedSchema": {"type": "object", "properties": {}}}}}}})
    elif meth == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "content": [{"type": "text", "text": "plain"}]}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
"#;

/// MRTR's input requests are only for capabilities the request declared: a
/// 2026-07-28-only child that asks a legacy client for elicitation it did not
/// declare fails that call with a clear error (the client is asked nothing),
/// and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_childs_input_request_for_an_undeclared_capability_fails_the_call() {
    for mode in ["per-session", "shared"] {
        let bridge =
            BridgeProc::start(&["--child", mode], &["python3", "-c", PUSHY_MODERN_SERVER]).await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
        let call = s
            .request(
                &c,
                &bridge.url,
                json!(1),
                "tools/call",
                json!({"name":"confirm","arguments":{}}),
            )
            .await;
        assert!(
            !call
                .messages
                .iter()
                .any(|m| m["method"] == "elicitation/create"),
            "{mode}: the client was asked: {:?}",
            call.messages
        );
        let error = &call.response(&json!(1))["error"];
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("cannot give") && message.contains("elicitation"),
            "{mode}: {}",
            call.body
        );
        let next = s
            .request(
                &c,
                &bridge.url,
                json!(2),
                "tools/call",
                json!({"name":"other","arguments":{}}),
            )
            .await;
        assert_eq!(
            first_text(&next.response(&json!(2))["result"]),
            "plain",
            "{mode}: {}",
            next.body
        );
    }
}

/// A stdio server whose one tool answers with the `_meta` its call carried.
const META_ECHO_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    def send(x):
        sys.stdout.write(json.dumps(x) + "\n"); sys.stdout.flush()
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "meta-echo", "version": "1"}}})
    elif m.get("method") == "tools/call":
        meta = m.get("params", {}).get("_meta", {})
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": json.dumps(meta)}]}})
    elif "id" in m and "method" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_context_in_meta_reaches_the_child_from_every_era() {
    let bridge =
        BridgeProc::start(&["--child", "shared"], &["python3", "-c", META_ECHO_SERVER]).await;
    let c = client();
    let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    // A legacy session.
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let reply = s
        .request(
            &c,
            &bridge.url,
            json!(1),
            "tools/call",
            json!({"name":"x","arguments":{},"_meta":{"traceparent":trace,"tracestate":"a=1","progressToken":"mine"}}),
        )
        .await;
    let seen: Value =
        serde_json::from_str(first_text(&reply.response(&json!(1))["result"])).unwrap();
    assert_eq!(seen["traceparent"], trace, "{seen}");
    assert_eq!(seen["tracestate"], "a=1", "{seen}");
    assert!(
        seen["progressToken"].is_string(),
        "a progress token is still there (the bridge's own): {seen}"
    );
    // A 2026-07-28 client: trace context kept, the 2026 members removed for the
    // 2025-11-25 child.
    let reply = modern(
        &c,
        &bridge.url,
        json!(2),
        "tools/call",
        json!({"name":"x","arguments":{},"_meta":{"traceparent":trace}}),
        json!({}),
    )
    .await;
    let seen: Value =
        serde_json::from_str(first_text(&reply.response(&json!(2))["result"])).unwrap();
    assert_eq!(seen["traceparent"], trace, "{seen}");
    assert!(
        seen.get("io.modelcontextprotocol/protocolVersion")
            .is_none(),
        "{seen}"
    );
}

/// A call the client cancels gets no response (the spec's SHOULD NOT), and its
/// POST stream ends instead of staying open; the cancellation reaches the child
/// and the session goes on. Per-session and shared children alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_calls_stream_ends_and_the_session_goes_on() {
    for mode in ["per-session", "shared"] {
        let bridge = BridgeProc::start(&["--child", mode], &[]).await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
        let call = json!({"jsonrpc":"2.0","id":42,"method":"tools/call",
            "params":{"name":"progress","arguments":{"seconds":20,"steps":20},
                "_meta":{"progressToken":"c"}}});
        let mut stream = post_streaming(&c, &bridge.url, &s.headers(), &call).await;
        // The call is running: its first progress event has come.
        let first = loop {
            let m = stream.next_message().await.expect("a progress event");
            if m["method"] == "notifications/progress" {
                break m;
            }
        };
        assert_eq!(first["params"]["progressToken"], "c", "{mode}");
        let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
            "params":{"requestId":42,"reason":"enough"}});
        assert_eq!(
            post(&c, &bridge.url, &s.headers(), &cancel).await.status,
            202
        );
        // The stream ends (within the reader's bound) with no response to 42.
        while let Some(m) = stream.next_message().await {
            assert!(
                m.get("id").is_none(),
                "{mode}: no response after a cancel: {m}"
            );
        }
        let list = s
            .request(&c, &bridge.url, json!(43), "tools/list", json!({}))
            .await;
        assert!(
            list.response(&json!(43))["result"]["tools"].is_array(),
            "{mode}: {}",
            list.body
        );
    }
}

/// The priming event of a 2025-11-25 stream carries `retry` (1 s unless told
/// otherwise; `--sse-retry 0` leaves it out), so a client whose stream broke
/// knows when to resume it; an older client's stream has no priming event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priming_events_carry_the_configured_retry() {
    let c = client();
    for (args, expected) in [
        (&[][..], Some("retry: 1000\n")),
        (&["--sse-retry", "250ms"][..], Some("retry: 250\n")),
        (&["--sse-retry", "0"][..], None),
    ] {
        let bridge = BridgeProc::start(args, &[]).await;
        // A client that takes only SSE (one taking JSON too gets a quick lone
        // response as JSON, with no stream to prime).
        let sse_list = |s: bridge_util::Session| {
            let c = c.clone();
            let url = bridge.url.clone();
            async move {
                let mut post = c
                    .post(&url)
                    .header("accept", "text/event-stream")
                    .header("content-type", "application/json");
                for (k, v) in s.headers() {
                    post = post.header(k, v);
                }
                post.body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
                    .send()
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap()
            }
        };
        let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
        let body = sse_list(s).await;
        let priming = body.split("\n\n").next().unwrap_or_default();
        assert!(
            priming.starts_with("id: ") && priming.ends_with("data:"),
            "the first event primes: {body}"
        );
        match expected {
            Some(field) => assert!(priming.contains(field), "{args:?}: {priming}"),
            None => assert!(!priming.contains("retry"), "{args:?}: {priming}"),
        }
        let old = open_session(&c, &bridge.url, "2025-06-18", json!({})).await;
        let body = sse_list(old).await;
        let first = body.split("\n\n").next().unwrap_or_default();
        assert!(
            !body.contains("retry:") && first.contains("data: {"),
            "no priming before 2025-11-25: {body}"
        );
    }
}

/// A bridge started with `args` and its banner's lines up to the last client
/// command (read with a bound); the bridge runs on (killed when dropped).
async fn bridge_and_banner(args: &[&str]) -> (tokio::process::Child, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    // The banner is logged (info, on stderr) like every other line.
    let mut child = tokio::process::Command::new(BIN)
        .args(["bridge", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut text = String::new();
    // The banner is printed at once; a short quiet spell ends it.
    while let Ok(Ok(Some(line))) =
        tokio::time::timeout(std::time::Duration::from_secs(2), lines.next_line()).await
    {
        text.push_str(&line);
        text.push('\n');
    }
    (child, text)
}

/// The banner's log lines (see [`bridge_and_banner`]), then the bridge is
/// stopped.
async fn banner(args: &[&str]) -> String {
    let (mut child, text) = bridge_and_banner(args).await;
    let _ = child.kill().await;
    text
}

/// The banner's sample `tools call` names a tool the client may call: with an
/// `--allow-tool` list without `progress`, it printed a command that could only
/// fail ("unknown tool").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_banner_suggests_only_calls_the_allowlist_permits() {
    let text = banner(&[]).await;
    assert!(text.contains(" tools list http://"), "{text}");
    assert!(text.contains(" tools call http://"), "{text}");
    let text = banner(&["--allow-tool", "echo"]).await;
    assert!(text.contains(" tools list http://"), "{text}");
    for line in text.lines().filter(|l| l.contains(" tools call ")) {
        assert!(
            line.contains(" echo"),
            "a call the allowlist refuses: {line}"
        );
    }
}

/// A port already in use fails at once with exit 2 and one line that names the
/// address (it said only "cannot listen: Address already in use").
#[test]
fn a_busy_port_is_named_in_the_error() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let out = std::process::Command::new(BIN)
        .args(["bridge", "--listen", &addr])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("switchboard: "))
        .unwrap_or_default();
    assert!(line.contains(&addr), "{stderr}");
}

/// A server command that can never start (no such file, not in `PATH`, not
/// executable) fails at once with exit 2 and one line naming it; the bridge used
/// to keep running, restarting it with backoff forever, `/readyz` at 503.
#[test]
fn a_server_command_that_cannot_start_is_refused_at_once() {
    let plain = std::env::temp_dir().join(format!("sb-plain-{}", std::process::id()));
    std::fs::write(&plain, "not a program").unwrap();
    let plain = plain.to_string_lossy().into_owned();
    for (command, says) in [
        ("/nonexistent/mcp-server", "/nonexistent/mcp-server"),
        ("no-such-mcp-server-anywhere", "not found in PATH"),
        (plain.as_str(), "not an executable file"),
    ] {
        let mut bridge = std::process::Command::new(BIN)
            .args(["bridge", "--listen", "127.0.0.1:0", "--", command])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Bounded: a bridge that keeps running fails the test, not hangs it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while bridge.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = bridge.kill();
                panic!("{command}: the bridge kept running");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = bridge.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        let line = stderr
            .lines()
            .find(|l| l.starts_with("switchboard: cannot run the server command: "))
            .unwrap_or_default();
        assert!(line.contains(says), "{command}: {stderr}");
    }
    std::fs::remove_file(&plain).unwrap();
}

/// The banner's legacy, health and readiness URLs are the ones the bridge
/// serves: with `--path /a/b/mcp` it printed `/a/b/sse`, `/a/b/healthz` and
/// `/a/b/readyz`, which are 404 (they are at the listener's root).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_banner_names_the_urls_served_with_a_nested_path() {
    let (mut child, text) = bridge_and_banner(&["--path", "/a/b/mcp"]).await;
    let urls: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("switchboard bridge: ") && !line.contains(" tools "))
        .flat_map(str::split_whitespace)
        .filter(|word| word.starts_with("http://"))
        .map(|word| word.trim_end_matches(','))
        .collect();
    assert_eq!(urls.len(), 4, "mcp, sse, healthz, readyz: {urls:?}");
    assert!(urls[0].ends_with("/a/b/mcp"), "{urls:?}");
    let c = client();
    for url in &urls[1..] {
        let resp = c.get(*url).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{url} (of {urls:?})");
    }
    let _ = child.kill().await;
}

/// A child that says `notifications/tools/list_changed` again and again without
/// changing its list (server-everything does so six times at start-up) gets one
/// drift warning for an allowed tool it lacks, not one per notification: the
/// warning is repeated only when the missing names change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_logged_once_while_the_missing_names_stay_the_same() {
    use tokio::io::AsyncReadExt;
    let child = r#"
import json, sys
def send(m): print(json.dumps(m), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {"listChanged": True}},
              "serverInfo": {"name": "noisy", "version": "1"}}})
    elif m.get("method") == "notifications/initialized":
        for _ in range(5):
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif m.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [
              {"name": "echo", "inputSchema": {"type": "object"}}]}})
    elif "id" in m and "method" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;
    let mut bridge = tokio::process::Command::new(BIN)
        .args(["bridge", "--listen", "127.0.0.1:0", "--child", "shared"])
        .args(["--allow-tool", "echo", "--allow-tool", "missing"])
        .args(["--", "python3", "-c", child])
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = bridge.stderr.take().unwrap();
    // Start-up, the five notifications and their refetches: well within 3 s.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let _ = bridge.kill().await;
    let mut text = String::new();
    let _ = tokio::time::timeout(WAIT, stderr.read_to_string(&mut text)).await;
    let drift = text.lines().filter(|l| l.contains("drift:")).count();
    assert_eq!(drift, 1, "{text}");
    assert!(text.contains(r#"missing=["missing"]"#), "{text}");
}

/// `--allow-host` adds a name to the loopback defaults instead of replacing
/// them, and the loopback names pass with any port or none; with
/// `--no-default-hosts` only the allowed names pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_host_adds_to_the_loopback_names() {
    let c = client();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}});
    let bridge = BridgeProc::start(&["--allow-host", "mcp.example"], &[]).await;
    let port = bridge.base.rsplit(':').next().unwrap().to_owned();
    for host in [
        format!("127.0.0.1:{port}"),
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "[::1]".to_owned(),
        "mcp.example".to_owned(),
        format!("mcp.example:{port}"),
    ] {
        let reply = post(&c, &bridge.url, &[("host", host.as_str())], &init).await;
        assert_eq!(reply.status, 200, "Host: {host}: {}", reply.body);
    }
    let reply = post(&c, &bridge.url, &[("host", "evil.example")], &init).await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    let strict =
        BridgeProc::start(&["--allow-host", "mcp.example", "--no-default-hosts"], &[]).await;
    let port = strict.base.rsplit(':').next().unwrap().to_owned();
    let own = format!("127.0.0.1:{port}");
    let reply = post(&c, &strict.url, &[("host", own.as_str())], &init).await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    let reply = post(&c, &strict.url, &[("host", "mcp.example")], &init).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// A raw client of a bridge in front of a server that speaks only 2024-11-05:
/// the negotiated 2024-11-05 is accepted in `MCP-Protocol-Version`, and each
/// `Accept` gets a type it allows (`*/*` the bridge's choice, SSE; one type
/// alone that type), 406 only when neither JSON nor SSE is acceptable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2024_11_05_server_behind_the_bridge_serves_every_accept() {
    let bridge = BridgeProc::start(
        &[],
        &[BIN, "example-server", "--protocol-version", "2024-11-05"],
    )
    .await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    assert_eq!(s.version, "2024-11-05", "the child's revision");
    let call = |id: i64| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
               "params":{"name":"echo","arguments":{"text":"accepted"}}})
    };
    // A quick lone response is JSON for a client that takes either.
    for (id, accept, expected) in [
        (1, "*/*", Some("application/json")),
        (2, "application/json", Some("application/json")),
        (3, "text/event-stream", Some("text/event-stream")),
        (
            4,
            "application/json, text/event-stream",
            Some("application/json"),
        ),
        (5, "text/html", None),
    ] {
        let resp = c
            .post(&bridge.url)
            .header("accept", accept)
            .header("content-type", "application/json")
            .header("mcp-session-id", &s.id)
            .header("mcp-protocol-version", "2024-11-05")
            .body(call(id).to_string())
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let Some(expected) = expected else {
            assert_eq!(status, 406, "Accept: {accept}");
            continue;
        };
        assert_eq!(status, 200, "Accept: {accept}");
        let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
        assert_eq!(content_type, expected, "Accept: {accept}");
        let body = resp.text().await.unwrap();
        let answer = if expected == "application/json" {
            serde_json::from_str::<Value>(&body).unwrap()
        } else {
            sse_messages(&body).pop().expect("the response")
        };
        assert_eq!(answer["id"], id, "{body}");
        assert_eq!(first_text(&answer["result"]), "accepted", "{body}");
    }
    assert_eq!(s.delete(&c, &bridge.url).await, 200);
    let gone = s.echo(&c, &bridge.url, 6, "gone").await;
    assert_eq!(gone.status, 404, "{}", gone.body);
}

/// The child's environment: by default only the safe set (a secret of the
/// bridge's is not there: before, the child inherited it), `--env NAME=VALUE`
/// and `--env NAME` add to it, `--inherit-env` gives it everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_gets_the_safe_environment_unless_it_inherits() {
    let upstream =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gateway_upstream.py");
    let cmd = [
        "python3",
        upstream.to_str().unwrap(),
        "--name",
        "b",
        "--tool",
        "env",
    ];
    let secret = [("BRIDGE_SECRET", "s3cret"), ("PASSED", "on")];
    let c = client();
    for (flags, expect_secret, expect_given) in [
        (
            &["--env", "GIVEN=yes", "--env", "PASSED"][..],
            "(unset)",
            "yes",
        ),
        (&["--inherit-env"][..], "s3cret", "(unset)"),
    ] {
        let mut args = vec!["--child", "shared"];
        args.extend_from_slice(flags);
        let bridge = BridgeProc::start_with_env(&args, &cmd, &secret).await;
        let mut got = Vec::new();
        for (id, var) in ["BRIDGE_SECRET", "GIVEN", "PASSED"].into_iter().enumerate() {
            let params = json!({"name": "env", "arguments": {"text": var}});
            let reply = modern(&c, &bridge.url, json!(id), "tools/call", params, json!({})).await;
            got.push(first_text(&reply.response(&json!(id))["result"]).to_owned());
        }
        let expect_passed = if flags.contains(&"PASSED") || flags.contains(&"--inherit-env") {
            "on"
        } else {
            "(unset)"
        };
        assert_eq!(
            got,
            [
                format!("b:env:BRIDGE_SECRET={expect_secret}"),
                format!("b:env:GIVEN={expect_given}"),
                format!("b:env:PASSED={expect_passed}"),
            ],
            "{flags:?}"
        );
        bridge.terminate();
    }
}

/// The banner goes through the logger (a timestamp and a level on each line,
/// JSON with `--log-format json`); stdout has the endpoints alone, one
/// `NAME: URL` a line, for a script that listened on port 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_banner_is_logged_and_stdout_has_the_endpoints_alone() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    let mut child = tokio::process::Command::new(BIN)
        .args(["bridge", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut logged = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            let v: serde_json::Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            let message = v["fields"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let done = message.contains("try it in another terminal");
            logged.push((v["level"].as_str().unwrap_or_default().to_owned(), message));
            if done {
                break;
            }
        }
    })
    .await
    .expect("the banner is logged in time");
    assert!(
        logged
            .iter()
            .any(|(level, m)| level == "INFO" && m.starts_with("switchboard bridge: serving ")),
        "{logged:?}"
    );
    let _ = child.kill().await;
    let mut out = String::new();
    stdout.read_to_string(&mut out).await.unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("route /mcp: http://127.0.0.1:") && lines[0].ends_with("/mcp"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("sse: http://127.0.0.1:") && lines[1].ends_with("/sse"),
        "{out}"
    );
}
