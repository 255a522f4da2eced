//! [`Client::connect_url`]: an MCP server at an HTTP URL, whatever its era, by the
//! fallback rules of MCP 2026-07-28 (spec notes §6, "HTTP client"):
//!
//! ```text
//! cached Legacy for the origin? -> initialize first (on failure: forget, re-probe)
//! POST server/discover (2026-07-28 headers and _meta)
//!   2xx result                       -> modern
//!   -32022 {supported} / -32021 / -32020 (400) -> modern: switch version, never fall back
//!   anything else (empty body, other error, timeout)
//!     -> POST initialize (Streamable HTTP, 2025-03-26 to 2025-11-25)
//!          ok                        -> legacy
//!          HTTP 400 / 404 / 405      -> GET the URL: legacy HTTP+SSE (2024-11-05)
//! ```
//!
//! The outcome is remembered per origin (scheme, host, port) for the life of the
//! process ([`cached_era`]); a later failure of the remembered path forgets it and
//! probes again. A `server/discover` answered -32601 is read as "not a modern
//! server" (every 2026-07-28 server MUST implement it), so it falls back.
//!
//! This module must not know about bytes or SSE framing (the transports) nor about
//! the lifecycle's rules (the client core).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::client::{self as http_client, HttpClientHandle};
use switchboard_transport::http::sse_client::{self, SseClientConfig};

pub use switchboard_transport::http::client::HttpClientConfig;

use super::{Client, ClientOptions, EraPolicy, Probe, Started};
use crate::error::Error;

/// What [`Client::connect_url`] found at an origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachedEra {
    /// 2026-07-28 over Streamable HTTP, at this revision.
    Modern(ProtocolVersion),
    /// `initialize` over Streamable HTTP (2025-03-26 to 2025-11-25).
    Legacy,
    /// The legacy HTTP+SSE transport (2024-11-05).
    LegacySse,
}

fn cache() -> &'static Mutex<HashMap<String, CachedEra>> {
    static CACHE: OnceLock<Mutex<HashMap<String, CachedEra>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The origin of `url` (`scheme://host:port`, the scheme's default port when none
/// is written), or `None` for a URL that is not absolute http(s).
pub fn origin_of(url: &str) -> Option<String> {
    let uri: ::http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    });
    Some(format!("{scheme}://{host}:{port}"))
}

/// What [`Client::connect_url`] remembers for the origin of `url`, if anything.
pub fn cached_era(url: &str) -> Option<CachedEra> {
    let origin = origin_of(url)?;
    lock(cache()).get(&origin).copied()
}

/// Forgets every remembered outcome (the next [`Client::connect_url`] probes).
pub fn connect_url_cache_clear() {
    lock(cache()).clear();
}

fn remember(url: &str, era: CachedEra) {
    if let Some(origin) = origin_of(url) {
        tracing::debug!(%origin, ?era, "era remembered");
        lock(cache()).insert(origin, era);
    }
}

fn forget(url: &str) {
    if let Some(origin) = origin_of(url) {
        lock(cache()).remove(&origin);
    }
}

fn start(config: &HttpClientConfig, options: &ClientOptions) -> Result<Started, Error> {
    let (transport, handle): (_, HttpClientHandle) = http_client::connect(config.clone())
        .map_err(|e| Error::closed(format!("cannot start the HTTP client: {e}")))?;
    Ok(Started::new(transport, options.clone(), Some(handle)))
}

/// Whether a failed `initialize` POST calls for the HTTP+SSE fallback (§5.3: 400,
/// 404 or 405; R2/R3 allowed any 4xx, which 400/404/405 covers in practice).
fn wants_sse_fallback(handle: Option<&HttpClientHandle>, e: &Error) -> bool {
    if !e.is_protocol() && !e.is_transport() {
        return false;
    }
    matches!(
        handle.and_then(HttpClientHandle::last_error_status),
        Some(400 | 404 | 405)
    )
}

impl Client {
    /// Connects to the MCP server at `url` (e.g. `http://127.0.0.1:8080/mcp`) over
    /// HTTP, finding its era by the rules of spec notes §6 (module docs): 2026-07-28
    /// first, then `initialize` over Streamable HTTP, then the legacy HTTP+SSE
    /// transport. `config.url` is replaced by `url`; its other fields (extra
    /// headers such as `Authorization`, the standalone GET stream, resumption
    /// limits) apply to the Streamable HTTP transport, and its `headers` and
    /// `connect_timeout` to the HTTP+SSE fallback too.
    ///
    /// [`ClientOptions::era`] narrows the search: `Legacy` skips the 2026-07-28
    /// probe, `Modern` never falls back; the default (`None`) is
    /// [`EraPolicy::Auto`], and so is `LegacyFirst` here (the HTTP rules already
    /// cost a legacy server one extra POST once per origin). The outcome is
    /// cached per origin ([`cached_era`]).
    ///
    /// Errors: [`Error::is_closed`] when the URL is not an absolute http(s) URL;
    /// [`Error::is_transport`] when nothing answers (e.g. the connection is
    /// refused: code -32000, no `data`); [`Error::is_protocol`] with the server's
    /// error, or [`Error::is_transport`] for an HTTP error without a JSON-RPC body
    /// (code -32000 with `data.httpStatus`), when every step failed; otherwise as
    /// [`Client::connect`].
    ///
    /// Panics outside a Tokio runtime.
    pub async fn connect_url(
        url: &str,
        options: ClientOptions,
        config: HttpClientConfig,
    ) -> Result<Client, Error> {
        let mut config = config;
        config.url = url.to_owned();
        let policy = match options.era.unwrap_or(EraPolicy::Auto) {
            EraPolicy::LegacyFirst => EraPolicy::Auto,
            other => other,
        };
        if policy == EraPolicy::Auto {
            match cached_era(url) {
                Some(CachedEra::Legacy) => {
                    let started = start(&config, &options)?;
                    match started.legacy().await {
                        Ok(c) => return Ok(c),
                        Err(e) => {
                            tracing::info!(error = %e, "the remembered era failed; probing again");
                            forget(url);
                        }
                    }
                }
                Some(CachedEra::LegacySse) => match connect_sse(url, &config, &options).await {
                    Ok(c) => return Ok(c),
                    Err(e) => {
                        tracing::info!(error = %e, "the remembered era failed; probing again");
                        forget(url);
                    }
                },
                Some(CachedEra::Modern(_)) | None => {}
            }
        }
        let started = start(&config, &options)?;
        let handle = started.http.clone();
        let legacy_result = match policy {
            EraPolicy::Modern => {
                let c = started.run(EraPolicy::Modern).await?;
                remember(url, CachedEra::Modern(c.protocol_version()));
                return Ok(c);
            }
            EraPolicy::Legacy => started.legacy().await,
            EraPolicy::Auto | EraPolicy::LegacyFirst => {
                match started.probe(options.probe_timeout).await {
                    Ok(Probe::Modern(v, d)) => {
                        remember(url, CachedEra::Modern(v));
                        return Ok(started.modern(v, d));
                    }
                    Ok(Probe::Legacy(why)) => {
                        tracing::debug!(error = %why, "not a 2026-07-28 server; trying initialize");
                        started.legacy().await
                    }
                    Err(e) => {
                        forget(url);
                        return Err(e);
                    }
                }
            }
        };
        match legacy_result {
            Ok(c) => {
                remember(url, CachedEra::Legacy);
                Ok(c)
            }
            Err(e) if wants_sse_fallback(handle.as_ref(), &e) || e.is_closed() => {
                tracing::debug!(error = %e, "initialize failed; trying the HTTP+SSE transport");
                match connect_sse(url, &config, &options).await {
                    Ok(c) => {
                        remember(url, CachedEra::LegacySse);
                        Ok(c)
                    }
                    Err(sse) => {
                        tracing::debug!(error = %sse, "HTTP+SSE failed too");
                        forget(url);
                        Err(e)
                    }
                }
            }
            Err(e) => {
                forget(url);
                Err(e)
            }
        }
    }
}

/// The legacy HTTP+SSE transport (2024-11-05) at `url`, then the legacy handshake.
async fn connect_sse(
    url: &str,
    config: &HttpClientConfig,
    options: &ClientOptions,
) -> Result<Client, Error> {
    let mut sse = SseClientConfig::default();
    for (name, value) in &config.headers {
        if let (Ok(n), Ok(v)) = (
            ::http::header::HeaderName::from_bytes(name.as_bytes()),
            ::http::header::HeaderValue::from_str(value),
        ) {
            sse.headers.append(n, v);
        }
    }
    sse.connect_timeout = config.connect_timeout;
    sse.transport = config.transport.clone();
    let transport = sse_client::connect(url, sse)
        .await
        .map_err(|e| Error::closed(format!("HTTP+SSE connection failed: {e}")))?;
    let started = Started::new(transport, options.clone(), None);
    let client = started.legacy().await?;
    debug_assert_eq!(client.era(), Era::Legacy);
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_ignore_the_path_and_fill_in_the_port() {
        assert_eq!(
            origin_of("http://127.0.0.1:8080/mcp").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            origin_of("HTTP://Example.com/a/b").as_deref(),
            Some("http://example.com:80")
        );
        assert_eq!(
            origin_of("https://example.com/").as_deref(),
            Some("https://example.com:443")
        );
        assert_eq!(origin_of("/mcp"), None);
        assert_eq!(origin_of("ftp://x/"), None);
    }
}
