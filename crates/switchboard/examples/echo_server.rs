//! An MCP server over stdio, built with the `switchboard` library.
//!
//! ```sh
//! cargo run -p switchboard --example echo_server [-- --modern-only]
//! ```
//!
//! With `--modern-only` it speaks only MCP 2026-07-28 (its `Supported` set has no
//! other revision): `initialize` is answered with an error listing the supported
//! versions, as a server written for that revision alone answers it (spec notes
//! §6, "Modern-only server vs legacy clients"). Otherwise it speaks every revision.
//!
//! It speaks MCP on its own stdin and stdout (one JSON-RPC message per line, nothing
//! else on stdout) and logs to stderr (`RUST_LOG`-style filtering is not wired; the
//! level is INFO, or DEBUG with `ECHO_SERVER_DEBUG=1`). Tools:
//!
//! - `echo {text}`: returns `text` as one text block;
//! - `slow_progress {steps?, delay_ms?}`: reports progress `1..=steps` of `steps`
//!   (default 5), sleeping `delay_ms` (default 20) before each, then returns `"done"`;
//!   stops early when the client cancels;
//! - `fail {}`: a tool execution error (`isError: true`);
//! - `ask_sampling {prompt}`: asks the client to sample (`sampling/createMessage`)
//!   and returns the model's text (needs a client that declared `sampling`).
//!
//! The end-to-end tests (`tests/e2e_*.rs`) run this binary as a child process and
//! also include this file to serve the same tools in memory.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::server::{Arguments, ServeOptions, Server, ServerBuilder, ToolContext, ToolError};
use switchboard_protocol::types::{
    CallToolResult, CreateMessageRequestParams, Implementation, TextContent, Tool,
};
use switchboard_transport::{stdio, TransportConfig};
use tokio::io::AsyncWrite;

/// The tool definition `{name, description, inputSchema}`.
fn tool(name: &str, description: &str, input_schema: Value) -> Tool {
    serde_json::from_value(json!({
        "name": name,
        "description": description,
        "inputSchema": input_schema,
    }))
    .expect("a valid tool definition")
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult {
        content: vec![TextContent::new(text).into()],
        ..Default::default()
    }
}

async fn echo(args: Arguments, _cx: ToolContext) -> Result<CallToolResult, ToolError> {
    let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
    Ok(text_result(text))
}

async fn slow_progress(args: Arguments, cx: ToolContext) -> Result<CallToolResult, ToolError> {
    let steps = args.get("steps").and_then(Value::as_u64).unwrap_or(5);
    let delay = Duration::from_millis(args.get("delay_ms").and_then(Value::as_u64).unwrap_or(20));
    for i in 1..=steps {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = cx.cancelled() => return Err(ToolError::new("cancelled")),
        }
        cx.progress(
            i as f64,
            Some(steps as f64),
            Some(format!("step {i} of {steps}")),
        )
        .await?;
    }
    Ok(text_result("done"))
}

async fn fail(_args: Arguments, _cx: ToolContext) -> Result<CallToolResult, ToolError> {
    Err(ToolError::new("this tool always fails"))
}

async fn ask_sampling(args: Arguments, cx: ToolContext) -> Result<CallToolResult, ToolError> {
    let prompt = args
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message = serde_json::from_value(json!({
        "role": "user",
        "content": {"type": "text", "text": prompt},
    }))
    .map_err(|e| ToolError::new(e.to_string()))?;
    let answer = cx
        .create_message(CreateMessageRequestParams::new(vec![message], 100))
        .await?;
    let text: Vec<String> = answer
        .content
        .blocks()
        .iter()
        .filter_map(|b| {
            let v = serde_json::to_value(b).ok()?;
            v.get("text").and_then(Value::as_str).map(str::to_owned)
        })
        .collect();
    Ok(text_result(text.join("")))
}

/// The example's tools, ready for more registrations (the tests add their own).
pub fn builder() -> ServerBuilder {
    let object = |properties: Value, required: Value| json!({"type": "object", "properties": properties, "required": required});
    Server::builder(Implementation::new(
        "echo-server",
        env!("CARGO_PKG_VERSION"),
    ))
    .instructions("A demonstration server: echo, progress, errors and sampling.")
    .tool(
        tool(
            "echo",
            "Returns its text argument.",
            object(json!({"text": {"type": "string"}}), json!(["text"])),
        ),
        echo,
    )
    .tool(
        tool(
            "slow_progress",
            "Reports progress a number of times, with a small delay before each.",
            object(
                json!({
                    "steps": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "delay_ms": {"type": "integer", "minimum": 0, "maximum": 60000},
                }),
                json!([]),
            ),
        ),
        slow_progress,
    )
    .tool(
        tool(
            "fail",
            "Always fails (isError).",
            object(json!({}), json!([])),
        ),
        fail,
    )
    .tool(
        tool(
            "ask_sampling",
            "Asks the client's model and returns its text.",
            object(json!({"prompt": {"type": "string"}}), json!(["prompt"])),
        ),
        ask_sampling,
    )
}

/// Our stdout, which tells `done` when the transport's writer lets go of it (after
/// its final flush and shutdown), so `main` can wait for queued answers to be
/// written before the process exits.
struct Stdout {
    inner: tokio::io::Stdout,
    _done: tokio::sync::oneshot::Sender<()>,
}

impl AsyncWrite for Stdout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs go to stderr: stdout carries protocol messages only.
    let level = if std::env::var_os("ECHO_SERVER_DEBUG").is_some() {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(false)
        .init();

    let mut server = builder();
    if std::env::args().skip(1).any(|a| a == "--modern-only") {
        server = server.supported(
            switchboard_protocol::version::Supported::new([
                switchboard_protocol::ProtocolVersion::V2026_07_28,
            ])
            .expect("one revision"),
        );
    }
    let server = server.build()?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let stdout = Stdout {
        inner: tokio::io::stdout(),
        _done: done_tx,
    };
    // `stdio::serve` with a stdout we can watch; same transport otherwise.
    let transport = stdio::serve_on(tokio::io::stdin(), stdout, &TransportConfig::default());
    let reason = server.serve(transport, ServeOptions::default()).run().await;
    // Answers already queued are written before the writer lets go of stdout.
    let _ = tokio::time::timeout(Duration::from_secs(5), done_rx).await;
    tracing::info!(%reason, "exiting");
    // stdin may still be read by a blocking thread (Tokio's caveat): exit outright.
    std::process::exit(0);
}
