//! `switchboard`: the command-line front of Switchboard.
//!
//! For now it has one job, `decode`: read newline-delimited JSON-RPC messages (the
//! stdio framing of every MCP revision) from a file, standard input, or a built-in
//! sample, classify each from its envelope, and write it back out re-encoded; a bad
//! line gets the error response the spec gives it (-32700 or -32600). Messages go to
//! stdout, one per line; the account of each goes to stderr.
//!
//! This binary must not hold protocol logic of its own: it only calls
//! `switchboard-protocol`.

use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use switchboard_protocol::codec::line::LineDecoder;
use switchboard_protocol::jsonrpc::{decode_frame, DecodeError, Frame, Message};
use switchboard_protocol::ProtocolVersion;

/// The built-in sample: one message of each kind, ids that other tools round, a
/// 2026-07-28 request, and three kinds of bad input.
const SAMPLE: &str = include_str!("../examples-data/sample.jsonl");

#[derive(Parser)]
#[command(name = "switchboard", version, about = "MCP on the wire: decode, bridge and gateway (in progress)")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Decode newline-delimited JSON-RPC messages and write them back out re-encoded.
    Decode {
        /// A file of messages, one per line; `-` for standard input. Default: the
        /// built-in sample.
        file: Option<PathBuf>,
        /// The protocol revision whose batching rule applies (only 2025-03-26
        /// allows batches).
        #[arg(long, default_value = "2025-11-25")]
        revision: ProtocolVersion,
    },
}

fn main() {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Command::Decode { file: None, revision: ProtocolVersion::LATEST_LEGACY });
    let result = match command {
        Command::Decode { file, revision } => decode(file, revision),
    };
    if let Err(e) = result {
        eprintln!("switchboard: {e:#}");
        std::process::exit(2);
    }
}

fn read_input(file: Option<PathBuf>) -> anyhow::Result<Vec<u8>> {
    match file {
        None => {
            eprintln!("# no file given: decoding the built-in sample");
            Ok(SAMPLE.as_bytes().to_vec())
        }
        Some(p) if p.as_os_str() == "-" => {
            let mut buf = Vec::new();
            io::stdin().read_to_end(&mut buf).context("reading standard input")?;
            Ok(buf)
        }
        Some(p) => std::fs::read(&p).with_context(|| format!("reading {}", p.display())),
    }
}

fn describe(m: &Message) -> String {
    let size = |raw: &Option<Box<serde_json::value::RawValue>>| raw.as_ref().map_or(0, |r| r.get().len());
    match m {
        Message::Request(r) => format!("request id={} method={} params={}B", r.id, r.method, size(&r.params)),
        Message::Notification(n) => format!("notification method={} params={}B", n.method, size(&n.params)),
        Message::Response(r) => format!("response id={} result={}B", r.id, r.result.get().len()),
        Message::Error(e) => format!(
            "error response id={} code={}",
            e.id.as_ref().map_or("null".to_owned(), |i| i.to_string()),
            e.error.code
        ),
    }
}

fn decode(file: Option<PathBuf>, revision: ProtocolVersion) -> anyhow::Result<()> {
    let input = read_input(file)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut decoder = LineDecoder::new();
    let (mut ok, mut bad) = (0usize, 0usize);
    let mut emit = |line_no: usize, out: &mut BufWriter<io::StdoutLock<'_>>, m: &Message| -> io::Result<()> {
        eprintln!("line {line_no}: {}", describe(m));
        out.write_all(&m.encode())?;
        out.write_all(b"\n")
    };
    let mut answer = |line_no: usize, out: &mut BufWriter<io::StdoutLock<'_>>, e: &DecodeError| -> io::Result<()> {
        eprintln!("line {line_no}: bad input: {e}");
        if e.wants_response() {
            out.write_all(&Message::Error(e.to_response()).encode())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    };
    decoder.push(&input);
    decoder.finish();
    let mut line_no = 0;
    while let Some(item) = decoder.next_line() {
        line_no += 1;
        let line = match item {
            Ok(line) => line,
            Err(e) => {
                bad += 1;
                eprintln!("line {line_no}: {e}");
                continue;
            }
        };
        match decode_frame(&line, revision.batching()) {
            Ok(Frame::Single(m)) => {
                ok += 1;
                emit(line_no, &mut out, &m)?;
            }
            Ok(Frame::Batch(items)) => {
                for item in items {
                    match item {
                        Ok(m) => {
                            ok += 1;
                            emit(line_no, &mut out, &m)?;
                        }
                        Err(e) => {
                            bad += 1;
                            answer(line_no, &mut out, &e)?;
                        }
                    }
                }
            }
            Err(e) => {
                bad += 1;
                answer(line_no, &mut out, &e)?;
            }
        }
    }
    out.flush()?;
    eprintln!("# {ok} messages decoded and re-encoded, {bad} bad inputs answered per the spec (revision {revision})");
    Ok(())
}
