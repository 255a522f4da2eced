//! `bare-hyper`: the HTTP limit of the bridge benchmark (issue 4). A bare hyper 1
//! HTTP/1.1 server (keep-alive, TCP_NODELAY on every accepted socket) that answers
//! the Streamable HTTP POSTs the load generator sends (MCP 2025-11-25,
//! "Transports → Streamable HTTP") with no MCP library and no child process:
//!
//! | POST body | answer |
//! |---|---|
//! | `initialize` | 200, a new `Mcp-Session-Id`, the result (version negotiated as in `echo-upstream`) |
//! | a notification or response | 202, no body (with a known session id) |
//! | `tools/call` echo, `tools/list`, `ping`, others (-32601) | 200, the response (with a known session id) |
//! | no or unknown `Mcp-Session-Id` after initialize | 400 / 404 with a JSON-RPC error |
//! | unparsable body | 400, -32700 |
//! | other methods or paths | 405 with `Allow: POST` / 404 |
//!
//! Responses go out as `text/event-stream` shaped like the bridge's at 2025-11-25
//! (a priming event with an id and empty data, then the message event), or as
//! `application/json` with `--json`.
//!
//! ```text
//! bare-hyper [--listen 127.0.0.1:0] [--path /mcp] [--json]
//! ```
//! Prints its endpoint URL (`http://ADDR/mcp`) as the first line of stdout.
//! It must stay this small: it is a limit to measure against, not a server.

use std::collections::HashSet;
use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use switchboard_bench::echo;
use tokio::net::TcpListener;

#[derive(Debug, Parser)]
#[command(
    name = "bare-hyper",
    about = "A bare hyper server answering the benchmark's MCP POSTs."
)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The endpoint's path.
    #[arg(long, default_value = "/mcp")]
    path: String,
    /// Answer `application/json` instead of `text/event-stream`.
    #[arg(long)]
    json: bool,
}

struct State {
    path: String,
    json: bool,
    sessions: RwLock<HashSet<String>>,
    next_session: AtomicU64,
    salt: u64,
    next_event: AtomicU64,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<String>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Value,
}

type Reply = Response<Full<Bytes>>;

fn plain(status: StatusCode) -> Reply {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = status;
    r
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        "application/json".parse().expect("static header"),
    );
    r
}

impl State {
    fn message(&self, message: &Value) -> Reply {
        let text = message.to_string();
        if self.json {
            let mut r = Response::new(Full::new(Bytes::from(text)));
            r.headers_mut().insert(
                CONTENT_TYPE,
                "application/json".parse().expect("static header"),
            );
            return r;
        }
        let stream = self.next_event.fetch_add(1, Ordering::Relaxed);
        let body = format!("event: message\nid: {stream}-0\ndata: \n\nevent: message\nid: {stream}-1\ndata: {text}\n\n");
        let mut r = Response::new(Full::new(Bytes::from(body)));
        let h = r.headers_mut();
        h.insert(
            CONTENT_TYPE,
            "text/event-stream".parse().expect("static header"),
        );
        h.insert(CACHE_CONTROL, "no-cache".parse().expect("static header"));
        r
    }

    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Result<Reply, Infallible> {
        if request.uri().path() != self.path {
            return Ok(plain(StatusCode::NOT_FOUND));
        }
        if request.method() != Method::POST {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut()
                .insert(ALLOW, "POST".parse().expect("static header"));
            return Ok(r);
        }
        let session = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = match request.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return Ok(plain(StatusCode::BAD_REQUEST)),
        };
        let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(&body) else {
            return Ok(rpc_error(StatusCode::BAD_REQUEST, -32700, "parse error"));
        };
        if envelope.method.as_deref() == Some("initialize") {
            let Some(id) = envelope.id else {
                return Ok(rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    "initialize needs an id",
                ));
            };
            let requested = envelope
                .params
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .and_then(|p| {
                    p.get("protocolVersion")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
            let version = echo::negotiate(requested.as_deref());
            let n = self.next_session.fetch_add(1, Ordering::Relaxed);
            let sid = format!("{:016x}{:016x}", self.salt, n);
            self.sessions
                .write()
                .expect("sessions lock")
                .insert(sid.clone());
            let mut r = self.message(&json!({
                "jsonrpc": "2.0", "id": id, "result": echo::initialize_result(version, "bare-hyper")
            }));
            r.headers_mut().insert(
                "mcp-session-id",
                sid.parse().expect("hex is a valid header value"),
            );
            return Ok(r);
        }
        match session {
            None => {
                return Ok(rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    "Mcp-Session-Id required",
                ))
            }
            Some(s) if !self.sessions.read().expect("sessions lock").contains(&s) => {
                return Ok(rpc_error(
                    StatusCode::NOT_FOUND,
                    -32600,
                    "session not found",
                ));
            }
            Some(_) => {}
        }
        let (Some(id), Some(method)) = (envelope.id, envelope.method) else {
            return Ok(plain(StatusCode::ACCEPTED));
        };
        let params = envelope.params.map(RawValue::get).unwrap_or("{}");
        let outcome: Result<Value, (i64, String)> = match method.as_str() {
            "ping" => Ok(json!({})),
            "tools/list" => Ok(echo::tools_list_result()),
            "tools/call" => match serde_json::from_str::<CallParams>(params) {
                Ok(p) if p.name == "echo" => {
                    match p.arguments.get("text").and_then(Value::as_str) {
                        Some(text) => Ok(echo::call_result(text)),
                        None => Err((-32602, "echo needs a string argument `text`".to_owned())),
                    }
                }
                Ok(p) => Err((-32602, format!("unknown tool: {}", p.name))),
                Err(e) => Err((-32602, format!("invalid tools/call params: {e}"))),
            },
            other => Err((-32601, format!("method not found: {other}"))),
        };
        let message = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        Ok(self.message(&message))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let listener = TcpListener::bind(args.listen).await?;
    let addr = listener.local_addr()?;
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let state = Arc::new(State {
        path: args.path,
        json: args.json,
        sessions: RwLock::default(),
        next_session: AtomicU64::new(1),
        salt,
        next_event: AtomicU64::new(1),
    });
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "http://{addr}{}", state.path)?;
        out.flush()?;
    }
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("bare-hyper: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |r| state.clone().handle(r));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
