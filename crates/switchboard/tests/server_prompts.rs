//! `Server::handle` for prompts and completion: listing, getting, required
//! arguments, unknown names, completion values capped at 100.

mod common;

use common::conformance_fixture as fixture;
use common::{Harness, ALL};
use serde_json::{json, Value};
use switchboard_protocol::jsonrpc::code;
use switchboard_protocol::ProtocolVersion::*;

#[tokio::test]
async fn list_and_get_every_prompt() {
    for v in ALL {
        let h = Harness::new(fixture::server(), v);
        let r = h.call("prompts/list", json!({})).await.unwrap();
        let names: Vec<&str> = r["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "test_simple_prompt",
                "test_prompt_with_arguments",
                "test_prompt_with_embedded_resource",
                "test_prompt_with_image"
            ]
        );
        let r = h
            .call("prompts/get", json!({"name": "test_simple_prompt"}))
            .await
            .unwrap();
        assert_eq!(r["messages"][0]["role"], "user");
        let r = h
            .call(
                "prompts/get",
                json!({"name": "test_prompt_with_arguments",
                    "arguments": {"arg1": "a", "arg2": "b"}}),
            )
            .await
            .unwrap();
        assert_eq!(
            r["messages"][0]["content"]["text"],
            "Prompt with arguments: arg1='a', arg2='b'"
        );
        let r = h
            .call(
                "prompts/get",
                json!({"name": "test_prompt_with_embedded_resource",
                    "arguments": {"resourceUri": "test://static-text"}}),
            )
            .await
            .unwrap();
        assert_eq!(r["messages"][0]["content"]["type"], "resource");
        assert_eq!(
            r["messages"][0]["content"]["resource"]["uri"],
            "test://static-text"
        );
        let r = h
            .call("prompts/get", json!({"name": "test_prompt_with_image"}))
            .await
            .unwrap();
        assert_eq!(r["messages"][0]["content"]["type"], "image");
    }
}

#[tokio::test]
async fn missing_required_argument_and_unknown_prompt_are_invalid_params() {
    for v in ALL {
        let h = Harness::new(fixture::server(), v);
        let e = h
            .call(
                "prompts/get",
                json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, code::INVALID_PARAMS);
        assert!(e.message.contains("arg2"), "{}", e.message);
        let e = h
            .call("prompts/get", json!({"name": "test_prompt_with_arguments"}))
            .await
            .unwrap_err();
        assert_eq!(e.code, code::INVALID_PARAMS);
        let e = h
            .call("prompts/get", json!({"name": "nope"}))
            .await
            .unwrap_err();
        assert_eq!(e.code, code::INVALID_PARAMS);
        assert!(e.message.contains("nope"));
    }
}

fn complete(reference: Value, name: &str, value: &str) -> Value {
    json!({"ref": reference, "argument": {"name": name, "value": value}})
}

#[tokio::test]
async fn completion_is_capped_at_100() {
    let prompt = json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"});
    for v in [V2025_03_26, V2025_11_25, V2026_07_28] {
        let h = Harness::new(fixture::server(), v);
        let r = h
            .call("completion/complete", complete(prompt.clone(), "arg1", ""))
            .await
            .unwrap();
        let c = &r["completion"];
        assert_eq!(c["values"].as_array().unwrap().len(), 100);
        assert_eq!(
            (c["total"].clone(), c["hasMore"].clone()),
            (json!(150), json!(true))
        );
        let r = h
            .call(
                "completion/complete",
                complete(prompt.clone(), "arg1", "value14"),
            )
            .await
            .unwrap();
        let c = &r["completion"];
        assert_eq!(c["values"].as_array().unwrap().len(), 10);
        assert_eq!(c["values"][0], "value140");
        assert_eq!(
            (c["total"].clone(), c["hasMore"].clone()),
            (json!(10), json!(false))
        );
        // A declared argument without a handler: no values.
        let r = h
            .call("completion/complete", complete(prompt.clone(), "arg2", "x"))
            .await
            .unwrap();
        assert_eq!(r["completion"]["values"], json!([]));
        let r = h
            .call(
                "completion/complete",
                complete(
                    json!({"type": "ref/resource", "uri": "test://template/{id}/data"}),
                    "id",
                    "4",
                ),
            )
            .await
            .unwrap();
        assert_eq!(r["completion"]["values"], json!(["42"]));
        for bad in [
            json!({"type": "ref/prompt", "name": "nope"}),
            json!({"type": "ref/resource", "uri": "test://nope/{x}"}),
            json!({"type": "ref/other", "name": "x"}),
        ] {
            let e = h
                .call("completion/complete", complete(bad.clone(), "a", ""))
                .await
                .unwrap_err();
            assert_eq!(e.code, code::INVALID_PARAMS, "{bad}");
        }
    }
}
