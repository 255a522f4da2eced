//! Wire-level exactness of the bridge: what a client writes in a payload reaches
//! the child as written, and what the child writes reaches the client as written,
//! also where the bridge has to edit the message (a progress token mapped, the
//! 2026-07-28 `_meta` removed for a legacy child). Bodies are sent and read as
//! text: `serde_json::Value` would itself round `123456789012345678901234567890`
//! and turn `-0` into `-0.0`, hiding what is under test.

mod bridge_util;

use bridge_util::*;
use switchboard_protocol::codec::{SseItem, SseParser};

/// A child that answers every `tools/call` with the raw line it read (as the
/// text of its one content block), after three `notifications/progress` that
/// carry its request's token written back exactly as it read it, with a
/// `_meta` member of its own holding wide numbers.
const RAW_ECHO_CHILD: &str = r#"
import json, re, sys
def send(line):
    sys.stdout.write(line + "\n"); sys.stdout.flush()
for line in sys.stdin:
    line = line.rstrip("\n")
    m = json.loads(line)
    if m.get("method") == "initialize":
        send(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
             "capabilities": {"tools": {}}, "serverInfo": {"name": "raw-echo", "version": "1"}}}))
    elif m.get("method") == "tools/call":
        tok = re.search(r'"progressToken":("(?:[^"\\]|\\.)*"|[-0-9.eE+]+)', line)
        if tok:
            for i in range(3):
                send('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,'
                     '"progress":%d,"total":3,"_meta":{"x.example/wide":98765432109876543210987,"z":-0}}}'
                     % (tok.group(1), i + 1))
        send(json.dumps({"jsonrpc": "2.0", "id": m["id"],
             "result": {"content": [{"type": "text", "text": line}]}}))
    elif "id" in m and "method" in m:
        send(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}))
"#;

/// Tool arguments that `serde_json::Value` would not write back as they are.
const ARGS: &str =
    r#"{"big":123456789012345678901234567890,"neg0":-0,"f":1.50,"e":1e400,"u":"\u00e9"}"#;

/// POSTs `body` as it is; the status and the raw body.
async fn post_text(
    c: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: String,
) -> (u16, String) {
    let mut req = c
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("the POST is answered");
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// The messages of a reply as raw text: each SSE event's data, or the JSON body.
fn raw_messages(body: &str) -> Vec<String> {
    if body.trim_start().starts_with('{') {
        return vec![body.to_owned()];
    }
    let mut parser = SseParser::new();
    parser
        .feed(body.as_bytes())
        .filter_map(|item| match item {
            Ok(SseItem::Event(e)) if !e.data.is_empty() => Some(e.data),
            _ => None,
        })
        .collect()
}

/// The text of the child's answer: the raw line it read.
fn child_saw(messages: &[String]) -> String {
    let result = messages
        .iter()
        .find(|m| m.contains("\"result\""))
        .unwrap_or_else(|| panic!("a result in {messages:?}"));
    let v: serde_json::Value = serde_json::from_str(result).unwrap();
    first_text(&v["result"]).to_owned()
}

/// With a progress token to map, the bridge edits the request's `_meta`; the
/// arguments beside it must still reach the child exactly as the client wrote
/// them, and the child's progress must come back under the client's own token,
/// as written, with the child's `_meta` as written. Both child modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mapped_progress_token_leaves_the_rest_of_the_message_as_written() {
    for mode in ["shared", "per-session"] {
        let bridge =
            BridgeProc::start(&["--child", mode], &["python3", "-c", RAW_ECHO_CHILD]).await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-11-25", serde_json::json!({})).await;
        for (n, token) in ["\"tok\"", "-0", "123456789012345678901234567890"]
            .into_iter()
            .enumerate()
        {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"x","arguments":{ARGS},"_meta":{{"progressToken":{token},"x.example/n":98765432109876543210987}}}}}}"#
            );
            let (status, reply) = post_text(&c, &bridge.url, &s.headers(), body).await;
            assert_eq!(status, 200, "{mode} {token}: {reply}");
            let messages = raw_messages(&reply);
            let seen = child_saw(&messages);
            assert!(
                seen.contains(&format!(r#""arguments":{ARGS}"#)),
                "{mode} {token}: the arguments as written, got {seen}"
            );
            assert!(
                seen.contains(r#""x.example/n":98765432109876543210987"#),
                "{mode} {token}: the other _meta members as written, got {seen}"
            );
            assert!(
                !seen.contains(&format!(r#""progressToken":{token}"#)),
                "{mode} {token}: the token is the bridge's own upstream, got {seen}"
            );
            let progress: Vec<&String> = messages
                .iter()
                .filter(|m| m.contains("notifications/progress"))
                .collect();
            assert_eq!(progress.len(), 3, "{mode} {token}: {reply}");
            for p in progress {
                assert!(
                    p.contains(&format!(r#""progressToken":{token},"#)),
                    "{mode} {token}: the client's own token as written, got {p}"
                );
                assert!(
                    p.contains(r#""x.example/wide":98765432109876543210987,"z":-0"#),
                    "{mode} {token}: the child's _meta as written, got {p}"
                );
            }
        }
    }
}

/// [`ARGS`] without `1e400`, which the 2026-07-28 checks (decoded JSON) refuse.
const MODERN_ARGS: &str =
    r#"{"big":123456789012345678901234567890,"neg0":-0,"f":1.50,"u":"\u00e9"}"#;

/// The headers of a 2026-07-28 `tools/call` of tool `x`.
const MODERN_HEADERS: [(&str, &str); 3] = [
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "x"),
];

/// The body of a 2026-07-28 `tools/call` of tool `x` with `args` (raw JSON) and
/// the request `_meta` of 2026-07-28, followed by `more_meta` (raw members,
/// each with a leading comma).
fn modern_call(args: &str, more_meta: &str) -> String {
    let meta = modern_meta(serde_json::json!({})).to_string();
    let meta = &meta[1..meta.len() - 1];
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{args},"_meta":{{{meta}{more_meta}}}}}}}"#
    )
}

/// A 2026-07-28 client in front of a legacy child: the bridge removes the 2026
/// `_meta` members, and must leave the arguments as the client wrote them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_request_reaches_a_legacy_child_with_its_arguments_as_written() {
    for mode in ["shared", "per-session"] {
        let bridge =
            BridgeProc::start(&["--child", mode], &["python3", "-c", RAW_ECHO_CHILD]).await;
        let c = client();
        let body = modern_call(
            MODERN_ARGS,
            r#","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01""#,
        );
        let (status, reply) = post_text(&c, &bridge.url, &MODERN_HEADERS, body).await;
        assert_eq!(status, 200, "{mode}: {reply}");
        let seen = child_saw(&raw_messages(&reply));
        assert!(
            seen.contains(&format!(r#""arguments":{MODERN_ARGS}"#)),
            "{mode}: the arguments as written, got {seen}"
        );
        assert!(
            seen.contains(
                r#""traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01""#
            ) && !seen.contains("io.modelcontextprotocol/"),
            "{mode}: trace context kept, the 2026 members removed, got {seen}"
        );
    }
}

/// A child that never answers `tools/call`: it appends each `tools/call` and
/// `notifications/cancelled` line it reads to the file named by its argument.
const RECORDS_CANCELS: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
             "capabilities": {"tools": {}}, "serverInfo": {"name": "cancels", "version": "1"}}}) + "\n")
        sys.stdout.flush()
    elif m.get("method") in ("tools/call", "notifications/cancelled"):
        with open(sys.argv[1], "a") as f:
            f.write(line)
"#;

/// A client's cancellation reaches the child under the child's own id, with
/// the client's reason, also for a request id wider than 64 bits (read as
/// written, never through `f64`). Both child modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_reaches_the_child_with_the_clients_reason() {
    for mode in ["shared", "per-session"] {
        let seen = temp_path(&format!("cancels-{mode}"));
        let file = seen.to_string_lossy().into_owned();
        let bridge = BridgeProc::start(
            &["--child", mode],
            &["python3", "-c", RECORDS_CANCELS, &file],
        )
        .await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-11-25", serde_json::json!({})).await;
        let id = "123456789012345678901234567890";
        let headers: Vec<(String, String)> = s
            .headers()
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let (c2, url) = (c.clone(), bridge.url.clone());
        let call = tokio::spawn(async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (&**k, &**v)).collect();
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"x"}}}}"#
            );
            post_text(&c2, &url, &h, body).await
        });
        let read = || std::fs::read_to_string(&seen).unwrap_or_default();
        wait_until("the call reached the child", || {
            read().contains("tools/call")
        })
        .await;
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"the user pressed stop"}}}}"#
        );
        let (status, _) = post_text(&c, &bridge.url, &s.headers(), cancel).await;
        assert_eq!(status, 202, "{mode}");
        wait_until("the child saw the cancellation", || {
            read().contains("notifications/cancelled")
        })
        .await;
        let text = read();
        let line = text
            .lines()
            .find(|l| l.contains("notifications/cancelled"))
            .unwrap();
        assert!(
            line.contains(r#""reason": "the user pressed stop""#)
                || line.contains(r#""reason":"the user pressed stop""#),
            "{mode}: the client's reason, got {line}"
        );
        assert!(!line.contains(id), "{mode}: the child's own id, got {line}");
        let (_, reply) = tokio::time::timeout(WAIT, call)
            .await
            .expect("the cancelled call's POST ends")
            .unwrap();
        assert!(!reply.contains(r#""result""#), "{mode}: {reply}");
        let _ = std::fs::remove_file(&seen);
    }
}

/// A 2026-07-28 request whose params hold a number beyond a 64-bit float (valid
/// JSON the bridge's checks cannot decode) is refused with -32602 saying so,
/// not "params must be an object".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_request_the_bridge_cannot_decode_is_told_why() {
    let bridge =
        BridgeProc::start(&["--child", "shared"], &["python3", "-c", RAW_ECHO_CHILD]).await;
    let c = client();
    let (_, reply) = post_text(&c, &bridge.url, &MODERN_HEADERS, modern_call(ARGS, "")).await;
    let v: serde_json::Value = serde_json::from_str(&raw_messages(&reply)[0]).unwrap();
    assert_eq!(v["error"]["code"], -32602, "{reply}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("could not be read") && message.contains("out of range"),
        "{message}"
    );
}
