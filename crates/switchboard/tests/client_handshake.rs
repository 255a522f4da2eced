//! The client's legacy handshake against a scripted server (spec notes §3).

mod client_support;

use client_support::*;
use serde_json::json;
use switchboard::{Client, EraPolicy};
use switchboard_protocol::version::{Era, Supported};
use switchboard_protocol::ProtocolVersion;

#[tokio::test]
async fn handshake_offers_the_latest_legacy_version_and_exposes_the_answer() {
    let (transport, mut script) = pair();
    let (client, init) = within(async {
        tokio::join!(
            Client::connect(transport, options()),
            script.handshake("2025-11-25", json!({"tools": {"listChanged": true}}))
        )
    })
    .await;
    let client = client.unwrap();
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["capabilities"], json!({}), "no handler, no capability");
    assert_eq!(
        init["clientInfo"],
        json!({"name": "test-client", "version": "0.1.0"})
    );
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.server_info().name, "scripted");
    assert_eq!(client.instructions().as_deref(), Some("be nice"));
    assert!(client.server_capabilities().tools.is_some());
    assert!(client.server_capabilities().prompts.is_none());
}

#[tokio::test]
async fn an_older_supported_answer_is_accepted() {
    let (transport, mut script) = pair();
    let (client, _) = within(async {
        tokio::join!(
            Client::connect(transport, options()),
            script.handshake("2024-11-05", json!({"tools": {}}))
        )
    })
    .await;
    let client = client.unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2024_11_05);
    // The session works at that version.
    let ping = async {
        let req = script.recv_request().await;
        assert_eq!(req.method, "ping");
        script.respond(&req.id, json!({})).await;
    };
    let (r, ()) = within(async { tokio::join!(client.ping(), ping) }).await;
    r.unwrap();
}

/// Answers `initialize` with `version` and returns what came next.
async fn answer_with(script: &mut Script, version: &str) {
    let init = script.recv_request().await;
    script
        .respond(
            &init.id,
            json!({"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
        )
        .await;
}

#[tokio::test]
async fn an_unsupported_answer_is_refused_and_the_client_disconnects() {
    for (supported, answer) in [
        (Supported::default(), "2023-01-01"),
        (Supported::default(), "2026-07-28"),
        (
            Supported::new([ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25]).unwrap(),
            "2024-11-05",
        ),
    ] {
        let (transport, mut script) = pair();
        let mut opts = options();
        opts.supported = supported;
        let (client, ()) = within(async {
            tokio::join!(
                Client::connect(transport, opts),
                answer_with(&mut script, answer)
            )
        })
        .await;
        let e = client.unwrap_err();
        assert!(e.is_local_refusal(), "{answer}: {e:?}");
        assert_eq!(e.lifecycle_error().unwrap().code(), -32602);
        // `initialize` was sent: the message must not say otherwise.
        assert!(!e.to_string().contains("nothing sent"), "{e}");
        assert!(e.to_string().contains("answer"), "{e}");
        // No notifications/initialized; our side is closed.
        script.expect_closed().await;
    }
}

/// An `initialize` result that does not decode is the server's fault: the error
/// says its answer was refused, not "refused locally, nothing sent" (the request
/// went out).
#[tokio::test]
async fn an_unreadable_initialize_result_is_reported_as_the_servers_answer() {
    let (transport, mut script) = pair();
    let server = async {
        let init = script.recv_request().await;
        script.respond(&init.id, json!({})).await;
    };
    let (client, ()) =
        within(async { tokio::join!(Client::connect(transport, options()), server) }).await;
    let e = client.unwrap_err();
    assert!(e.is_local_refusal(), "{e:?}");
    let text = e.to_string();
    assert!(!text.contains("nothing sent"), "{text}");
    assert!(
        text.starts_with("initialize: refused the server's answer"),
        "{text}"
    );
    script.expect_closed().await;
}

#[tokio::test]
async fn the_offer_is_the_newest_legacy_version_in_the_set() {
    let (transport, mut script) = pair();
    let mut opts = options();
    opts.supported =
        Supported::new([ProtocolVersion::V2024_11_05, ProtocolVersion::V2025_03_26]).unwrap();
    let (client, init) = within(async {
        tokio::join!(
            Client::connect(transport, opts),
            script.handshake("2025-03-26", json!({}))
        )
    })
    .await;
    assert_eq!(init["protocolVersion"], "2025-03-26");
    assert_eq!(
        client.unwrap().protocol_version(),
        ProtocolVersion::V2025_03_26
    );
}

/// By default (`EraPolicy::LegacyFirst`) an `initialize` error is followed by
/// the `server/discover` probe (a 2026-07-28-only server refuses `initialize`,
/// spec notes §6); a server that refuses that too gets the `initialize` error
/// back, the probe's failure named in it, and our side is closed only then.
/// With `EraPolicy::Legacy` nothing follows the error.
#[tokio::test]
async fn an_initialize_error_is_a_protocol_error() {
    let (transport, mut script) = pair();
    let server = async {
        let init = script.recv_request().await;
        script.respond_error(&init.id, -32602, "unsupported").await;
        let probe = script.recv_request().await;
        assert_eq!(probe.method, "server/discover");
        let p: serde_json::Value = probe.params_as().unwrap();
        assert_eq!(
            p["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        script
            .respond_error(&probe.id, -32601, "method not found")
            .await;
        // The ping sent right behind the probe (see
        // a_ping_answered_before_server_discover_ends_the_probe_at_once).
        assert_eq!(script.recv_request().await.method, "ping");
    };
    let (client, ()) =
        within(async { tokio::join!(Client::connect(transport, options()), server) }).await;
    let e = client.unwrap_err();
    assert!(e.is_protocol(), "{e:?}");
    assert_eq!(e.method(), Some("initialize"));
    assert_eq!(e.error_object().unwrap().code, -32602);
    let text = e.to_string();
    assert!(
        text.starts_with("initialize: peer answered error -32602: unsupported; server/discover"),
        "{text}"
    );
    assert!(text.contains("-32601"), "{text}");
    script.expect_closed().await;

    let (transport, mut script) = pair();
    let server = async {
        let init = script.recv_request().await;
        script.respond_error(&init.id, -32602, "unsupported").await;
    };
    let opts = options().with_era(EraPolicy::Legacy);
    let (client, ()) =
        within(async { tokio::join!(Client::connect(transport, opts), server) }).await;
    let e = client.unwrap_err();
    assert_eq!(e.error_object().unwrap().code, -32602);
    assert!(!e.to_string().contains("server/discover"), "{e}");
    script.expect_closed().await;
}

/// The default against a server that speaks only 2026-07-28: its `initialize`
/// error (any code: -32000 here, spec notes §6 "implementation-defined") is
/// followed by `server/discover` on the same transport, whose result connects
/// in 2026-07-28; later requests carry the 2026-07-28 `_meta`.
#[tokio::test]
async fn the_default_falls_back_to_server_discover_after_an_initialize_error() {
    let (transport, mut script) = pair();
    let server = async {
        let init = script.recv_request().await;
        assert_eq!(init.method, "initialize");
        script
            .respond_error(&init.id, -32000, "this server speaks only 2026-07-28")
            .await;
        let probe = script.recv_request().await;
        assert_eq!(probe.method, "server/discover");
        script
            .respond(
                &probe.id,
                json!({
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "public",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-only", "version": "1"}}
                }),
            )
            .await;
        // The ping sent right behind the probe, left unanswered here.
        assert_eq!(script.recv_request().await.method, "ping");
    };
    let (client, ()) =
        within(async { tokio::join!(Client::connect(transport, options()), server) }).await;
    let client = client.expect("connects in 2026-07-28");
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_info().name, "modern-only");
    let call = tokio::spawn({
        let c = client.clone();
        async move { c.list_tools().await }
    });
    let list = script.recv_request().await;
    assert_eq!(list.method, "tools/list");
    let p: serde_json::Value = list.params_as().unwrap();
    assert_eq!(
        p["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    script
        .respond(
            &list.id,
            json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"}),
        )
        .await;
    assert!(within(call).await.unwrap().unwrap().is_empty());
}

/// A legacy server costs the default nothing extra: exactly one `initialize`,
/// then `notifications/initialized`, and the next message is the caller's own
/// request; no `server/discover` is ever sent.
#[tokio::test]
async fn a_legacy_server_gets_one_initialize_and_no_probe() {
    let (transport, mut script) = pair();
    let (client, _) = within(async {
        tokio::join!(
            Client::connect(transport, options()),
            script.handshake("2025-11-25", json!({"tools": {}}))
        )
    })
    .await;
    let client = client.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    let ping = async {
        let next = script.recv_request().await;
        assert_eq!(next.method, "ping", "the message after the handshake");
        script.respond(&next.id, json!({})).await;
    };
    let (r, ()) = within(async { tokio::join!(client.ping(), ping) }).await;
    r.unwrap();
    drop(client);
    // Nothing else was sent before our side closed.
    script.expect_closed().await;
}

/// Only a JSON-RPC error answer leads to the probe: an `initialize` that times
/// out is the timeout, and our side closes without `server/discover`.
#[tokio::test]
async fn an_initialize_timeout_is_not_followed_by_a_probe() {
    let (transport, mut script) = pair();
    let mut opts = options();
    opts.default_timeout = std::time::Duration::from_millis(200);
    let server = async {
        let init = script.recv_request().await;
        assert_eq!(init.method, "initialize");
        // No answer; the next event is the close (no probe, no cancellation:
        // initialize is never cancelled).
        script.expect_closed().await;
    };
    let (client, ()) =
        within(async { tokio::join!(Client::connect(transport, opts), server) }).await;
    let e = client.unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
}

#[tokio::test]
async fn the_server_closing_during_the_handshake_is_a_closed_error() {
    let (transport, script) = pair();
    let Script { tx, mut rx } = script;
    let server = async move {
        let _init = within(rx.recv()).await;
        drop(tx);
        drop(rx);
    };
    let (client, ()) =
        within(async { tokio::join!(Client::connect(transport, options()), server) }).await;
    let e = client.unwrap_err();
    assert!(e.is_closed(), "{e:?}");
}

/// A server that answers under the request's id turned into a string (`"1"`
/// for `1`) gets no match (ids are matched exactly), but the request fails at
/// once with an error naming both ids, not after its whole timeout (60 s by
/// default) as "timed out". An error answer so mistyped is no
/// `initialize` error either: no `server/discover` follows.
#[tokio::test]
async fn an_answer_under_the_id_as_a_string_fails_at_once_naming_the_mismatch() {
    for error in [false, true] {
        let (transport, mut script) = pair();
        let server = async {
            let init = script.recv_request().await;
            assert_eq!(init.method, "initialize");
            let spelled = switchboard_protocol::jsonrpc::Id::from(init.id.to_string());
            if error {
                script.respond_error(&spelled, -32602, "unsupported").await;
            } else {
                script
                    .respond(
                        &spelled,
                        json!({"protocolVersion": "2025-11-25", "capabilities": {},
                               "serverInfo": {"name": "s", "version": "1"}}),
                    )
                    .await;
            }
            // No probe: the next event is our side closing.
            script.expect_closed().await;
            init.id
        };
        let (client, sent) =
            within(async { tokio::join!(Client::connect(transport, options()), server) }).await;
        let e = client.unwrap_err();
        assert!(e.is_mismatched_id(), "{e:?}");
        assert!(!e.is_timeout() && !e.is_protocol(), "{e:?}");
        assert_eq!(e.method(), Some("initialize"));
        let text = e.to_string();
        assert!(
            text.contains(&format!("\"{sent}\" (a string)"))
                && text.contains(&format!("{sent} (an integer)")),
            "{text}"
        );
        assert_eq!(text.contains("-32602: unsupported"), error, "{text}");
    }
}

/// The default against a legacy server that refuses `initialize` and leaves
/// methods it does not know unanswered (no -32601): `server/discover` gets no
/// answer, but `ping`, sent right behind it, does, which only a legacy server
/// gives; the `initialize` error comes at once, not after the whole probe
/// timeout (10 s; the clock is paused, so the measure is exact). A
/// 2026-07-28-only server's error answer to `ping` decides nothing: its
/// `server/discover` result still connects.
#[tokio::test(start_paused = true)]
async fn a_ping_answered_before_server_discover_ends_the_probe_at_once() {
    let (transport, mut script) = pair();
    let server = async {
        let init = script.recv_request().await;
        script.respond_error(&init.id, -32602, "bad version").await;
        let probe = script.recv_request().await;
        assert_eq!(probe.method, "server/discover", "the probe comes first");
        let ping = script.recv_request().await;
        assert_eq!(ping.method, "ping");
        // server/discover: never answered.
        script.respond(&ping.id, json!({})).await;
        // Neither request is cancelled: the next event is our side closing.
        script.expect_closed().await;
    };
    let started = tokio::time::Instant::now();
    let limit = std::time::Duration::from_secs(60);
    let (client, ()) = tokio::time::timeout(limit, async {
        tokio::join!(Client::connect(transport, options()), server)
    })
    .await
    .expect("bounded");
    let e = client.unwrap_err();
    assert!(e.is_protocol(), "{e:?}");
    assert_eq!(e.error_object().unwrap().code, -32602);
    assert!(e.to_string().contains("ping"), "{e}");
    let took = started.elapsed();
    assert!(
        took < options().probe_timeout,
        "took {took:?}: the probe timeout was waited for"
    );

    // A 2026-07-28-only server: ping refused, server/discover answered after it.
    let (transport, mut script) = pair();
    let server = async {
        let init = script.recv_request().await;
        script
            .respond_error(&init.id, -32000, "2026-07-28 only")
            .await;
        let probe = script.recv_request().await;
        assert_eq!(probe.method, "server/discover");
        let ping = script.recv_request().await;
        assert_eq!(ping.method, "ping");
        script
            .respond_error(&ping.id, -32601, "no ping in 2026-07-28")
            .await;
        script
            .respond(
                &probe.id,
                json!({
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {},
                    "ttlMs": 0,
                    "cacheScope": "public",
                }),
            )
            .await;
    };
    let (client, ()) = tokio::time::timeout(limit, async {
        tokio::join!(Client::connect(transport, options()), server)
    })
    .await
    .expect("bounded");
    assert_eq!(client.expect("connects").era(), Era::Modern);
}
