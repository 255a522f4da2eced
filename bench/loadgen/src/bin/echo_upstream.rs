//! `echo-upstream`: the minimal, fast stdio MCP server the bridge benchmark puts
//! behind every bridge (MCP 2025-11-25, "Transports → stdio": one JSON-RPC message
//! per line on stdin and stdout).
//!
//! It answers `initialize` (echoing the requested protocol version when it is one
//! of 2024-11-05 to 2025-11-25, else 2025-11-25), `ping`, `tools/list` (one tool,
//! `echo`) and `tools/call` of `echo` (`{"content":[{"type":"text","text":T}]}`
//! for the argument `text` T); other requests get -32601 (method not found), a
//! `tools/call` of another tool or without a string `text` gets -32602; every
//! notification and response is ignored; an unparsable line gets -32700 with a
//! null id. It ends at the end of stdin.
//!
//! Written on serde_json and std only, single-threaded, and flushes stdout only
//! when no more input is already buffered, so that pipelined requests (a shared
//! child, or `loadgen --mode stdio`) cost one write per burst. It must stay this
//! cheap: it is the upstream under test, not a library.

use std::borrow::Cow;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::os::fd::AsFd;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use switchboard_bench::echo;

/// The envelope fields the server looks at; everything else is skipped.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<CallArguments<'a>>,
}

#[derive(Deserialize)]
struct CallArguments<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct InitParams<'a> {
    #[serde(borrow, rename = "protocolVersion")]
    protocol_version: Option<Cow<'a, str>>,
}

/// A result, or a JSON-RPC error's code and message.
type Outcome = Result<Value, (i64, String)>;

/// The reply to one line, if any: the request's id and its outcome.
fn answer(line: &[u8]) -> Option<(Box<RawValue>, Outcome)> {
    let null = || RawValue::from_string("null".to_owned()).expect("null is JSON");
    let envelope: Envelope<'_> = match serde_json::from_slice(line) {
        Ok(e) => e,
        Err(e) => return Some((null(), Err((-32700, format!("parse error: {e}"))))),
    };
    let (Some(id), Some(method)) = (envelope.id, envelope.method) else {
        return None; // a notification or a response
    };
    let params = envelope.params.map(RawValue::get).unwrap_or("{}");
    let outcome = match &*method {
        "initialize" => {
            let requested: Option<InitParams<'_>> = serde_json::from_str(params).ok();
            let version = echo::negotiate(
                requested
                    .as_ref()
                    .and_then(|p| p.protocol_version.as_deref()),
            );
            Ok(echo::initialize_result(version, "echo-upstream"))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(echo::tools_list_result()),
        "tools/call" => match serde_json::from_str::<CallParams<'_>>(params) {
            Ok(p) if p.name == "echo" => match p.arguments.and_then(|a| a.text) {
                Some(text) => Ok(echo::call_result(&text)),
                None => Err((-32602, "echo needs a string argument `text`".to_owned())),
            },
            Ok(p) => Err((-32602, format!("unknown tool: {}", p.name))),
            Err(e) => Err((-32602, format!("invalid tools/call params: {e}"))),
        },
        other => Err((-32601, format!("method not found: {other}"))),
    };
    Some((id.to_owned(), outcome))
}

fn main() -> io::Result<()> {
    // A BufReader of our own over fd 0 (not `Stdin`'s hidden buffer), so that
    // `buffer()` says whether more input is already here.
    let stdin = std::fs::File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let mut input = BufReader::with_capacity(64 * 1024, stdin);
    let mut output = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let text = line.trim_ascii();
        if !text.is_empty() {
            if let Some((id, outcome)) = answer(text) {
                let reply = match outcome {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err((code, message)) => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                    }
                };
                serde_json::to_writer(&mut output, &reply)?;
                output.write_all(b"\n")?;
            }
        }
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
    output.flush()
}
