//! `switchboard example-server`: a demonstration MCP server built with the
//! `switchboard` library, served on stdio (default) or, with `--http ADDR`, as a
//! Streamable HTTP server of its own. It is also what the bridge serves when given
//! no command (it spawns `<current exe> example-server`).
//!
//! What it offers (every revision the library speaks; feature rules per
//! REVISIONS.md §7 and each revision's "Server features" / "Utilities"):
//!
//! | kind | name | what |
//! |---|---|---|
//! | tool | `echo {text}` | its text, as one text block |
//! | tool | `add {a, b}` (integers) | `structuredContent {sum}` checked against its `outputSchema`, and the same JSON as text |
//! | tool | `image {}` | a PNG image block |
//! | tool | `audio {}` | a WAV audio block (a quarter second of 440 Hz) |
//! | tool | `embedded_resource {}` | the `example://readme` resource, embedded |
//! | tool | `progress {seconds?, steps?}` | `steps` (default 6) progress notifications spread over `seconds` (default 3), then `done`; stops when cancelled |
//! | tool | `log {message?}` | one `notifications/message` at each of debug, info, notice, warning |
//! | tool | `fail {message?}` | a tool execution error (`isError: true`) |
//! | tool | `sample {prompt}` | asks the client's model (`sampling/createMessage`) |
//! | tool | `elicit {message?}` | asks the user for a name (`elicitation/create`, form mode) |
//! | tool | `bump_counter {}` | adds one to `example://counter` and notifies its subscribers |
//! | resource | `example://readme` | Markdown text |
//! | resource | `example://logo.png` | a binary (base64 blob) PNG |
//! | resource | `example://counter` | the counter's value; subscribe to hear `notifications/resources/updated` |
//! | template | `example://greeting/{name}` | a greeting; `name` has completions |
//! | prompt | `greet {name, style?}` | a greeting request; `style` has completions |
//! | prompt | `review_code {code, language?}` | a code review request; `language` has completions |
//!
//! Stdout carries only JSON-RPC in stdio mode; logs go to stderr. With `--http` the
//! server prints `listening on http://ADDR/mcp` to stderr once bound (tests read the
//! URL from there) and stops on Ctrl-C or SIGTERM; the `--auth-*` flags
//! (`crate::auth_args`) make it require OAuth access tokens there.
//!
//! This module must not know about framing, sockets or JSON-RPC ids: it registers
//! features with the library and hands it a transport.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use switchboard::server::{
    Announcer, Arguments, HandlerError, ServeOptions, Server, ServerBuilder, ToolContext, ToolError,
};
use switchboard_protocol::types::{
    CallToolResult, CreateMessageRequestParams, ElicitRequestParams, GetPromptResult,
    Implementation, LoggingLevel, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::{HttpServer, HttpServerConfig, DEFAULT_SHUTDOWN_GRACE};
use switchboard_transport::{stdio, TransportConfig};

/// The `serverInfo.name` of the example server.
pub const SERVER_NAME: &str = "switchboard-example";

/// The URI of the counter resource that `bump_counter` changes.
pub const COUNTER_URI: &str = "example://counter";

/// A 1×1 PNG, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

const README: &str = "# Switchboard example server\n\n\
This server demonstrates every MCP server feature the switchboard library offers: \
tools (text, image, audio, embedded resource, structured output, progress, logging, \
errors, sampling, elicitation), resources (static, binary, templated, subscribable), \
prompts with arguments, and completions.\n";

/// Default duration of the `progress` tool, in seconds.
const DEFAULT_PROGRESS_SECONDS: f64 = 3.0;
/// Default number of steps of the `progress` tool.
const DEFAULT_PROGRESS_STEPS: u64 = 6;

/// Arguments of `switchboard example-server`.
#[derive(Debug, clap::Args)]
pub struct ExampleServerArgs {
    /// Serve Streamable HTTP on this address (e.g. `127.0.0.1:8080`; port 0 lets the
    /// OS choose) at `/mcp` instead of stdio. The URL is printed to stderr.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Speak only 2026-07-28 (refuse `initialize`; every request carries its
    /// `_meta`), as a server written for that revision alone would; for trying the
    /// bridge's era translation.
    #[arg(long)]
    pub modern_only: bool,
    /// Speak only this revision (e.g. `2024-11-05`: every `initialize` is
    /// answered with it), as a server written for that revision alone would;
    /// for trying clients, and the bridge, against an old server.
    #[arg(long, value_name = "VERSION", value_parser = parse_version, conflicts_with = "modern_only")]
    pub protocol_version: Option<ProtocolVersion>,
    /// MCP authorization for `--http`: the `--auth-*` flags.
    #[command(flatten)]
    pub auth: crate::auth_args::AuthArgs,
}

/// `--protocol-version`: a revision this crate knows.
fn parse_version(text: &str) -> Result<ProtocolVersion, String> {
    ProtocolVersion::parse(text).ok_or_else(|| {
        let known: Vec<&str> = ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect();
        format!("unknown revision {text:?} (known: {})", known.join(", "))
    })
}

/// State shared by every session: the counter and the server's announcer, which
/// tells subscribed sessions (legacy `resources/subscribe`) and 2026-07-28 listen
/// streams that it changed.
struct Shared {
    counter: AtomicU64,
    announcer: Announcer,
}

fn from<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("the example's JSON fits the type")
}

fn tool(v: Value) -> Tool {
    from(v)
}

/// The integer argument `name` as an `i64`. JSON Schema 2020-12 counts `3.0`
/// and `1e300` as integers, so the schema check lets them through: `3.0` is 3,
/// and anything that is not a whole number within `i64` is the tool's error (an
/// `isError` result), never a silent 0.
fn int_arg(args: &Arguments, name: &str) -> Result<i64, ToolError> {
    let value = args.get(name);
    if let Some(i) = value.and_then(Value::as_i64) {
        return Ok(i);
    }
    match value.and_then(Value::as_f64) {
        Some(f) if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 => Ok(f as i64),
        _ => Err(ToolError::new(format!(
            "{name} must be a whole number between {} and {}",
            i64::MIN,
            i64::MAX
        ))),
    }
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn blocks(content: Value) -> CallToolResult {
    from(json!({ "content": content }))
}

fn text(t: impl Into<String>) -> CallToolResult {
    blocks(json!([{"type": "text", "text": t.into()}]))
}

/// A WAV file (RIFF, PCM, 8 kHz, 8-bit mono): a quarter second of a 440 Hz tone.
fn beep_wav() -> Vec<u8> {
    const RATE: u32 = 8000;
    let samples: Vec<u8> = (0..RATE / 4)
        .map(|i| {
            let t = f64::from(i) / f64::from(RATE);
            (128.0 + 100.0 * (2.0 * std::f64::consts::PI * 440.0 * t).sin()) as u8
        })
        .collect();
    let data_len = samples.len() as u32;
    let mut wav = Vec::with_capacity(44 + samples.len());
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&RATE.to_le_bytes());
    wav.extend_from_slice(&RATE.to_le_bytes()); // bytes per second
    wav.extend_from_slice(&1u16.to_le_bytes()); // block align
    wav.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    wav.extend_from_slice(&samples);
    wav
}

fn readme_contents(uri: &str) -> ResourceContents {
    from(json!({"uri": uri, "mimeType": "text/markdown", "text": README}))
}

fn filter_prefix(candidates: &[&str], typed: &str) -> Vec<String> {
    candidates
        .iter()
        .filter(|c| c.starts_with(typed))
        .map(|c| (*c).to_owned())
        .collect()
}

async fn progress(args: Arguments, cx: ToolContext) -> Result<CallToolResult, ToolError> {
    let seconds = args
        .get("seconds")
        .and_then(Value::as_f64)
        .unwrap_or(DEFAULT_PROGRESS_SECONDS);
    let steps = args
        .get("steps")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_PROGRESS_STEPS);
    let pause = Duration::from_secs_f64(seconds / steps as f64);
    for i in 1..=steps {
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = cx.cancelled() => return Err(ToolError::new("cancelled")),
        }
        cx.progress(
            i as f64,
            Some(steps as f64),
            Some(format!("step {i} of {steps}")),
        )
        .await?;
    }
    Ok(text(format!("done: {steps} steps in {seconds} s")))
}

async fn log(args: Arguments, cx: ToolContext) -> Result<CallToolResult, ToolError> {
    let message = args
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("hello from the log tool");
    let mut sent = 0;
    for level in [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
    ] {
        if cx.log(level, json!(format!("{level}: {message}"))).await? {
            sent += 1;
        }
    }
    Ok(text(format!(
        "sent {sent} log messages (levels below the client's logging/setLevel are filtered)"
    )))
}

async fn sample(args: Arguments, cx: ToolContext) -> Result<CallToolResult, ToolError> {
    let prompt = args
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params: CreateMessageRequestParams = from(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 200,
    }));
    let answer = cx.create_message(params).await?;
    let said: Vec<String> = answer
        .content
        .blocks()
        .iter()
        .filter_map(|b| {
            let v = serde_json::to_value(b).ok()?;
            v.get("text").and_then(Value::as_str).map(str::to_owned)
        })
        .collect();
    Ok(text(format!("the model said: {}", said.join(""))))
}

async fn elicit(args: Arguments, cx: ToolContext) -> Result<CallToolResult, ToolError> {
    let message = args
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("What is your name?");
    let params: ElicitRequestParams = from(json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "description": "Your name"}},
            "required": ["name"]},
    }));
    let answer = serde_json::to_value(cx.elicit(params).await?).unwrap_or_default();
    let action = answer["action"].as_str().unwrap_or_default();
    Ok(match answer["content"]["name"].as_str() {
        Some(name) if action == "accept" => text(format!("hello, {name}")),
        _ => text(format!("the user chose {action}")),
    })
}

fn tools(b: ServerBuilder, shared: &Arc<Shared>) -> ServerBuilder {
    let counter = shared.clone();
    b.tool(
        tool(json!({"name": "echo", "description": "Returns its text argument.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                "required": ["text"]}})),
        |args, _| async move {
            Ok(text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            ))
        },
    )
    .tool(
        tool(json!({"name": "add", "description": "Adds two integers (structured output).",
            "inputSchema": {"type": "object", "properties": {
                "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
            "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}},
                "required": ["sum"]}})),
        |args, _| async move {
            let a = int_arg(&args, "a")?;
            let b = int_arg(&args, "b")?;
            let sum = a
                .checked_add(b)
                .ok_or_else(|| ToolError::new("the sum overflows a 64-bit integer"))?;
            let structured = json!({ "sum": sum });
            let mut result = text(structured.to_string());
            result.structured_content = Some(structured);
            Ok(result)
        },
    )
    .tool(
        tool(json!({"name": "image", "description": "Returns a PNG image.",
            "inputSchema": no_args()})),
        |_, _| async { Ok(blocks(json!([{"type": "image", "data": PNG, "mimeType": "image/png"}]))) },
    )
    .tool(
        tool(json!({"name": "audio", "description": "Returns a short WAV tone.",
            "inputSchema": no_args()})),
        |_, _| async {
            Ok(blocks(
                json!([{"type": "audio", "data": STANDARD.encode(beep_wav()), "mimeType": "audio/wav"}]),
            ))
        },
    )
    .tool(
        tool(json!({"name": "embedded_resource",
            "description": "Returns the example://readme resource, embedded.",
            "inputSchema": no_args()})),
        |_, _| async {
            Ok(blocks(json!([{"type": "resource",
                "resource": serde_json::to_value(readme_contents("example://readme"))
                    .unwrap_or_default()}])))
        },
    )
    .tool(
        tool(json!({"name": "progress",
            "description": "Reports progress `steps` times over `seconds`, then returns.",
            "inputSchema": {"type": "object", "properties": {
                "seconds": {"type": "number", "minimum": 0, "maximum": 600,
                    "description": "How long the whole run takes (default 3)."},
                "steps": {"type": "integer", "minimum": 1, "maximum": 1000,
                    "description": "How many progress notifications (default 6)."}}}})),
        progress,
    )
    .tool(
        tool(json!({"name": "log",
            "description": "Sends a log message at each of debug, info, notice and warning.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}})),
        log,
    )
    .tool(
        tool(json!({"name": "fail", "description": "Always fails with isError.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}})),
        |args, _| async move {
            Err(ToolError::new(
                args.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("this tool always fails"),
            ))
        },
    )
    .tool(
        tool(json!({"name": "sample",
            "description": "Asks the client's model (needs the client's sampling capability).",
            "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"}},
                "required": ["prompt"]}})),
        sample,
    )
    .tool(
        tool(json!({"name": "elicit",
            "description": "Asks the user for their name (needs the client's elicitation capability).",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}})),
        elicit,
    )
    .tool(
        tool(json!({"name": "bump_counter",
            "description": "Adds one to example://counter and notifies its subscribers.",
            "inputSchema": no_args()})),
        move |_, _| {
            let shared = counter.clone();
            async move {
                let value = shared.counter.fetch_add(1, Ordering::SeqCst) + 1;
                // Nobody listening is fine: the count is only for logs.
                let told = shared.announcer.resource_updated(COUNTER_URI);
                tracing::debug!(value, told, "counter bumped");
                Ok(text(format!("counter is now {value}")))
            }
        },
    )
}

fn resources(b: ServerBuilder, shared: &Arc<Shared>) -> ServerBuilder {
    let counter = shared.clone();
    b.resource(
        from::<Resource>(json!({"uri": "example://readme", "name": "readme",
            "title": "About this server", "mimeType": "text/markdown",
            "description": "What the example server offers (text)."})),
        |r| async move { Ok(vec![readme_contents(&r.uri)]) },
    )
    .resource(
        from::<Resource>(json!({"uri": "example://logo.png", "name": "logo",
            "mimeType": "image/png", "description": "A 1x1 PNG (binary)."})),
        |r| async move {
            Ok(vec![from::<ResourceContents>(
                json!({"uri": r.uri, "mimeType": "image/png", "blob": PNG}),
            )])
        },
    )
    .resource(
        from::<Resource>(json!({"uri": COUNTER_URI, "name": "counter",
            "mimeType": "text/plain",
            "description": "A number that bump_counter increments; subscribe to it."})),
        move |r| {
            let value = counter.counter.load(Ordering::SeqCst);
            async move {
                Ok(vec![from::<ResourceContents>(
                    json!({"uri": r.uri, "mimeType": "text/plain", "text": value.to_string()}),
                )])
            }
        },
    )
    .resource_template(
        from::<ResourceTemplate>(json!({"uriTemplate": "example://greeting/{name}",
            "name": "greeting", "mimeType": "text/plain",
            "description": "A greeting for {name}."})),
        |r| async move {
            let name = r.variables.get("name").cloned().unwrap_or_default();
            if name.is_empty() {
                return Err(HandlerError::NotFound("a greeting needs a name".into()));
            }
            Ok(vec![from::<ResourceContents>(json!({"uri": r.uri,
                "mimeType": "text/plain", "text": format!("Hello, {name}!")}))])
        },
    )
    .template_completion("example://greeting/{name}", "name", |r| async move {
        Ok(filter_prefix(&["alice", "bob", "carol", "dave"], &r.value))
    })
}

fn prompts(b: ServerBuilder) -> ServerBuilder {
    b.prompt(
        from::<Prompt>(
            json!({"name": "greet", "description": "Asks for a greeting.",
            "arguments": [
                {"name": "name", "description": "Who to greet", "required": true},
                {"name": "style", "description": "formal, casual or pirate"}]}),
        ),
        |a| async move {
            let style = a.get("style").map_or("casual", String::as_str);
            let name = a.get("name").map_or("", String::as_str);
            Ok(from::<GetPromptResult>(json!({
                "description": format!("A {style} greeting"),
                "messages": [{"role": "user", "content": {"type": "text",
                    "text": format!("Write a {style} greeting for {name}.")}}]})))
        },
    )
    .prompt(
        from::<Prompt>(
            json!({"name": "review_code", "description": "Asks for a code review.",
            "arguments": [
                {"name": "code", "description": "The code to review", "required": true},
                {"name": "language", "description": "Its programming language"}]}),
        ),
        |a| async move {
            let code = a.get("code").map_or("", String::as_str);
            // "this Python code", or "this code" without a language.
            let language = a
                .get("language")
                .filter(|l| !l.is_empty())
                .map_or(String::new(), |l| format!("{l} "));
            Ok(from::<GetPromptResult>(json!({"messages": [
                {"role": "user", "content": {"type": "text",
                    "text": format!("Please review this {language}code:\n\n{code}")}},
                {"role": "assistant", "content": {"type": "text",
                    "text": "Sure: what should I focus on?"}}]})))
        },
    )
    .prompt_completion("greet", "style", |r| async move {
        Ok(filter_prefix(&["casual", "formal", "pirate"], &r.value))
    })
    .prompt_completion("review_code", "language", |r| async move {
        Ok(filter_prefix(
            &["c", "go", "javascript", "python", "rust", "typescript"],
            &r.value,
        ))
    })
}

/// The example server.
fn example(only: Option<ProtocolVersion>) -> Server {
    let mut b = Server::builder(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
        .instructions(
            "A demonstration server: tools of every content kind, progress, logging, errors, \
             sampling, elicitation, resources (subscribe to example://counter and call \
             bump_counter), prompts and completions.",
        );
    if let Some(version) = only {
        b = b.supported(Supported::new([version]).expect("one revision"));
    }
    let shared = Arc::new(Shared {
        counter: AtomicU64::new(0),
        announcer: b.announcer(),
    });
    let b = prompts(resources(tools(b, &shared), &shared));
    b.build().expect("the example server registers cleanly")
}

/// Runs `switchboard example-server` (see the module documentation). Returns when
/// stdin closes (stdio; once the calls still in flight are answered, for at most
/// the library's `DRAIN_ON_CLOSE`, 10 s, and their answers written, for at most
/// its `FLUSH_BOUND`, 5 s more when the client stopped reading) or on Ctrl-C /
/// SIGTERM (HTTP). Errors: the address cannot be bound.
pub async fn run(args: ExampleServerArgs) -> std::io::Result<()> {
    let only = args
        .modern_only
        .then_some(ProtocolVersion::V2026_07_28)
        .or(args.protocol_version);
    let auth = args
        .auth
        .resource_config(switchboard_transport::http::server::DEFAULT_PATH)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    if auth.is_some() && args.http.is_none() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "--auth-issuer needs --http (a stdio server takes its credentials from its environment)",
        ));
    }
    let server = example(only);
    match args.http {
        None => serve_stdio(server).await,
        Some(addr) => serve_http(server, addr, auth).await,
    }
}

async fn serve_stdio(server: Server) -> std::io::Result<()> {
    // The transport watches stdout once stdin has ended: a client that died
    // mid-call ends the drain at once. `run` writes what is queued before it
    // returns (bounded by the library's FLUSH_BOUND).
    let transport = stdio::serve(&TransportConfig::default());
    let reason = server.serve(transport, ServeOptions::default()).run().await;
    tracing::info!(%reason, "exiting");
    Ok(())
}

async fn serve_http(
    server: Server,
    addr: SocketAddr,
    auth: Option<switchboard_transport::http::resource::ResourceServerConfig>,
) -> std::io::Result<()> {
    let mut config = HttpServerConfig::default();
    config.bind = addr;
    config.auth = auth;
    let (http, acceptor) = HttpServer::bind(config).await?;
    // Tests and users read the URL from here (stdout stays unused).
    eprintln!("listening on {}", http.url());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let serving = server.serve_http(acceptor, ServeOptions::default());
    tokio::select! {
        _ = serving => {}
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
        _ = term.recv() => tracing::info!("terminated; stopping"),
    }
    // Awaited before the runtime ends: every open SSE body ends with its last
    // chunk rather than being cut when the process exits.
    http.shutdown(DEFAULT_SHUTDOWN_GRACE).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wav_header_describes_its_data() {
        let wav = beep_wav();
        assert_eq!(&wav[..4], b"RIFF");
        let riff_len = u32::from_le_bytes(wav[4..8].try_into().unwrap()) as usize;
        assert_eq!(riff_len + 8, wav.len());
        let data_len = u32::from_le_bytes(wav[40..44].try_into().unwrap()) as usize;
        assert_eq!(data_len, 2000, "a quarter second at 8 kHz");
        assert_eq!(wav.len(), 44 + data_len);
    }

    #[test]
    fn add_takes_whole_numbers_and_refuses_the_rest() {
        let args = |v: Value| v.as_object().unwrap().clone();
        let a = args(
            json!({"a": 3.0, "b": 5, "c": 18446744073709551615u64, "d": 1e300,
            "e": 2.5, "f": "7", "g": -9007199254740992.0}),
        );
        assert_eq!(int_arg(&a, "a").unwrap(), 3);
        assert_eq!(int_arg(&a, "b").unwrap(), 5);
        assert_eq!(int_arg(&a, "g").unwrap(), -9007199254740992);
        for name in ["c", "d", "e", "f", "missing"] {
            assert!(int_arg(&a, name).is_err(), "{name}");
        }
    }

    #[test]
    fn the_server_declares_every_feature() {
        let server = example(None);
        let caps = serde_json::to_value(server.capabilities()).unwrap();
        for cap in ["tools", "resources", "prompts", "completions", "logging"] {
            assert!(caps.get(cap).is_some(), "{cap} missing from {caps}");
        }
        assert_eq!(caps["resources"]["subscribe"], true);
        assert_eq!(server.info().name, SERVER_NAME);
    }
}
