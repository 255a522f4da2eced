//! Envelope classification and typed decoding throughput on realistic MCP messages,
//! beside `serde_json::from_slice::<Value>` on the same bytes.
//!
//! Inputs: a ~1 KiB `tools/call` request, and `tools/call` results of ~64 KiB and
//! ~4 MiB whose content is a table of records given twice, as `structuredContent` and
//! as the same JSON in a text block (what 2025-06-18+ servers with an `outputSchema`
//! send). Run: `cargo bench -p switchboard-protocol --bench envelope`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::{json, Value};
use std::hint::black_box;
use switchboard_protocol::jsonrpc::{Message, MessageRef};
use switchboard_protocol::types::{CallToolRequestParams, CallToolResult};

/// A `tools/call` request of about 1 KiB.
fn request_1k() -> Vec<u8> {
    let text = "Summarise the following paragraph for a release note. ".repeat(14);
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": 4711,
        "method": "tools/call",
        "params": {
            "name": "summarise",
            "arguments": {"text": text, "max_words": 80, "style": "concise", "tags": ["release", "notes"]},
            "_meta": {"progressToken": "tok-4711", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
        }
    }))
    .unwrap()
}

/// A `tools/call` result with `n` records, given as structuredContent and as text.
fn tool_result_rows(n: usize) -> Vec<u8> {
    let row = |i: usize| {
        json!({
            "id": i,
            "name": format!("item-{i:06}"),
            "path": format!("/srv/data/shard-{}/item-{i:06}.json", i % 17),
            "size": i * 37 % 100_000,
            "tags": ["alpha", "beta", if i % 2 == 0 { "even" } else { "odd" }],
            "score": (i as f64) * 0.37,
            "note": "multi-line\ttext with \"quotes\" and unicode: é ü 漢字",
        })
    };
    let rows: Vec<Value> = (0..n).map(row).collect();
    let text = serde_json::to_string(&rows).unwrap();
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": "call-99",
        "result": {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"rows": rows, "total": n},
            "isError": false
        }
    }))
    .unwrap()
}

/// A `tools/call` result of `target` bytes or slightly more.
fn tool_result(target: usize) -> Vec<u8> {
    let per_row = tool_result_rows(100).len() / 100;
    let mut n = target / per_row;
    loop {
        let bytes = tool_result_rows(n);
        if bytes.len() >= target {
            return bytes;
        }
        n += (target - bytes.len()) / per_row + 1;
    }
}

fn bench(c: &mut Criterion) {
    let inputs = [
        ("request_1KiB", request_1k()),
        ("result_64KiB", tool_result(64 * 1024)),
        ("result_4MiB", tool_result(4 * 1024 * 1024)),
    ];
    let mut group = c.benchmark_group("decode");
    for (name, bytes) in &inputs {
        eprintln!("{name}: {} bytes", bytes.len());
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if bytes.len() > 1 << 20 {
            group.sample_size(20);
        } else {
            group.sample_size(100);
        }
        group.bench_with_input(
            BenchmarkId::new("envelope_classify", name),
            bytes,
            |b, bytes| {
                b.iter(|| {
                    MessageRef::classify(black_box(bytes))
                        .unwrap()
                        .method()
                        .is_some()
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("envelope_owned", name),
            bytes,
            |b, bytes| b.iter(|| Message::decode(black_box(bytes)).unwrap()),
        );
        group.bench_with_input(BenchmarkId::new("typed", name), bytes, |b, bytes| {
            b.iter(|| match Message::decode(black_box(bytes)).unwrap() {
                Message::Request(r) => r.params_as::<CallToolRequestParams>().unwrap().name.len(),
                Message::Response(r) => r.result_as::<CallToolResult>().unwrap().content.len(),
                _ => unreachable!(),
            })
        });
        group.bench_with_input(
            BenchmarkId::new("serde_json_value", name),
            bytes,
            |b, bytes| b.iter(|| serde_json::from_slice::<Value>(black_box(bytes)).unwrap()),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
