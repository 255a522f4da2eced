//! The library benchmark's rmcp echo server (`bench/library/run`): the smallest
//! idiomatic Streamable HTTP server of rmcp 3.x (the official Rust SDK) with one
//! tool, `echo {text}`, answering `{"content":[{"type":"text","text":text}]}`
//! (MCP 2025-11-25, "Server Features → Tools").
//!
//! ```text
//! rmcp-echo [PORT]        # or PORT=...; 0 or absent: a free port
//! ```
//!
//! rmcp's defaults throughout (`StreamableHttpServerConfig::default()`: stateful
//! sessions with `LocalSessionManager`, SSE replies), mounted at `/mcp` of an axum
//! router on 127.0.0.1, with one change the benchmark grants it: TCP_NODELAY on
//! every accepted socket (axum's `ListenerExt::tap_io`), which rmcp's examples
//! lack and without which each SSE reply waits for the client's delayed ACK.
//! Prints `listening on http://127.0.0.1:PORT/mcp` on stdout once bound.

use axum::serve::ListenerExt;
use rmcp::{
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    },
    ServerHandler,
};

/// The arguments of `echo`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
}

/// The server: one tool.
#[derive(Debug, Clone)]
struct Echo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Echo {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Returns its text argument.")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("PORT").ok())
        .map(|p| p.parse().expect("PORT must be a port number"))
        .unwrap_or(0);
    let service: StreamableHttpService<Echo, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Echo::new()),
        Default::default(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
