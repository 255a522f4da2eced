//! How an upstream is reached, for every transport the library's client
//! speaks: a child process over stdio, a remote server over Streamable HTTP
//! (which carries 2026-07-28's stateless requests too: which era a server
//! speaks is the handshake's to find, not the connector's), or over the legacy
//! HTTP+SSE transport of 2024-11-05. Each connection gives the transport's two
//! halves and what ends it. Must not know MCP methods or the handshake.

use switchboard_protocol::jsonrpc::ErrorObject;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::client::{HttpClientConfig, HttpClientHandle};
use switchboard_transport::http::sse_client::{self, SseClientConfig};
use switchboard_transport::stdio::{spawn, ChildConfig, ChildProcess};
use switchboard_transport::{Receiver, Sender, TransportConfig};
use tracing::{debug, warn};

/// How to reach one upstream server. Kept for each (re)connection.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Connector {
    /// A child process spawned for each connection (command, arguments,
    /// environment, working directory, shutdown graces), its stdio as the
    /// transport.
    Stdio(ChildConfig),
    /// A Streamable HTTP endpoint (2025-03-26 and later, 2026-07-28's
    /// stateless form included).
    StreamableHttp(HttpClientConfig),
    /// A legacy HTTP+SSE endpoint (2024-11-05): the URL of its `GET` stream.
    Sse(String, SseClientConfig),
    /// A URL whose transport is to be found: Streamable HTTP (2026-07-28
    /// first, then `initialize`), and when its POST is refused with 400, 404
    /// or 405, the legacy HTTP+SSE transport at the same URL (the URL and
    /// the SSE client's settings here).
    Auto(HttpClientConfig, (String, SseClientConfig)),
}

/// One connection to an upstream.
pub(crate) struct Connection {
    pub(crate) sender: Sender,
    pub(crate) receiver: Receiver,
    pub(crate) link: Link,
}

impl Link {
    /// Whether a request the transport failed (`error`, its
    /// [`Inbound::Failed`](switchboard_transport::Inbound::Failed)) shows a
    /// remote server that cannot be reached: a failure with no HTTP status
    /// (connection refused or reset, no reply) over HTTP. Never for a child,
    /// whose transport failures are about one answer (over the line limit).
    pub(crate) fn unreachable(&self, error: &ErrorObject) -> bool {
        let http_status = error
            .data
            .as_ref()
            .is_some_and(|d| d.get().contains("httpStatus"));
        matches!(self, Link::Http(_) | Link::Sse) && !http_status
    }

    /// The revision in force: over Streamable HTTP it goes in
    /// `MCP-Protocol-Version` (and picks the 2026-07-28 rules) from now on;
    /// `None` before `initialize` (which carries no version header).
    pub(crate) fn set_version(&self, version: Option<ProtocolVersion>) {
        if let Link::Http(handle) = self {
            handle.set_protocol_version(version);
        }
    }

    /// The Streamable HTTP client, when that is the link.
    pub(crate) fn http(&self) -> Option<&HttpClientHandle> {
        match self {
            Link::Http(handle) => Some(handle),
            _ => None,
        }
    }
}

/// What a connection holds besides its halves.
pub(crate) enum Link {
    /// The child process, to end in the spec's order.
    Process(ChildProcess),
    /// The Streamable HTTP client, told the revision in force.
    Http(HttpClientHandle),
    /// A legacy SSE stream: its halves are all there is.
    Sse,
}

impl Connector {
    /// A name for logs and errors: the child's, or the endpoint's URL.
    pub fn name(&self) -> &str {
        match self {
            Connector::Stdio(child) => &child.name,
            Connector::StreamableHttp(config) | Connector::Auto(config, _) => &config.url,
            Connector::Sse(url, _) => url,
        }
    }

    /// This connector under another name (a child's name in logs; the URL of
    /// an HTTP upstream stays).
    pub(crate) fn named(&self, name: &str) -> Connector {
        match self {
            Connector::Stdio(child) => {
                let mut child = child.clone();
                child.name = name.to_owned();
                Connector::Stdio(child)
            }
            other => other.clone(),
        }
    }

    /// Connects once (a child's pipes get `transport`'s queue sizes and line
    /// limit). Errors: why, in one line (the child could not be started, the
    /// URL is refused, the SSE endpoint gave no `endpoint` event in time).
    pub(crate) async fn connect(&self, transport: &TransportConfig) -> Result<Connection, String> {
        match self {
            Connector::Stdio(child) => {
                let child =
                    spawn(child.clone(), transport).map_err(|e| format!("could not start: {e}"))?;
                Ok(Connection {
                    sender: child.sender,
                    receiver: child.receiver,
                    link: Link::Process(child.process),
                })
            }
            Connector::StreamableHttp(config) | Connector::Auto(config, _) => {
                let (transport, handle) =
                    switchboard_transport::http::client::connect(config.clone())
                        .map_err(|e| format!("could not connect to {}: {e}", config.url))?;
                let (sender, receiver) = transport.split();
                Ok(Connection {
                    sender,
                    receiver,
                    link: Link::Http(handle),
                })
            }
            Connector::Sse(url, config) => {
                let transport = sse_client::connect(url, config.clone())
                    .await
                    .map_err(|e| format!("could not connect to {url}: {e}"))?;
                let (sender, receiver) = transport.split();
                Ok(Connection {
                    sender,
                    receiver,
                    link: Link::Sse,
                })
            }
        }
    }
}

impl Connection {
    /// The child's process id, for logs.
    pub(crate) fn pid(&self) -> Option<u32> {
        match &self.link {
            Link::Process(p) => Some(p.pid()),
            _ => None,
        }
    }

    /// Ends the connection: a child in the spec's order (stdin closed,
    /// SIGTERM, SIGKILL); an HTTP session by dropping the halves, which
    /// `DELETE`s it (bounded by the client's `delete_timeout`).
    pub(crate) async fn close(self) {
        let Connection {
            sender,
            receiver,
            link,
        } = self;
        drop(sender);
        drop(receiver);
        match link {
            Link::Process(process) => {
                let pid = process.pid();
                match process.shutdown().await {
                    Ok(report) => debug!(pid, %report, "upstream child ended"),
                    Err(e) => warn!(pid, error = %e, "ending the upstream child failed"),
                }
            }
            Link::Http(_) | Link::Sse => {}
        }
    }
}
