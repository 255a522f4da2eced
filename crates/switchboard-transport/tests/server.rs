//! The server side of stdio over an in-memory pipe: what a client writes to our
//! stdin, what we answer on stdout.

mod common;

use common::*;
use serde_json::Value;
use switchboard_protocol::jsonrpc::{Batching, Message};
use switchboard_transport::{stdio, CloseReason, Inbound, Receiver, Sender, TransportConfig};
use tokio::io::{
    duplex, split, AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf,
    WriteHalf,
};

/// The client's view: it writes our stdin and reads our stdout.
struct Peer {
    stdin: WriteHalf<DuplexStream>,
    stdout: Lines<BufReader<ReadHalf<DuplexStream>>>,
}

impl Peer {
    async fn write(&mut self, bytes: &[u8]) {
        within("peer write", self.stdin.write_all(bytes))
            .await
            .unwrap();
    }

    /// The next line we wrote on stdout, as JSON.
    async fn read(&mut self) -> Value {
        let line = within("peer read", self.stdout.next_line())
            .await
            .unwrap()
            .expect("stdout ended");
        serde_json::from_str(&line).unwrap()
    }
}

fn serve(config: &TransportConfig) -> (Peer, Sender, Receiver) {
    let (peer, ours) = duplex(64 * 1024);
    let (our_stdin, our_stdout) = split(ours);
    let (peer_reads, peer_writes) = split(peer);
    let transport = stdio::serve_on(our_stdin, our_stdout, config);
    let (tx, rx) = transport.split();
    let peer = Peer {
        stdin: peer_writes,
        stdout: BufReader::new(peer_reads).lines(),
    };
    (peer, tx, rx)
}

const PING: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";

#[tokio::test]
async fn good_lines_are_served_and_answered() {
    let (mut peer, tx, mut rx) = serve(&TransportConfig::default());
    peer.write(PING).await;
    peer.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n")
        .await;
    let m = next_message(&mut rx).await;
    assert_eq!(m.method(), Some("ping"));
    let Message::Request(ping) = m else { panic!() };
    let m = next_message(&mut rx).await;
    assert!(matches!(m, Message::Notification(_)));

    let answer = Message::Response(
        switchboard_protocol::jsonrpc::Response::new(ping.id, &serde_json::json!({})).unwrap(),
    );
    within("send", tx.send(answer)).await.unwrap();
    assert_eq!(
        peer.read().await,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
}

#[tokio::test]
async fn malformed_json_is_answered_with_parse_error_and_the_stream_goes_on() {
    let (mut peer, _tx, mut rx) = serve(&TransportConfig::default());
    peer.write(b"{not json\n").await;
    let answer = peer.read().await;
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], -32700);
    peer.write(PING).await;
    assert_eq!(next_message(&mut rx).await.method(), Some("ping"));
}

#[tokio::test]
async fn an_invalid_envelope_with_an_id_is_answered_with_that_id() {
    let (mut peer, _tx, mut rx) = serve(&TransportConfig::default());
    peer.write(b"{\"jsonrpc\":\"1.0\",\"id\":\"req-7\",\"method\":\"ping\"}\n")
        .await;
    let answer = peer.read().await;
    assert_eq!(answer["id"], "req-7");
    assert_eq!(answer["error"]["code"], -32600);
    peer.write(PING).await;
    assert_eq!(next_message(&mut rx).await.method(), Some("ping"));
}

#[tokio::test]
async fn a_broken_notification_gets_no_answer() {
    let (mut peer, _tx, mut rx) = serve(&TransportConfig::default());
    peer.write(b"{\"jsonrpc\":\"1.0\",\"method\":\"notifications/x\"}\n")
        .await;
    // Then a malformed line: its answer must be the first thing on stdout, which
    // shows that the broken notification got none.
    peer.write(b"]\n").await;
    let answer = peer.read().await;
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);
    // And the library saw neither.
    peer.write(PING).await;
    assert_eq!(next_message(&mut rx).await.method(), Some("ping"));
}

#[tokio::test]
async fn an_oversized_line_is_a_parse_error_and_the_stream_goes_on() {
    let mut config = TransportConfig::default();
    config.max_line_len = 64;
    let (mut peer, _tx, mut rx) = serve(&config);
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "a".repeat(10_000)
    );
    peer.write(long.as_bytes()).await;
    // Its id was seen in its first bytes: the answer carries it, so the client's
    // request fails at once.
    let answer = peer.read().await;
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], 2);
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("limit of 64 bytes"));
    // An id at neither end (nor after the long member as the last one): null.
    let hidden = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{{\"x\":\"{}\"}},\"id\":3,\"z\":1}}\n",
        "a".repeat(10_000)
    );
    peer.write(hidden.as_bytes()).await;
    let answer = peer.read().await;
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);
    peer.write(PING).await;
    assert_eq!(next_message(&mut rx).await.method(), Some("ping"));
}

#[tokio::test]
async fn batches_follow_the_switch() {
    let (mut peer, tx, mut rx) = serve(&TransportConfig::default());
    let batch = b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"b\"}]\n";
    peer.write(batch).await;
    let answer = peer.read().await;
    assert_eq!(answer["error"]["code"], -32600);
    assert_eq!(answer["id"], Value::Null);

    // 2025-03-26 negotiated: batches reach the library, item by item.
    tx.set_batching(Batching::Allowed);
    assert_eq!(rx.batching(), Batching::Allowed);
    peer.write(batch).await;
    match next(&mut rx).await {
        Inbound::Batch(items) => {
            assert_eq!(items.len(), 2);
            assert_eq!(items[0].as_ref().unwrap().method(), Some("a"));
            let bad = items[1].as_ref().unwrap_err();
            assert_eq!(bad.to_response().error.code, -32600);
            assert_eq!(bad.id(), Some(&2.into()));
        }
        other => panic!("expected a batch, got {other:?}"),
    }
    // An empty batch is answered by the transport.
    peer.write(b"[]\n").await;
    assert_eq!(peer.read().await["error"]["code"], -32600);
}

#[tokio::test]
async fn end_of_stdin_is_closed_and_the_output_stays_usable() {
    let (mut peer, tx, mut rx) = serve(&TransportConfig::default());
    // A last line without its newline is still served.
    peer.write(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}")
        .await;
    within("shutdown", peer.stdin.shutdown()).await.unwrap();
    assert_eq!(next_message(&mut rx).await.method(), Some("ping"));
    match next(&mut rx).await {
        Inbound::Closed { reason } => {
            assert!(matches!(reason, CloseReason::StdinClosed));
            assert_eq!(reason.to_string(), "stdin closed");
        }
        other => panic!("expected Closed, got {other:?}"),
    }
    assert!(within("end", rx.recv()).await.is_none());

    // A pending answer can still be written.
    within("send", tx.send(error(5))).await.unwrap();
    assert_eq!(peer.read().await["id"], 5);
    // Dropping the last sender ends our stdout.
    drop(tx);
    assert!(within("eof", peer.stdout.next_line())
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn invalid_utf8_is_a_parse_error() {
    let (mut peer, _tx, mut rx) = serve(&TransportConfig::default());
    peer.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}\n")
        .await;
    let answer = peer.read().await;
    assert_eq!(answer["error"]["code"], -32700);
    peer.write(PING).await;
    assert_eq!(next_message(&mut rx).await.method(), Some("ping"));
}
