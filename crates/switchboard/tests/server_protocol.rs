//! `Server::handle` across features: capability derivation, method gating per
//! revision (-32601 in one place), pagination, and the 2026-07-28 result fields.

mod common;

use common::conformance_fixture as fixture;
use common::{Harness, ALL};
use serde_json::json;
use switchboard::server::Server;
use switchboard_protocol::jsonrpc::code;
use switchboard_protocol::types::{CacheScope, CallToolResult, Implementation, Tool};
use switchboard_protocol::ProtocolVersion::*;

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
}

#[test]
fn capabilities_follow_the_registry() {
    let caps = serde_json::to_value(fixture::server().capabilities()).unwrap();
    assert_eq!(
        caps,
        json!({"logging": {}, "completions": {}, "prompts": {"listChanged": false},
            "resources": {"subscribe": true, "listChanged": false},
            "tools": {"listChanged": false}})
    );
    let s = Server::builder(Implementation::new("t", "1"))
        .tool(tool("only"), |_, _| async { Ok(CallToolResult::default()) })
        .logging(false)
        .build()
        .unwrap();
    assert_eq!(
        serde_json::to_value(s.capabilities()).unwrap(),
        json!({"tools": {"listChanged": false}})
    );
    let empty = Server::builder(Implementation::new("t", "1"))
        .build()
        .unwrap();
    assert_eq!(
        serde_json::to_value(empty.capabilities()).unwrap(),
        json!({"logging": {}})
    );
}

#[tokio::test]
async fn undeclared_unknown_and_out_of_revision_methods_are_method_not_found() {
    let empty = Server::builder(Implementation::new("t", "1"))
        .build()
        .unwrap();
    for v in ALL {
        let h = Harness::new(empty.clone(), v);
        for (m, p) in [
            ("tools/list", json!({})),
            ("tools/call", json!({"name": "x"})),
            ("resources/list", json!({})),
            ("resources/read", json!({"uri": "x://y"})),
            ("prompts/list", json!({})),
            ("prompts/get", json!({"name": "x"})),
            ("tasks/list", json!({})),
            ("x/custom", json!({})),
        ] {
            let e = h.call(m, p).await.unwrap_err();
            assert_eq!(e.code, code::METHOD_NOT_FOUND, "{v} {m}");
            assert!(e.message.starts_with(m));
        }
    }
    let h = Harness::new(fixture::server(), V2024_11_05);
    let e = h
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": ""}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, code::METHOD_NOT_FOUND);
    let h = Harness::new(fixture::server(), V2026_07_28);
    for m in ["ping", "logging/setLevel"] {
        let p = if m == "ping" {
            json!({})
        } else {
            json!({"level": "info"})
        };
        assert_eq!(
            h.call(m, p).await.unwrap_err().code,
            code::METHOD_NOT_FOUND,
            "{m}"
        );
    }
    let h = Harness::new(fixture::server(), V2025_11_25);
    assert_eq!(h.call("ping", json!({})).await.unwrap(), json!({}));
    assert_eq!(
        h.call("server/discover", json!({})).await.unwrap_err().code,
        code::METHOD_NOT_FOUND
    );
    let e = h
        .call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, code::INVALID_REQUEST);
}

#[tokio::test]
async fn pagination_walks_every_list_and_refuses_foreign_cursors() {
    let server = fixture::builder().page_size(4).build().unwrap();
    for v in [V2024_11_05, V2026_07_28] {
        let h = Harness::new(server.clone(), v);
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let params = match &cursor {
                None => json!({}),
                Some(c) => json!({"cursor": c}),
            };
            let r = h.call("tools/list", params).await.unwrap();
            pages += 1;
            for t in r["tools"].as_array().unwrap() {
                names.push(t["name"].as_str().unwrap().to_owned());
            }
            match r.get("nextCursor") {
                Some(c) => cursor = Some(c.as_str().unwrap().to_owned()),
                None => break,
            }
        }
        assert_eq!(pages, fixture::TOOL_NAMES.len().div_ceil(4));
        assert_eq!(names, fixture::TOOL_NAMES);
        let r = h.call("prompts/list", json!({})).await.unwrap();
        assert_eq!(r["prompts"].as_array().unwrap().len(), 4);
        assert!(r.get("nextCursor").is_none());
        let first = h.call("tools/list", json!({})).await.unwrap();
        let tools_cursor = first["nextCursor"].clone();
        for bad in [
            json!("garbage"),
            json!("tools:0"),
            json!("tools:99"),
            json!(""),
        ] {
            let e = h
                .call("tools/list", json!({"cursor": bad}))
                .await
                .unwrap_err();
            assert_eq!(e.code, code::INVALID_PARAMS, "{bad}");
        }
        let e = h
            .call("resources/list", json!({"cursor": tools_cursor}))
            .await
            .unwrap_err();
        assert_eq!(e.code, code::INVALID_PARAMS);
    }
}

#[tokio::test]
async fn modern_results_carry_result_type_and_cache_fields() {
    let h = Harness::new(fixture::server(), V2026_07_28);
    for (m, p) in [
        ("tools/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("prompts/list", json!({})),
    ] {
        let r = h.call(m, p).await.unwrap();
        assert_eq!(r["resultType"], "complete", "{m}");
        assert_eq!(
            (r["ttlMs"].clone(), r["cacheScope"].clone()),
            (json!(60000), json!("private")),
            "{m}"
        );
        assert_eq!(
            r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "conformance-fixture"
        );
    }
    let r = h
        .call("resources/read", json!({"uri": "test://static-text"}))
        .await
        .unwrap();
    assert_eq!(
        (r["resultType"].clone(), r["ttlMs"].clone()),
        (json!("complete"), json!(0))
    );
    for (m, p) in [
        ("tools/call", json!({"name": "test_simple_text"})),
        ("prompts/get", json!({"name": "test_simple_prompt"})),
    ] {
        let r = h.call(m, p).await.unwrap();
        assert_eq!(r["resultType"], "complete", "{m}");
        assert!(
            r.get("ttlMs").is_none() && r.get("cacheScope").is_none(),
            "{m}"
        );
    }
    let r = h.call("server/discover", json!({})).await.unwrap();
    assert_eq!(r["supportedVersions"][0], "2026-07-28");
    assert_eq!(r["capabilities"]["tools"], json!({"listChanged": false}));
    assert_eq!(
        r["instructions"],
        "The MCP conformance suite's server fixtures."
    );
    // Configurable per server.
    let server = fixture::builder()
        .list_cache(5, CacheScope::Public)
        .read_cache(7, CacheScope::Public)
        .build()
        .unwrap();
    let h = Harness::new(server, V2026_07_28);
    let r = h.call("tools/list", json!({})).await.unwrap();
    assert_eq!(
        (r["ttlMs"].clone(), r["cacheScope"].clone()),
        (json!(5), json!("public"))
    );
    let r = h
        .call("resources/read", json!({"uri": "test://static-binary"}))
        .await
        .unwrap();
    assert_eq!(r["ttlMs"], 7);
    // Legacy results have none of it.
    for v in [V2024_11_05, V2025_11_25] {
        let h = Harness::new(fixture::server(), v);
        let r = h.call("tools/list", json!({})).await.unwrap();
        for k in ["resultType", "ttlMs", "cacheScope", "_meta"] {
            assert!(r.get(k).is_none(), "{v} {k}");
        }
    }
}

#[tokio::test]
async fn tools_list_shape_follows_the_revision() {
    let server = Server::builder(Implementation::new("t", "1"))
        .tool(
            serde_json::from_value(json!({"name": "t", "title": "T",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true},
                "icons": [{"src": "https://x/i.png"}]}))
            .unwrap(),
            |_, _| async { Ok(CallToolResult::default()) },
        )
        .build()
        .unwrap();
    let keys = |v| {
        let server = server.clone();
        async move {
            let h = Harness::new(server, v);
            let r = h.call("tools/list", json!({})).await.unwrap();
            let mut k: Vec<String> = r["tools"][0].as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        }
    };
    assert_eq!(keys(V2024_11_05).await, ["inputSchema", "name"]);
    assert_eq!(
        keys(V2025_03_26).await,
        ["annotations", "inputSchema", "name"]
    );
    assert_eq!(
        keys(V2025_06_18).await,
        ["annotations", "inputSchema", "name", "title"]
    );
    assert_eq!(
        keys(V2025_11_25).await,
        ["annotations", "icons", "inputSchema", "name", "title"]
    );
}

/// A 2025 answer never carries a top-level `resultType`, even when the handler
/// set one (the fast path writes results straight to text and must fall back);
/// the same key deeper down is content and stays. 2026-07-28 keeps it.
#[tokio::test]
async fn a_handlers_result_type_is_dropped_before_2026_and_nested_keys_stay() {
    let server = Server::builder(Implementation::new("t", "1"))
        .tool(
            serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}}))
                .unwrap(),
            |_, _| async {
                let mut r: CallToolResult = serde_json::from_value(json!({
                    "content": [{"type": "text", "text": "{\"resultType\": \"x\"}"}],
                    "structuredContent": {"resultType": "nested"},
                    "resultType": "complete"
                }))
                .unwrap();
                r.is_error = Some(false);
                Ok(r)
            },
        )
        .build()
        .unwrap();
    for v in [
        V2024_11_05,
        V2025_03_26,
        V2025_06_18,
        V2025_11_25,
        V2026_07_28,
    ] {
        let h = Harness::new(server.clone(), v);
        let r = h.call("tools/call", json!({"name": "t"})).await.unwrap();
        if v == V2026_07_28 {
            assert_eq!(r["resultType"], "complete", "{v}: {r}");
        } else {
            assert!(r.get("resultType").is_none(), "{v}: {r}");
        }
        if v >= V2025_06_18 {
            // structuredContent is 2025-06-18 onward.
            assert_eq!(r["structuredContent"]["resultType"], "nested", "{v}");
        }
        assert_eq!(r["content"][0]["text"], "{\"resultType\": \"x\"}", "{v}");
        assert_eq!(r["isError"], false, "{v}");
    }
}
