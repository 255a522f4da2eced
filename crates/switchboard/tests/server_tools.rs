//! `Server::handle` for tools: the conformance fixture's tools through every
//! revision, argument validation per revision, outputSchema enforcement, the tool
//! context (progress, logging, sampling, elicitation, cancellation), registration
//! errors.

mod common;

use common::conformance_fixture::{
    self as fixture, first_text, ERROR_TEXT, SIMPLE_TEXT, TOOL_NAMES,
};
use common::{Harness, ALL};
use serde_json::{json, Value};
use switchboard::server::testing::RecordingSink;
use switchboard::server::{ContextError, RegistrationError, Server, ToolContext, ToolError};
use switchboard_protocol::jsonrpc::code;
use switchboard_protocol::types::{
    CallToolResult, Implementation, LoggingLevel, ServerNotification, ServerRequest, Tool,
};
use switchboard_protocol::ProtocolVersion::*;

fn tool(name: &str, input: Value, output: Option<Value>) -> Tool {
    let mut v = json!({"name": name, "inputSchema": input});
    if let Some(o) = output {
        v["outputSchema"] = o;
    }
    serde_json::from_value(v).unwrap()
}

fn info() -> Implementation {
    Implementation::new("t", "1")
}

#[tokio::test]
async fn tools_list_has_every_fixture_tool_with_valid_names() {
    for v in ALL {
        let h = Harness::new(fixture::server(), v);
        let r = h.call("tools/list", json!({})).await.unwrap();
        let names: Vec<&str> = r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, TOOL_NAMES, "{v}");
        assert!(r.get("nextCursor").is_none());
        let schema = &r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "json_schema_2020_12_tool")
            .unwrap()["inputSchema"];
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert!(schema["$defs"]["address"].is_object());
        assert_eq!(schema["additionalProperties"], false);
    }
}

#[tokio::test]
async fn every_fixture_tool_answers() {
    let h = Harness::new(fixture::server(), V2025_11_25)
        .with_caps(json!({"sampling": {}, "elicitation": {}}));
    let r = h.call_tool("test_simple_text", json!({})).await.unwrap();
    assert_eq!(first_text(&r), SIMPLE_TEXT);
    assert!(r.get("isError").is_none());
    let r = h.call_tool("test_image_content", json!({})).await.unwrap();
    assert_eq!(r["content"][0]["type"], "image");
    assert_eq!(r["content"][0]["mimeType"], "image/png");
    let r = h.call_tool("test_audio_content", json!({})).await.unwrap();
    assert_eq!(r["content"][0]["type"], "audio");
    let r = h
        .call_tool("test_embedded_resource", json!({}))
        .await
        .unwrap();
    assert_eq!(
        r["content"][0]["resource"]["uri"],
        "test://embedded-resource"
    );
    let r = h
        .call_tool("test_multiple_content_types", json!({}))
        .await
        .unwrap();
    let blocks = fixture::decode_blocks(&r);
    let kinds: Vec<&str> = blocks.iter().map(|b| b.type_name()).collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    let r = h
        .call_tool("test_tool_with_logging", json!({}))
        .await
        .unwrap();
    assert!(first_text(&r).contains("logging"));
    let r = h
        .call_tool("test_tool_with_progress", json!({}))
        .await
        .unwrap();
    assert!(first_text(&r).contains("progress"));
    let r = h.call_tool("test_error_handling", json!({})).await.unwrap();
    assert_eq!(r["isError"], true);
    assert_eq!(first_text(&r), ERROR_TEXT);

    let sink = RecordingSink::new();
    sink.push_answer(Ok(json!({"role": "assistant",
        "content": {"type": "text", "text": "hello"}, "model": "m"})));
    let r = h
        .call_with(
            "tools/call",
            json!({"name": "test_sampling", "arguments": {"prompt": "hi"}}),
            sink.clone(),
        )
        .await
        .unwrap();
    assert_eq!(first_text(&r), "LLM response: hello");
    assert!(matches!(
        &sink.requests()[..],
        [ServerRequest::CreateMessage(_)]
    ));

    let sink = RecordingSink::new();
    sink.push_answer(Ok(json!({"action": "accept",
        "content": {"username": "u", "email": "e@x"}})));
    let r = h
        .call_with(
            "tools/call",
            json!({"name": "test_elicitation", "arguments": {"message": "who?"}}),
            sink.clone(),
        )
        .await
        .unwrap();
    assert!(first_text(&r).contains("accept"), "{r}");
    assert!(
        matches!(&sink.requests()[..], [ServerRequest::Elicit(p)] if p.message() == Some("who?"))
    );

    // SEP-1034 defaults and SEP-1330 enum variants, as the suite checks them.
    for (tool, field, expected) in [
        (
            "test_elicitation_sep1034_defaults",
            "age",
            json!({"type": "integer", "description": "User age", "default": 30}),
        ),
        (
            "test_elicitation_sep1330_enums",
            "legacyEnum",
            json!({"type": "string", "description": "Legacy titled enum",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]}),
        ),
    ] {
        let sink = RecordingSink::new();
        sink.push_answer(Ok(json!({"action": "decline"})));
        let r = h
            .call_with(
                "tools/call",
                json!({"name": tool, "arguments": {}}),
                sink.clone(),
            )
            .await
            .unwrap();
        assert_eq!(
            first_text(&r),
            "Elicitation completed: action=decline, content={}",
            "{tool}"
        );
        let requests = sink.requests();
        let [ServerRequest::Elicit(p)] = &requests[..] else {
            panic!("{tool}: {requests:?}");
        };
        let p = serde_json::to_value(p).unwrap();
        assert_eq!(
            p["requestedSchema"]["properties"][field], expected,
            "{tool}"
        );
    }

    let r = h
        .call_tool(
            "json_schema_2020_12_tool",
            json!({"name": "n", "address": {"city": "c"}}),
        )
        .await
        .unwrap();
    assert!(r.get("isError").is_none(), "{r}");
}

#[tokio::test]
async fn invalid_arguments_are_invalid_params_before_2025_11_25_and_is_error_after() {
    let bad = [
        ("test_sampling", json!({})),
        ("test_sampling", json!({"prompt": 5})),
        ("json_schema_2020_12_tool", json!({"name": "n", "extra": 1})),
        (
            "json_schema_2020_12_tool",
            json!({"name": "n", "address": {"street": "s"}}),
        ),
    ];
    for v in ALL {
        let h = Harness::new(fixture::server(), v).with_caps(json!({"sampling": {}}));
        for (name, args) in &bad {
            let sink = RecordingSink::new();
            let r = h
                .call_with(
                    "tools/call",
                    json!({"name": name, "arguments": args}),
                    sink.clone(),
                )
                .await;
            if v >= V2025_11_25 {
                let r = r.unwrap();
                assert_eq!(r["isError"], true, "{v} {name} {args}");
                assert!(first_text(&r).contains("invalid arguments"), "{r}");
            } else {
                let e = r.unwrap_err();
                assert_eq!(e.code, code::INVALID_PARAMS, "{v} {name} {args}");
                assert!(e.message.contains(name));
            }
            assert!(sink.requests().is_empty(), "the handler must not run");
        }
    }
}

#[tokio::test]
async fn unknown_tool_is_invalid_params() {
    for v in ALL {
        let h = Harness::new(fixture::server(), v);
        let e = h.call_tool("no_such_tool", json!({})).await.unwrap_err();
        assert_eq!(e.code, code::INVALID_PARAMS);
        assert!(e.message.contains("no_such_tool"));
    }
}

fn output_server() -> Server {
    let out = json!({"type": "object", "properties": {"n": {"type": "integer"}},
        "required": ["n"]});
    let structured = |v: Value| CallToolResult {
        structured_content: Some(v),
        ..Default::default()
    };
    Server::builder(info())
        .tool(
            tool("good", json!({"type": "object"}), Some(out.clone())),
            move |_, _| async move { Ok(structured(json!({"n": 1}))) },
        )
        .tool(
            tool("mismatch", json!({"type": "object"}), Some(out.clone())),
            move |_, _| async move { Ok(structured(json!({"n": "one"}))) },
        )
        .tool(
            tool("missing", json!({"type": "object"}), Some(out.clone())),
            |_, _| async { Ok(CallToolResult::default()) },
        )
        .tool(
            tool("fails", json!({"type": "object"}), Some(out)),
            |_, _| async { Err(ToolError::new("boom")) },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn output_schema_is_enforced() {
    let h = Harness::new(output_server(), V2025_06_18);
    let r = h.call_tool("good", json!({})).await.unwrap();
    assert_eq!(r["structuredContent"], json!({"n": 1}));
    assert_eq!(r["content"], json!([{"type": "text", "text": "{\"n\":1}"}]));
    for name in ["mismatch", "missing"] {
        let e = h.call_tool(name, json!({})).await.unwrap_err();
        assert_eq!(e.code, code::INTERNAL_ERROR, "{name}");
    }
    let r = h.call_tool("fails", json!({})).await.unwrap();
    assert_eq!(
        (r["isError"].clone(), first_text(&r)),
        (json!(true), "boom")
    );
    // Before 2025-06-18 there is no structuredContent: the text block remains.
    let h = Harness::new(output_server(), V2025_03_26);
    let r = h.call_tool("good", json!({})).await.unwrap();
    assert!(r.get("structuredContent").is_none());
    assert_eq!(first_text(&r), "{\"n\":1}");
    let r = h.call("tools/list", json!({})).await.unwrap();
    assert!(r["tools"][0].get("outputSchema").is_none());
}

#[tokio::test]
async fn progress_is_sent_only_with_a_token_and_must_increase() {
    let h = Harness::new(fixture::server(), V2025_11_25);
    let sink = RecordingSink::new();
    h.call_with(
        "tools/call",
        json!({"name": "test_tool_with_progress"}),
        sink.clone(),
    )
    .await
    .unwrap();
    assert!(sink.notifications().is_empty());

    let sink = RecordingSink::new();
    h.call_with(
        "tools/call",
        json!({"name": "test_tool_with_progress", "_meta": {"progressToken": "tok"}}),
        sink.clone(),
    )
    .await
    .unwrap();
    let values: Vec<f64> = sink
        .notifications()
        .iter()
        .map(|n| match n {
            ServerNotification::Progress(p) => {
                assert_eq!(p.progress_token, "tok".into());
                assert_eq!(p.total_f64(), Some(100.0));
                assert!(p.message.is_some());
                p.progress_f64()
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(values, [0.0, 50.0, 100.0]);

    // 2024-11-05 has no progress message.
    let h = Harness::new(fixture::server(), V2024_11_05);
    let sink = RecordingSink::new();
    h.call_with(
        "tools/call",
        json!({"name": "test_tool_with_progress", "_meta": {"progressToken": 7}}),
        sink.clone(),
    )
    .await
    .unwrap();
    assert!(sink
        .notifications()
        .iter()
        .all(|n| matches!(n, ServerNotification::Progress(p) if p.message.is_none())));

    let server = Server::builder(info())
        .tool(
            tool("twice", json!({"type": "object"}), None),
            |_, ctx: ToolContext| async move {
                assert!(ctx.progress(5.0, None, None).await?);
                match ctx.progress(5.0, None, None).await {
                    Err(ContextError::ProgressNotIncreasing { progress, last }) => {
                        assert_eq!((progress, last), (5.0, 5.0));
                    }
                    other => panic!("{other:?}"),
                }
                assert!(matches!(
                    ctx.progress(f64::NAN, None, None).await,
                    Err(ContextError::ProgressNotFinite)
                ));
                Ok(CallToolResult::default())
            },
        )
        .build()
        .unwrap();
    let h = Harness::new(server, V2025_06_18);
    let sink = RecordingSink::new();
    h.call_with(
        "tools/call",
        json!({"name": "twice", "_meta": {"progressToken": "p"}}),
        sink.clone(),
    )
    .await
    .unwrap();
    assert_eq!(sink.notifications().len(), 1);
}

fn log_levels(sink: &RecordingSink) -> Vec<LoggingLevel> {
    sink.notifications()
        .iter()
        .map(|n| match n {
            ServerNotification::LoggingMessage(m) => m.level,
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

async fn logged(h: &Harness, params: Value) -> Vec<LoggingLevel> {
    let sink = RecordingSink::new();
    h.call_with("tools/call", params, sink.clone())
        .await
        .unwrap();
    log_levels(&sink)
}

#[tokio::test]
async fn legacy_logging_follows_set_level() {
    use LoggingLevel::*;
    let call = json!({"name": "test_tool_with_logging"});
    let h = Harness::new(fixture::server(), V2025_06_18);
    assert_eq!(logged(&h, call.clone()).await, [Info, Info, Info, Debug]);
    for (level, expected) in [
        ("warning", vec![]),
        ("info", vec![Info, Info, Info]),
        ("debug", vec![Info, Info, Info, Debug]),
    ] {
        let r = h
            .call("logging/setLevel", json!({"level": level}))
            .await
            .unwrap();
        assert_eq!(r, json!({}));
        assert_eq!(h.session.log_level().unwrap().as_str(), level);
        assert_eq!(logged(&h, call.clone()).await, expected, "{level}");
    }
}

#[tokio::test]
async fn modern_logging_needs_the_request_log_level() {
    use LoggingLevel::*;
    let h = Harness::new(fixture::server(), V2026_07_28);
    assert!(logged(&h, json!({"name": "test_tool_with_logging"}))
        .await
        .is_empty());
    let with = |level: &str| {
        json!({"name": "test_tool_with_logging",
            "_meta": {"io.modelcontextprotocol/logLevel": level}})
    };
    assert_eq!(logged(&h, with("info")).await, [Info, Info, Info]);
    assert_eq!(logged(&h, with("debug")).await.len(), 4);
    let e = h.call("tools/call", with("loud")).await.unwrap_err();
    assert_eq!(e.code, code::INVALID_PARAMS);
    // logging/setLevel does not exist in 2026-07-28.
    let e = h
        .call("logging/setLevel", json!({"level": "debug"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, code::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn without_the_logging_capability_nothing_is_logged() {
    let server = fixture::builder().logging(false).build().unwrap();
    assert!(server.capabilities().logging.is_none());
    let h = Harness::new(server, V2025_06_18);
    assert!(logged(&h, json!({"name": "test_tool_with_logging"}))
        .await
        .is_empty());
    let e = h
        .call("logging/setLevel", json!({"level": "debug"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, code::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn sampling_elicitation_and_roots_are_refused_locally_without_the_capability() {
    for v in ALL {
        let h = Harness::new(fixture::server(), v);
        let sink = RecordingSink::new();
        let r = h
            .call_with(
                "tools/call",
                json!({"name": "test_sampling", "arguments": {"prompt": "x"}}),
                sink.clone(),
            )
            .await
            .unwrap();
        assert_eq!(r["isError"], true);
        assert!(first_text(&r).contains("sampling"), "{r}");
        let r = h
            .call_with(
                "tools/call",
                json!({"name": "test_elicitation", "arguments": {"message": "x"}}),
                sink.clone(),
            )
            .await
            .unwrap();
        assert_eq!(r["isError"], true);
        assert!(first_text(&r).contains("elicitation"), "{r}");
        assert!(
            sink.requests().is_empty(),
            "{v}: nothing may reach the client"
        );
    }
    // Elicitation does not exist before 2025-06-18, whatever the client declares.
    let h = Harness::new(fixture::server(), V2025_03_26).with_caps(json!({"elicitation": {}}));
    let r = h
        .call_tool("test_elicitation", json!({"message": "x"}))
        .await
        .unwrap();
    assert!(first_text(&r).contains("2025-03-26"), "{r}");

    let server = Server::builder(info())
        .tool(
            tool("roots", json!({"type": "object"}), None),
            |_, ctx: ToolContext| async move {
                let roots = ctx.list_roots().await?;
                Ok(serde_json::from_value(json!({"content": [{"type": "text",
                "text": roots.roots.len().to_string()}]}))
                .unwrap())
            },
        )
        .tool(
            tool("url", json!({"type": "object"}), None),
            |_, ctx: ToolContext| async move {
                let p = serde_json::from_value(json!({"mode": "url", "message": "m",
                "url": "https://x", "elicitationId": "e"}))
                .unwrap();
                ctx.elicit(p).await?;
                Ok(CallToolResult::default())
            },
        )
        .build()
        .unwrap();
    let h = Harness::new(server.clone(), V2025_11_25);
    let r = h.call_tool("roots", json!({})).await.unwrap();
    assert!(first_text(&r).contains("roots"));
    let h = Harness::new(server.clone(), V2025_11_25).with_caps(json!({"roots": {}}));
    let sink = RecordingSink::new();
    sink.push_answer(Ok(json!({"roots": [{"uri": "file:///a"}]})));
    let r = h
        .call_with("tools/call", json!({"name": "roots"}), sink.clone())
        .await
        .unwrap();
    assert_eq!(first_text(&r), "1");
    // `elicitation: {}` means form only: URL mode is refused.
    let h = Harness::new(server, V2025_11_25).with_caps(json!({"elicitation": {}}));
    let r = h.call_tool("url", json!({})).await.unwrap();
    assert!(first_text(&r).contains("elicitation.url"), "{r}");
}

#[tokio::test]
async fn cancellation_is_visible_to_the_handler() {
    let server = Server::builder(info())
        .tool(
            tool("wait", json!({"type": "object"}), None),
            |_, ctx: ToolContext| async move {
                ctx.cancelled().await;
                assert!(ctx.is_cancelled());
                Err(ToolError::new("cancelled"))
            },
        )
        .build()
        .unwrap();
    let h = Harness::new(server, V2025_11_25);
    let sink = RecordingSink::new();
    let canceller = {
        let sink = sink.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            sink.cancel();
        })
    };
    let r = h
        .call_with("tools/call", json!({"name": "wait"}), sink)
        .await
        .unwrap();
    canceller.await.unwrap();
    assert_eq!(first_text(&r), "cancelled");
}

#[test]
fn registration_errors_are_reported_by_build() {
    let ok = |_, _| async { Ok(CallToolResult::default()) };
    let err = Server::builder(info())
        .tool(tool("bad name", json!({"type": "object"}), None), ok)
        .tool(tool("a", json!({"type": "object"}), None), ok)
        .tool(tool("a", json!({"type": "object"}), None), ok)
        .tool(tool("no_object", json!({"type": "string"}), None), ok)
        .tool(tool("bad_schema", json!({"type": "object", "minimum": "x"}), None), ok)
        .tool(
            tool("bad_output", json!({"type": "object"}), Some(json!({"type": 5}))),
            ok,
        )
        .tool(
            tool(
                "remote_ref",
                json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}),
                None,
            ),
            ok,
        )
        .prompt_completion("nope", "x", |_| async { Ok(vec![]) })
        .build()
        .unwrap_err();
    let e = &err.errors;
    assert_eq!(e.len(), 7, "{e:#?}");
    assert!(matches!(&e[0], RegistrationError::InvalidToolName(n) if n == "bad name"));
    assert!(matches!(&e[1], RegistrationError::Duplicate { kind: "tool", name } if name == "a"));
    for (i, tool_name, which) in [
        (2, "no_object", "inputSchema"),
        (3, "bad_schema", "inputSchema"),
        (4, "bad_output", "outputSchema"),
        (5, "remote_ref", "inputSchema"),
    ] {
        assert!(
            matches!(&e[i], RegistrationError::InvalidSchema { tool, which: w, .. }
                if tool == tool_name && *w == which),
            "{:?}",
            e[i]
        );
    }
    assert!(matches!(
        &e[6],
        RegistrationError::UnknownCompletionTarget(_)
    ));
    assert!(err.to_string().starts_with("7 registration error(s)"));
}

/// A tool handler sees the request's `_meta` as the client sent it: the
/// progress token, trace context and keys of the client's own; empty without
/// one.
#[tokio::test]
async fn a_tool_handler_sees_the_requests_meta() {
    let server = Server::builder(info())
        .tool(
            tool("meta", json!({"type": "object"}), None),
            |_, ctx: ToolContext| async move {
                let meta = serde_json::to_string(ctx.meta()).unwrap();
                let r = json!({"content": [{"type": "text", "text": meta}]});
                Ok(serde_json::from_value::<CallToolResult>(r).unwrap())
            },
        )
        .build()
        .unwrap();
    for v in ALL {
        let h = Harness::new(server.clone(), v);
        let sent = json!({"progressToken": 7, "traceparent": "00-abc-def-01",
                          "example.com/tenant": {"id": 3}});
        let r = h
            .call("tools/call", json!({"name": "meta", "_meta": sent}))
            .await
            .unwrap();
        let seen: Value = serde_json::from_str(first_text(&r)).unwrap();
        for (k, value) in sent.as_object().unwrap() {
            assert_eq!(&seen[k], value, "{v}: {k} in {seen}");
        }
        let r = h.call_tool("meta", json!({})).await.unwrap();
        let seen: Value = serde_json::from_str(first_text(&r)).unwrap();
        let own: Vec<&String> = seen
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| !k.starts_with("io.modelcontextprotocol/"))
            .collect();
        assert!(own.is_empty(), "{v}: {seen}");
    }
}

/// `ToolError::protocol` answers a JSON-RPC error with the handler's code, message
/// and data, within each revision's rules (codes the protocol layer owns become
/// -32603); `ToolError::invalid_arguments` follows the `inputSchema` rule (-32602
/// before 2025-11-25, `isError` from it); `ToolError::new` stays `isError`.
#[tokio::test]
async fn a_tool_can_answer_a_json_rpc_error_within_the_revisions_rules() {
    let input = json!({"type": "object", "properties": {"code": {"type": "integer"}}});
    let server = Server::builder(info())
        .tool(tool("rpc", input.clone(), None), |args, _ctx| async move {
            let code = args["code"].as_i64().unwrap();
            Err::<CallToolResult, _>(ToolError::protocol(
                code,
                format!("refused with {code}"),
                Some(json!({"retryAfterMs": 500})),
            ))
        })
        .tool(tool("plain", input.clone(), None), |_args, _ctx| async {
            Err::<CallToolResult, _>(ToolError::protocol(4001, "no data", None))
        })
        .tool(tool("bad_args", input.clone(), None), |_args, _ctx| async {
            Err::<CallToolResult, _>(ToolError::invalid_arguments("date must be in the future"))
        })
        .tool(tool("exec", input, None), |_args, _ctx| async {
            Err::<CallToolResult, _>(ToolError::new("upstream API failed"))
        })
        .build()
        .unwrap();
    // (code given, code sent before 2026-07-28, code sent in 2026-07-28)
    let table = [
        (4001, 4001, 4001),
        (-31999, -31999, -31999),
        (-32768 - 1, -32769, -32769),
        (
            code::INVALID_PARAMS,
            code::INVALID_PARAMS,
            code::INVALID_PARAMS,
        ),
        (
            code::INTERNAL_ERROR,
            code::INTERNAL_ERROR,
            code::INTERNAL_ERROR,
        ),
        (-32010, -32010, -32010),
        (code::URL_ELICITATION_REQUIRED, -32042, code::INTERNAL_ERROR),
        (code::RESOURCE_NOT_FOUND, -32002, code::INTERNAL_ERROR),
        (
            code::UNSUPPORTED_PROTOCOL_VERSION,
            -32022,
            code::INTERNAL_ERROR,
        ),
        (code::HEADER_MISMATCH, -32020, code::INTERNAL_ERROR),
        (
            code::METHOD_NOT_FOUND,
            code::INTERNAL_ERROR,
            code::INTERNAL_ERROR,
        ),
        (
            code::INVALID_REQUEST,
            code::INTERNAL_ERROR,
            code::INTERNAL_ERROR,
        ),
        (
            code::PARSE_ERROR,
            code::INTERNAL_ERROR,
            code::INTERNAL_ERROR,
        ),
        (-32650, code::INTERNAL_ERROR, code::INTERNAL_ERROR),
    ];
    for v in ALL {
        let h = Harness::new(server.clone(), v);
        for (given, legacy, modern) in table {
            let e = h
                .call_tool("rpc", json!({ "code": given }))
                .await
                .unwrap_err();
            let want = if v == V2026_07_28 { modern } else { legacy };
            assert_eq!(e.code, want, "{v}: {given}");
            assert_eq!(e.message, format!("refused with {given}"));
            let data: Value = serde_json::from_str(e.data.as_ref().unwrap().get()).unwrap();
            assert_eq!(data, json!({"retryAfterMs": 500}));
        }
        let e = h.call_tool("plain", json!({})).await.unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (4001, "no data"));
        assert!(e.data.is_none());

        let r = h.call_tool("bad_args", json!({})).await;
        if v >= V2025_11_25 {
            let r = r.unwrap();
            assert_eq!(r["isError"], true, "{v}");
            assert_eq!(first_text(&r), "date must be in the future");
        } else {
            let e = r.unwrap_err();
            assert_eq!(e.code, code::INVALID_PARAMS, "{v}");
            assert_eq!(e.message, "date must be in the future");
        }
        let r = h.call_tool("exec", json!({})).await.unwrap();
        assert_eq!(r["isError"], true, "{v}");
        assert_eq!(first_text(&r), "upstream API failed");
    }
    let e = ToolError::protocol(4001, "m", Some(json!(1)));
    assert!(e.is_protocol_error() && !e.is_invalid_arguments());
    assert_eq!((e.code(), e.data()), (Some(4001), Some(&json!(1))));
    let e = ToolError::new("m");
    assert!(!e.is_protocol_error());
    assert_eq!((e.code(), e.data()), (None, None));
    assert!(ToolError::invalid_arguments("m").is_invalid_arguments());
}
