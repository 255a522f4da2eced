//! `switchboard decode`: read newline-delimited JSON-RPC messages (the stdio framing
//! of every MCP revision) from a file, standard input, or a built-in sample, classify
//! each from its envelope, and write it back out re-encoded; a bad line gets the error
//! response the spec gives it (-32700 or -32600). Messages go to stdout, one per line;
//! the account of each goes to stderr.
//!
//! This module must not hold protocol logic of its own: it only calls
//! `switchboard-protocol`.

use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use switchboard_protocol::codec::line::{encode_batch_line, encode_line, FrameDecoder, LineError};
use switchboard_protocol::jsonrpc::{Frame, Message};
use switchboard_protocol::ProtocolVersion;

/// The built-in sample: one message of each kind, ids that other tools round, a
/// 2026-07-28 request, and three kinds of bad input.
const SAMPLE: &str = include_str!("../examples-data/sample.jsonl");

/// Where the messages come from.
fn open_input(file: Option<PathBuf>) -> anyhow::Result<Box<dyn Read>> {
    Ok(match file {
        None => {
            eprintln!("# no file given: decoding the built-in sample");
            Box::new(SAMPLE.as_bytes())
        }
        Some(p) if p.as_os_str() == "-" => Box::new(io::stdin()),
        Some(p) => {
            Box::new(std::fs::File::open(&p).with_context(|| format!("opening {}", p.display()))?)
        }
    })
}

fn describe(m: &Message) -> String {
    let size =
        |raw: &Option<Box<serde_json::value::RawValue>>| raw.as_ref().map_or(0, |r| r.get().len());
    match m {
        Message::Request(r) => format!(
            "request id={} method={} params={}B",
            r.id,
            r.method,
            size(&r.params)
        ),
        Message::Notification(n) => format!(
            "notification method={} params={}B",
            n.method,
            size(&n.params)
        ),
        Message::Response(r) => format!("response id={} result={}B", r.id, r.result.get().len()),
        Message::Error(e) => format!(
            "error response id={} code={}",
            e.id.as_ref().map_or("null".to_owned(), |i| i.to_string()),
            e.error.code
        ),
    }
}

/// Counts of what `decode` saw.
#[derive(Default)]
struct Tally {
    ok: usize,
    bad: usize,
    answered: usize,
    frame: usize,
}

impl Tally {
    /// Writes one decoded frame (or the answer to a bad one) to `out`: a single
    /// message as one line, a batch (2025-03-26) as one array line holding the
    /// re-encoded messages and the error responses for its bad items, in order
    /// (JSON-RPC 2.0 §6).
    fn frame(&mut self, out: &mut impl Write, item: Result<Frame, LineError>) -> io::Result<()> {
        self.frame += 1;
        let n = self.frame;
        match item {
            Ok(Frame::Single(m)) => {
                self.ok += 1;
                eprintln!("frame {n}: {}", describe(&m));
                out.write_all(&encode_line(&m))
            }
            Ok(Frame::Batch(items)) => {
                eprintln!("frame {n}: batch of {}", items.len());
                let mut batch = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Ok(m) => {
                            self.ok += 1;
                            eprintln!("  {}", describe(&m));
                            batch.push(m);
                        }
                        Err(e) => batch.extend(self.bad_input(n, &LineError::Decode(e))),
                    }
                }
                if batch.is_empty() {
                    return Ok(());
                }
                out.write_all(&encode_batch_line(&batch))
            }
            Err(e) => match self.bad_input(n, &e) {
                Some(answer) => out.write_all(&encode_line(&answer)),
                None => Ok(()),
            },
        }
    }

    /// Counts and reports bad input; the answer the spec gives it, if any.
    fn bad_input(&mut self, n: usize, e: &LineError) -> Option<Message> {
        self.bad += 1;
        eprintln!("frame {n}: bad input: {e}");
        e.wants_response().then(|| {
            self.answered += 1;
            Message::Error(e.to_response())
        })
    }
}

/// Runs `switchboard decode`: decodes `file` (`None`: the built-in sample; `-`:
/// stdin) under `revision`'s batching rule. Errors: the input cannot be opened or
/// read, or stdout cannot be written.
pub fn decode(file: Option<PathBuf>, revision: ProtocolVersion) -> anyhow::Result<()> {
    let mut input = open_input(file)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut decoder = FrameDecoder::new(revision.batching());
    let mut tally = Tally::default();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("reading input"),
        };
        for item in decoder.feed(&chunk[..n]) {
            tally.frame(&mut out, item)?;
        }
    }
    for item in decoder.finish() {
        tally.frame(&mut out, item)?;
    }
    out.flush()?;
    eprintln!(
        "# {} messages decoded and re-encoded; {} bad inputs, {} answered per the spec \
         (broken notifications get no answer); revision {revision}",
        tally.ok, tally.bad, tally.answered
    );
    Ok(())
}
