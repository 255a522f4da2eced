//! The admin listener: `/metrics`, the probes (`/healthz`, `/readyz`) and a
//! live page (`/ui`, its state at `/ui/state` and as server-sent events at
//! `/ui/events`) on an address of their own, kept off the public port. It
//! serves nothing else (404), takes no body, holds no secrets and knows no
//! MCP: what it shows comes from its caller's closures.
//!
//! `/metrics` answers the OpenMetrics text (`application/openmetrics-text`)
//! when the scraper's `Accept` names it, as Prometheus does, and the classic
//! text format 0.0.4 otherwise.

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::debug;

use super::body::Body;
use super::server::{HealthProbe, HealthReport};

/// What `/metrics` renders: `classic` asks for the text format 0.0.4
/// instead of OpenMetrics; returns the body and its content type.
#[derive(Clone)]
pub struct MetricsSource(pub Arc<dyn Fn(bool) -> (String, &'static str) + Send + Sync>);

impl fmt::Debug for MetricsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetricsSource")
    }
}

/// The live page: `html` at `/ui` (one self-contained document: it may load
/// nothing but `/ui/state` and `/ui/events`), `state()` (JSON) at
/// `/ui/state`, and at `/ui/events` an SSE stream of it, one `data:` event
/// at once and then one every `every`, for at most [`LivePage::MAX_VIEWERS`]
/// streams at once (503 beyond).
#[derive(Clone)]
pub struct LivePage {
    html: &'static str,
    state: Arc<dyn Fn() -> String + Send + Sync>,
    every: std::time::Duration,
    viewers: Arc<std::sync::atomic::AtomicUsize>,
}

impl LivePage {
    /// Streams open at once, at most: each costs a state every `every`.
    pub const MAX_VIEWERS: usize = 32;

    /// The page `html`, its state as JSON from `state`, an event every `every`.
    pub fn new(
        html: &'static str,
        every: std::time::Duration,
        state: impl Fn() -> String + Send + Sync + 'static,
    ) -> LivePage {
        LivePage {
            html,
            state: Arc::new(state),
            every,
            viewers: Arc::default(),
        }
    }

    /// `/ui/events`: the state now, then every `every` until the client goes.
    fn events(&self) -> Response<Body> {
        use std::sync::atomic::Ordering;
        if self.viewers.fetch_add(1, Ordering::AcqRel) >= Self::MAX_VIEWERS {
            self.viewers.fetch_sub(1, Ordering::AcqRel);
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("at most {} live pages at once\n", Self::MAX_VIEWERS),
                "text/plain",
            );
        }
        let event = |state: String| Bytes::from(format!("data: {state}\n\n"));
        let first = event((self.state)());
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        let page = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(page.every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = tx.closed() => break,
                }
                if tx.send(event((page.state)())).await.is_err() {
                    break;
                }
            }
            page.viewers.fetch_sub(1, Ordering::AcqRel);
        });
        let mut response = Response::new(Body::stream_owned(
            std::collections::VecDeque::from([first]),
            Some(rx),
        ));
        let h = response.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    /// `/ui`: the page, allowed to reach nothing but this listener.
    fn page(&self) -> Response<Body> {
        let mut response = text(
            StatusCode::OK,
            self.html.to_owned(),
            "text/html; charset=utf-8",
        );
        let h = response.headers_mut();
        h.insert(
            "content-security-policy",
            HeaderValue::from_static(
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; \
                 frame-ancestors 'none'",
            ),
        );
        h.insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

impl fmt::Debug for LivePage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LivePage")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

/// What the admin listener serves.
#[derive(Debug, Clone)]
pub struct AdminConfig {
    /// Where it listens.
    pub bind: SocketAddr,
    /// `/readyz` (one line), and `/healthz` while it serves.
    pub health: HealthProbe,
    /// `/readyz` as JSON, when set.
    pub report: Option<HealthReport>,
    /// `/metrics`; `None`: 404 there.
    pub metrics: Option<MetricsSource>,
    /// `/ui`, `/ui/state`, `/ui/events`; `None`: 404 there.
    pub live: Option<LivePage>,
}

/// A running admin listener; stops when dropped or [`shutdown`](Self::shutdown).
#[derive(Debug)]
pub struct AdminServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
}

impl AdminServer {
    /// Binds `config.bind` and serves until stopped.
    ///
    /// Errors: the address cannot be bound.
    pub async fn bind(config: AdminConfig) -> std::io::Result<AdminServer> {
        let listener = TcpListener::bind(config.bind).await?;
        let addr = listener.local_addr()?;
        tracing::info!(url = %format!("http://{addr}/metrics"), "admin listener");
        let (stop, mut stopped) = watch::channel(false);
        let config = Arc::new(config);
        tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            debug!(error = %e, "admin listener: accept failed");
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                    _ = stopped.changed() => break,
                };
                let config = config.clone();
                let mut conn_stopped = stopped.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<Incoming>| {
                        let config = config.clone();
                        async move { Ok::<_, Infallible>(answer(&config, &req)) }
                    });
                    let conn =
                        http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = conn_stopped.changed() => {}
                    }
                });
            }
        });
        Ok(AdminServer { addr, stop })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops listening; open connections end.
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Whether the `Accept` header prefers OpenMetrics: named with a weight
/// above 0 and no lower than the classic text's (`text/plain`, `*/*`).
fn wants_openmetrics(headers: &http::HeaderMap) -> bool {
    let (mut open, mut text) = (0.0_f32, 0.0_f32);
    let values = headers.get_all(ACCEPT);
    for range in values
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = range.split(';');
        let kind = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match kind.as_str() {
            "application/openmetrics-text" => open = open.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    open > 0.0 && open >= text
}

fn answer(config: &AdminConfig, req: &Request<Incoming>) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut response = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET and HEAD only\n".into(),
            "text/plain",
        );
        response
            .headers_mut()
            .insert(http::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let path = req.uri().path();
    if path.starts_with("/ui") && !host_is_local(req.headers()) {
        // What the page shows (callers, URIs) stays out of reach of a web
        // page that rebinds its own name to this address.
        return text(
            StatusCode::FORBIDDEN,
            "the live page answers only a Host that is an IP address or localhost\n".into(),
            "text/plain",
        );
    }
    match path {
        "/metrics" => match &config.metrics {
            Some(source) => {
                let (body, content_type) = (source.0)(!wants_openmetrics(req.headers()));
                text(StatusCode::OK, body, content_type)
            }
            None => text(
                StatusCode::NOT_FOUND,
                "metrics are off\n".into(),
                "text/plain",
            ),
        },
        "/ui" | "/ui/" | "/ui/state" | "/ui/events" if config.live.is_none() => text(
            StatusCode::NOT_FOUND,
            "the live page is off\n".into(),
            "text/plain",
        ),
        "/ui" | "/ui/" => config.live.as_ref().expect("checked").page(),
        "/ui/state" => {
            let live = config.live.as_ref().expect("checked");
            let mut response = text(StatusCode::OK, (live.state)(), "application/json");
            response
                .headers_mut()
                .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        "/ui/events" => config.live.as_ref().expect("checked").events(),
        path => match super::server::probe_answer(path, &config.health, config.report.as_ref()) {
            Some(response) => response,
            None => text(StatusCode::NOT_FOUND, "not found\n".into(), "text/plain"),
        },
    }
}

/// Whether `Host` names an address, not a name someone's DNS could point
/// here (DNS rebinding): an IP literal (v4, or v6 in brackets), or
/// `localhost`, with or without a port.
fn host_is_local(headers: &http::HeaderMap) -> bool {
    let Some(host) = headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
    else {
        return false;
    };
    if let Some(v6) = host.strip_prefix('[') {
        return v6
            .split_once(']')
            .is_some_and(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok());
    }
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok()
}

fn text(status: StatusCode, body: String, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::full(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_answers_addresses_not_names() {
        let local = |host: &str| {
            let mut h = http::HeaderMap::new();
            h.insert(http::header::HOST, HeaderValue::from_str(host).unwrap());
            host_is_local(&h)
        };
        for ok in [
            "127.0.0.1:9464",
            "10.1.2.3",
            "localhost:9464",
            "LOCALHOST",
            "[::1]:9464",
            "[fe80::1]",
        ] {
            assert!(local(ok), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:9464",
            "127.0.0.1.nip.io",
            "[::1",
            "localhost.evil.com",
        ] {
            assert!(!local(bad), "{bad}");
        }
        assert!(!host_is_local(&http::HeaderMap::new()));
    }

    #[test]
    fn openmetrics_only_when_preferred() {
        let wants = |accept: &str| {
            let mut h = http::HeaderMap::new();
            h.insert(ACCEPT, HeaderValue::from_str(accept).unwrap());
            wants_openmetrics(&h)
        };
        // Prometheus 2.42's own header.
        assert!(wants("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
        assert!(wants("application/openmetrics-text"));
        assert!(!wants("text/plain"));
        assert!(!wants("*/*"));
        assert!(!wants("application/openmetrics-text;q=0, text/plain;q=1"));
        assert!(!wants("application/openmetrics-text;q=0.5, text/plain"));
        assert!(wants(
            "text/plain;q=0.2, application/openmetrics-text;q=0.9"
        ));
        assert!(!wants("application/json"));
        assert!(!wants_openmetrics(&http::HeaderMap::new()));
    }
}
