//! Server→client requests: sampling, elicitation, roots, ping; -32601 without a
//! handler; cancellation by the server; the concurrency bound (spec notes §3, §7).

mod client_support;

use std::sync::Arc;
use std::time::Duration;

use client_support::*;
use serde_json::{json, Value};
use switchboard::peer::HandlerContext;
use switchboard_protocol::jsonrpc::{ErrorObject, Id, Message};
use switchboard_protocol::types::{CreateMessageResult, ListRootsResult, Root};
use tokio::sync::Notify;

fn sampling_params() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10})
}

/// The server's next message must be the response (or error) to `id`.
async fn answer_to(script: &mut Script, id: &Id) -> Result<Value, ErrorObject> {
    match script.recv().await {
        Message::Response(r) => {
            assert_eq!(&r.id, id);
            Ok(r.result_as().unwrap())
        }
        Message::Error(e) => {
            assert_eq!(e.id.as_ref(), Some(id));
            Err(e.error)
        }
        other => panic!("expected an answer, got {other:?}"),
    }
}

#[tokio::test]
async fn sampling_is_answered_by_the_handler() {
    let opts = options().with_sampling(|params, cx: HandlerContext| async move {
        assert_eq!(params.max_tokens, 10);
        assert_eq!(cx.method(), "sampling/createMessage");
        let r: CreateMessageResult = serde_json::from_value(json!({
            "role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m1"
        }))
        .unwrap();
        Ok(r)
    });
    let (_client, mut script) = connected(opts, json!({})).await;
    script
        .request("s-1", "sampling/createMessage", sampling_params())
        .await;
    let r = answer_to(&mut script, &Id::from("s-1")).await.unwrap();
    assert_eq!(r["model"], "m1");
    assert_eq!(r["content"]["text"], "hello");
}

#[tokio::test]
async fn without_a_handler_the_answer_is_method_not_found() {
    let (_client, mut script) = connected(options(), json!({})).await;
    for (i, (method, params)) in [
        ("sampling/createMessage", sampling_params()),
        (
            "elicitation/create",
            json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}}),
        ),
        ("roots/list", json!({})),
        ("no/such/method", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        script.request(i as i64, method, params).await;
        let e = answer_to(&mut script, &Id::from(i as i64))
            .await
            .unwrap_err();
        assert_eq!(e.code, -32601, "{method}: {e:?}");
    }
    // ping is always answered.
    script.request("p", "ping", json!({})).await;
    assert_eq!(
        answer_to(&mut script, &Id::from("p")).await.unwrap(),
        json!({})
    );
}

#[tokio::test]
async fn roots_and_handler_errors() {
    let opts = options()
        .with_roots(|_cx| async {
            Ok(ListRootsResult {
                roots: vec![Root::new("file:///work")],
                meta: None,
                extra: Default::default(),
            })
        })
        .with_sampling(|_, _| async { Err(ErrorObject::new(-1, "user declined")) });
    let (_client, mut script) = connected(opts, json!({})).await;
    script.request(1, "roots/list", json!({})).await;
    let r = answer_to(&mut script, &Id::from(1)).await.unwrap();
    assert_eq!(r["roots"][0]["uri"], "file:///work");
    script
        .request(2, "sampling/createMessage", sampling_params())
        .await;
    let e = answer_to(&mut script, &Id::from(2)).await.unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (-1, "user declined"));
    // Bad params for a known method: -32602.
    script
        .request(3, "sampling/createMessage", json!({"messages": 5}))
        .await;
    let e = answer_to(&mut script, &Id::from(3)).await.unwrap_err();
    assert_eq!(e.code, -32602);
}

#[tokio::test]
async fn a_cancelled_server_request_gets_no_answer() {
    let started = Arc::new(Notify::new());
    let s = started.clone();
    let opts = options().with_sampling(move |_, cx: HandlerContext| {
        let s = s.clone();
        async move {
            s.notify_one();
            cx.cancellation().cancelled().await;
            // Never reached: the future is dropped when cancelled.
            Err(ErrorObject::new(-1, "unreachable"))
        }
    });
    let (client, mut script) = connected(opts, json!({})).await;
    script
        .request(7, "sampling/createMessage", sampling_params())
        .await;
    within(started.notified()).await;
    script
        .notify(
            "notifications/cancelled",
            json!({"requestId": 7, "reason": "no longer needed"}),
        )
        .await;
    // No answer to 7: the next message is the client's ping.
    let server = async {
        let req = script.recv_request().await;
        assert_eq!(req.method, "ping");
        script.respond(&req.id, json!({})).await;
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (r, ()) = within(async { tokio::join!(client.ping(), server) }).await;
    r.unwrap();
}

#[tokio::test]
async fn concurrent_server_requests_are_bounded() {
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let r2 = release.clone();
    let mut opts = options().with_roots(move |_cx| {
        let r = r2.clone();
        async move {
            r.acquire().await.unwrap().forget();
            Ok(ListRootsResult {
                roots: vec![],
                meta: None,
                extra: Default::default(),
            })
        }
    });
    opts.max_concurrent_handlers = 2;
    let (_client, mut script) = connected(opts, json!({})).await;
    for i in 0..3 {
        script.request(i, "roots/list", json!({})).await;
    }
    // The third is refused at once while two run.
    let e = answer_to(&mut script, &Id::from(2)).await.unwrap_err();
    assert_eq!(e.code, -32603);
    assert!(e.message.contains("too many"), "{}", e.message);
    release.add_permits(2);
    let mut ids = Vec::new();
    for _ in 0..2 {
        match script.recv().await {
            Message::Response(r) => ids.push(r.id),
            other => panic!("{other:?}"),
        }
    }
    ids.sort();
    assert_eq!(ids, [Id::from(0), Id::from(1)]);
}
