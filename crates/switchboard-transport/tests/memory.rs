//! The in-memory pair: round trips through the real line codec.

mod common;

use common::*;
use switchboard_protocol::jsonrpc::{Batching, Message};
use switchboard_transport::{memory, CloseReason, Inbound, Outgoing, TransportConfig};

#[tokio::test]
async fn round_trip_of_every_kind_of_message() {
    let (client, server) = memory::pair(&TransportConfig::default());
    let (client_tx, mut client_rx) = client.split();
    let (server_tx, mut server_rx) = server.split();

    let upstream = [
        request(1, "tools/list"),
        notification("notifications/initialized"),
    ];
    for m in &upstream {
        within("client send", client_tx.send(m.clone()))
            .await
            .unwrap();
    }
    for m in &upstream {
        assert_eq!(&next_message(&mut server_rx).await, m);
    }

    let downstream = [
        response("1"),
        error(2),
        request(3, "ping"),
        notification("notifications/progress"),
    ];
    for m in &downstream {
        within("server send", server_tx.send(m.clone()))
            .await
            .unwrap();
    }
    for m in &downstream {
        assert_eq!(&next_message(&mut client_rx).await, m);
    }
}

#[tokio::test]
async fn batches_only_once_allowed() {
    let (client, server) = memory::pair(&TransportConfig::default());
    let (client_tx, mut client_rx) = client.split();
    let (server_tx, mut server_rx) = server.split();
    let batch = vec![request(1, "a"), notification("b")];

    // Refused by default (before negotiation, no revision is known).
    assert_eq!(client_tx.batching(), Batching::Refused);
    let err = client_tx.send_batch(batch.clone()).await.unwrap_err();
    assert!(err.is_batch_refused(), "{err}");
    assert_eq!(err.into_inner(), Outgoing::Batch(batch.clone()));

    // After 2025-03-26 is negotiated, both ends switch.
    client_tx.set_batching(Batching::Allowed);
    server_rx.set_batching(Batching::Allowed);
    assert_eq!(server_tx.batching(), Batching::Allowed);
    assert!(client_tx
        .send_batch(Vec::new())
        .await
        .unwrap_err()
        .is_empty_batch());
    within("send batch", client_tx.send_batch(batch.clone()))
        .await
        .unwrap();
    match next(&mut server_rx).await {
        Inbound::Batch(items) => {
            let items: Vec<Message> = items.into_iter().map(Result::unwrap).collect();
            assert_eq!(items, batch);
        }
        other => panic!("expected a batch, got {other:?}"),
    }

    let answers = vec![response("1"), error(2)];
    within("answer batch", server_tx.send_batch(answers.clone()))
        .await
        .unwrap();
    match next(&mut client_rx).await {
        Inbound::Batch(items) => {
            let items: Vec<Message> = items.into_iter().map(Result::unwrap).collect();
            assert_eq!(items, answers);
        }
        other => panic!("expected a batch, got {other:?}"),
    }
}

#[tokio::test]
async fn a_batch_to_a_refusing_peer_is_answered_with_invalid_request() {
    let (client, server) = memory::pair(&TransportConfig::default());
    let (client_tx, mut client_rx) = client.split();
    let (_server_tx, mut server_rx) = server.split();
    // Only the client switched: the server end still refuses.
    client_tx.set_batching(Batching::Allowed);
    within("send batch", client_tx.send_batch(vec![request(1, "a")]))
        .await
        .unwrap();
    let answer = next_message(&mut client_rx).await;
    let Message::Error(e) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(e.error.code, -32600);
    assert_eq!(e.id, None);
    // Nothing reached the server's library.
    within("send", client_tx.send(request(2, "b")))
        .await
        .unwrap();
    assert_eq!(next_message(&mut server_rx).await, request(2, "b"));
}

#[tokio::test]
async fn dropping_the_senders_closes_the_other_end() {
    let (client, server) = memory::pair(&TransportConfig::default());
    let (client_tx, mut client_rx) = client.split();
    let (server_tx, mut server_rx) = server.split();
    let second = client_tx.clone();
    within("send", second.send(request(1, "x"))).await.unwrap();
    drop(client_tx);
    drop(second);
    assert_eq!(next_message(&mut server_rx).await, request(1, "x"));
    match next(&mut server_rx).await {
        Inbound::Closed {
            reason: CloseReason::PeerClosed,
        } => {}
        other => panic!("expected Closed, got {other:?}"),
    }
    assert!(within("end", server_rx.recv()).await.is_none());

    // The other direction still works until the server drops its sender too.
    within("send", server_tx.send(response("1"))).await.unwrap();
    assert_eq!(next_message(&mut client_rx).await, response("1"));
    drop(server_tx);
    assert!(matches!(
        next(&mut client_rx).await,
        Inbound::Closed {
            reason: CloseReason::PeerClosed
        }
    ));
}

#[tokio::test]
async fn sends_fail_once_the_peer_is_gone_and_give_the_message_back() {
    let mut config = TransportConfig::default();
    config.channel_capacity = 1;
    let (client, server) = memory::pair(&config);
    drop(server);
    let (client_tx, mut client_rx) = client.split();
    // The client's reader sees end of input (the server's writer shut down).
    assert!(matches!(
        next(&mut client_rx).await,
        Inbound::Closed {
            reason: CloseReason::PeerClosed
        }
    ));
    // Writes into the in-memory pipe fail once the other end is gone; the writer
    // ends, and then every send fails with the message given back.
    let mut failed = None;
    for i in 0..1000 {
        if let Err(e) = within("send", client_tx.send(request(i, "x"))).await {
            failed = Some((i, e));
            break;
        }
        tokio::task::yield_now().await;
    }
    let (i, e) = failed.expect("sending to a dropped peer never failed");
    assert!(e.is_closed(), "{e}");
    assert_eq!(e.into_inner(), Outgoing::Message(request(i, "x")));
    assert!(client_tx.is_closed());
    within("closed", client_tx.closed()).await;
}

#[tokio::test]
async fn large_messages_within_the_limit_pass_through_a_small_pipe() {
    // 1 MiB of payload through a 64 KiB pipe: the writer waits for the reader.
    let (client, server) = memory::pair(&TransportConfig::default());
    let big = "x".repeat(1024 * 1024);
    let msg = Message::Request(
        switchboard_protocol::jsonrpc::Request::new(
            9,
            "tools/call",
            &serde_json::json!({ "data": big }),
        )
        .unwrap(),
    );
    let (tx, _rx) = client.split();
    let (_stx, mut srx) = server.split();
    let sent = msg.clone();
    let task = tokio::spawn(async move { tx.send(sent).await });
    assert_eq!(next_message(&mut srx).await, msg);
    within("sender", task).await.unwrap().unwrap();
}
