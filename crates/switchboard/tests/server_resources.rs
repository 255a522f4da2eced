//! `Server::handle` for resources: listing, reading static resources and templates,
//! not-found codes per revision, subscriptions and the updated notification.

mod common;

use common::conformance_fixture as fixture;
use common::{Harness, ALL};
use serde_json::json;
use switchboard_protocol::jsonrpc::code;
use switchboard_protocol::types::ServerNotification;
use switchboard_protocol::ProtocolVersion::*;

#[tokio::test]
async fn list_and_read() {
    for v in ALL {
        let h = Harness::new(fixture::server(), v);
        let r = h.call("resources/list", json!({})).await.unwrap();
        let uris: Vec<&str> = r["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            uris,
            [
                "test://static-text",
                "test://static-binary",
                "test://watched-resource"
            ]
        );
        let r = h.call("resources/templates/list", json!({})).await.unwrap();
        assert_eq!(
            r["resourceTemplates"][0]["uriTemplate"],
            "test://template/{id}/data"
        );
        let r = h
            .call("resources/read", json!({"uri": "test://static-text"}))
            .await
            .unwrap();
        assert_eq!(r["contents"][0]["uri"], "test://static-text");
        assert!(r["contents"][0]["text"].is_string());
        let r = h
            .call("resources/read", json!({"uri": "test://static-binary"}))
            .await
            .unwrap();
        assert_eq!(r["contents"][0]["blob"], fixture::PNG);
        let r = h
            .call("resources/read", json!({"uri": "test://template/42/data"}))
            .await
            .unwrap();
        assert_eq!(r["contents"][0]["uri"], "test://template/42/data");
        let data: serde_json::Value =
            serde_json::from_str(r["contents"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(data["id"], "42");
    }
}

#[tokio::test]
async fn not_found_is_32002_before_2026_and_32602_from_it() {
    for v in ALL {
        let h = Harness::new(fixture::server(), v);
        let expected = if v == V2026_07_28 { -32602 } else { -32002 };
        for uri in [
            "test://nothing",
            "test://template/1/2/data",
            // the template matches but its handler says not found
            "test://template/missing/data",
        ] {
            let e = h
                .call("resources/read", json!({"uri": uri}))
                .await
                .unwrap_err();
            assert_eq!(e.code, expected, "{v} {uri}");
        }
        let e = h
            .call("resources/read", json!({"uri": "test://nothing"}))
            .await
            .unwrap_err();
        assert_eq!(e.data.unwrap().get(), r#"{"uri":"test://nothing"}"#);
    }
}

#[tokio::test]
async fn subscriptions_gate_the_updated_notification() {
    let h = Harness::new(fixture::server(), V2025_11_25);
    let s = &h.server;
    assert!(s
        .resource_updated(&h.session, "test://static-text")
        .is_none());
    let r = h
        .call("resources/subscribe", json!({"uri": "test://static-text"}))
        .await
        .unwrap();
    assert_eq!(r, json!({}));
    h.call(
        "resources/subscribe",
        json!({"uri": "test://template/7/data"}),
    )
    .await
    .unwrap();
    assert_eq!(
        h.session.subscriptions(),
        ["test://static-text", "test://template/7/data"]
    );
    match s.resource_updated(&h.session, "test://static-text") {
        Some(ServerNotification::ResourceUpdated(p)) => assert_eq!(p.uri, "test://static-text"),
        other => panic!("{other:?}"),
    }
    assert!(s
        .resource_updated(&h.session, "test://static-binary")
        .is_none());
    // Another session did not subscribe.
    assert!(s
        .resource_updated(
            &switchboard::server::SessionState::new(),
            "test://static-text"
        )
        .is_none());
    h.call(
        "resources/unsubscribe",
        json!({"uri": "test://static-text"}),
    )
    .await
    .unwrap();
    assert!(s
        .resource_updated(&h.session, "test://static-text")
        .is_none());
    // Subscribing to a resource that does not exist is "not found".
    let e = h
        .call("resources/subscribe", json!({"uri": "test://nothing"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, code::RESOURCE_NOT_FOUND);
    // 2026-07-28 has no resources/subscribe (listen streams instead).
    let h = Harness::new(fixture::server(), V2026_07_28);
    for m in ["resources/subscribe", "resources/unsubscribe"] {
        let e = h
            .call(m, json!({"uri": "test://static-text"}))
            .await
            .unwrap_err();
        assert_eq!(e.code, code::METHOD_NOT_FOUND, "{m}");
    }
}
