//! The library benchmark's echo server (`bench/library/run`, issue 3): the
//! smallest idiomatic Streamable HTTP server built with the `switchboard` library,
//! one tool `echo {text}` answering `{"content":[{"type":"text","text":text}]}`
//! (MCP 2025-11-25, "Server Features → Tools → Calling Tools"), served by
//! [`Server::serve_http`] with [`HttpServerConfig::default`] (stateful sessions,
//! SSE replies, loopback only, at `/mcp`) and [`ServeOptions::default`].
//!
//! Knows the library's public API only; must not know the load generator or the
//! other servers of the benchmark (rmcp, the TypeScript and Python SDKs), nor tune
//! anything a user of the defaults would not get.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};

use serde_json::{json, Value};
use switchboard::server::{Arguments, BuildError, ServeOptions, Server, ToolContext, ToolError};
use switchboard_protocol::types::{CallToolResult, Implementation, TextContent, Tool};
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};

/// The `echo` tool's definition: `{name: "echo", inputSchema: {text: string}}`
/// (MCP 2025-11-25, "Server Features → Tools → Tool").
pub fn echo_tool() -> Tool {
    serde_json::from_value(json!({
        "name": "echo",
        "description": "Returns its text argument.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        }
    }))
    .expect("a valid tool definition")
}

/// The `echo` tool's handler: one text block carrying the `text` argument
/// (empty when absent; the library validates arguments against the input schema
/// before calling, so a non-string never reaches it).
pub async fn echo(args: Arguments, _cx: ToolContext) -> Result<CallToolResult, ToolError> {
    let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
    Ok(CallToolResult {
        content: vec![TextContent::new(text).into()],
        ..Default::default()
    })
}

/// The server: implementation `switchboard-bench-echo`, the one tool [`echo`].
///
/// Errors: [`BuildError`] only if the library rejects the definition (it does not).
pub fn server() -> Result<Server, BuildError> {
    Server::builder(Implementation::new(
        "switchboard-bench-echo",
        env!("CARGO_PKG_VERSION"),
    ))
    .tool(echo_tool(), echo)
    .build()
}

/// Binds [`HttpServerConfig::default`] on `127.0.0.1:port` (`0`: a port the OS
/// chooses) and returns the endpoint URL (`http://127.0.0.1:PORT/mcp`) with the
/// future that serves every session with [`ServeOptions::default`] until the
/// returned [`HttpServer`] is dropped.
///
/// Errors: the bind's I/O error (port in use, ...).
pub async fn bind(
    server: &Server,
    port: u16,
) -> std::io::Result<(
    HttpServer,
    String,
    impl Future<Output = ()> + Send + 'static,
)> {
    let mut config = HttpServerConfig::default();
    config.bind = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let (http, acceptor) = HttpServer::bind(config).await?;
    let url = http.url();
    let serving = server.serve_http(acceptor, ServeOptions::default());
    Ok((http, url, serving))
}
