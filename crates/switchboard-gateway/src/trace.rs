//! Traces: OpenTelemetry spans exported over OTLP (HTTP/protobuf, sent by
//! the `reqwest` client already in the tree). On when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is
//! set (and `OTEL_SDK_DISABLED` is not `true`); the sampler from
//! `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`, the batch from
//! `OTEL_BSP_*`, the service name `switchboard` unless `OTEL_SERVICE_NAME`.
//!
//! A server span per downstream request, named `{mcp.method.name} {target}`,
//! its parent the W3C trace context of the request's `params._meta`
//! (`traceparent`, `tracestate`: the keys 2026-07-28 reserves) or, failing
//! that, of the HTTP request's headers; a client span per upstream request,
//! child of the server span, whose context replaces the request's
//! `_meta.traceparent` / `tracestate` on its way out (a client's other
//! `_meta` members, `baggage` included, go on untouched).
//!
//! This module must not know sessions or upstreams: callers hand it the
//! request and say how it ended.

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use serde_json::value::RawValue;
use switchboard_protocol::jsonrpc::Request;
use switchboard_protocol::types::meta::{TRACEPARENT, TRACESTATE};

use crate::metrics::Outcome;
use crate::raw::RawObject;

static TRACING: OnceLock<Tracing> = OnceLock::new();

/// The process's tracer, once [`init_from_env`] turned traces on.
pub(crate) struct Tracing {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    propagator: TraceContextPropagator,
}

/// The tracer, when traces are on.
#[inline]
pub(crate) fn get() -> Option<&'static Tracing> {
    TRACING.get()
}

/// Why traces could not be turned on ([`init_from_env`]).
#[derive(Debug, thiserror::Error)]
#[error("OTLP trace exporter: {0}")]
pub struct InitError(#[from] opentelemetry_otlp::ExporterBuildError);

/// Turns traces on from the standard `OTEL_*` variables, exporting on
/// `runtime` (where the HTTP requests to the collector run). `Ok(false)`:
/// no endpoint is set (or `OTEL_SDK_DISABLED=true`), traces stay off.
///
/// Errors: [`InitError`], the exporter cannot be built (a bad endpoint).
pub fn init_from_env(runtime: tokio::runtime::Handle) -> Result<bool, InitError> {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    if disabled
        || !(set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    {
        return Ok(false);
    }
    if TRACING.get().is_some() {
        return Ok(true);
    }
    use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(Client {
            http: reqwest::Client::new(),
            runtime,
            failing: Default::default(),
        })
        .build()?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if !set("OTEL_SERVICE_NAME") {
        resource = resource.with_service_name("switchboard");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("switchboard");
    let _ = TRACING.set(Tracing {
        provider,
        tracer,
        propagator: TraceContextPropagator::new(),
    });
    Ok(true)
}

/// Exports what is still buffered and stops; call off the runtime's own
/// thread (the export runs on it), e.g. in `spawn_blocking`.
pub fn shutdown() {
    if let Some(t) = TRACING.get() {
        let _ = t.provider.force_flush();
        let _ = t.provider.shutdown();
    }
}

/// The OTLP exporter's HTTP client: `reqwest`, run on the process's Tokio
/// runtime (the batch processor exports from a thread of its own).
#[derive(Debug)]
struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
    /// Whether the last export failed: a failure is logged when it starts
    /// (a warning) and when it ends, not once per batch.
    failing: std::sync::atomic::AtomicBool,
}

impl Client {
    fn exported(&self, outcome: Result<http::StatusCode, &reqwest::Error>) {
        use std::sync::atomic::Ordering::Relaxed;
        let why = match outcome {
            Ok(status) if status.is_success() => {
                if self.failing.swap(false, Relaxed) {
                    tracing::info!("trace export works again");
                }
                return;
            }
            Ok(status) => format!("the collector answered {status}"),
            Err(e) => e.to_string(),
        };
        if self.failing.swap(true, Relaxed) {
            tracing::debug!(reason = %why, "trace export failed again");
        } else {
            tracing::warn!(reason = %why, "trace export failed: spans are dropped until it works again");
        }
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Client {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let http = self.http.clone();
        let sent = self.runtime.spawn(async move {
            let (parts, body) = request.into_parts();
            let mut out = http
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .timeout(std::time::Duration::from_secs(2));
            out = out.version(http::Version::HTTP_11);
            let response = out.send().await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await?;
            let mut answer = http::Response::new(body);
            *answer.status_mut() = status;
            *answer.headers_mut() = headers;
            Ok::<_, reqwest::Error>(answer)
        });
        let answer = sent.await?;
        self.exported(answer.as_ref().map(|a| a.status()));
        Ok(answer?)
    }
}

/// The trace context members of a `_meta` (or of HTTP headers).
#[derive(Default)]
struct Carrier(HashMap<&'static str, String>);

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().copied().collect()
    }
}

impl Injector for Carrier {
    fn set(&mut self, key: &str, value: String) {
        // An empty tracestate says nothing: not written.
        if value.is_empty() {
            return;
        }
        let key = match key {
            TRACEPARENT => TRACEPARENT,
            TRACESTATE => TRACESTATE,
            _ => return,
        };
        self.0.insert(key, value);
    }
}

/// `_meta`'s `traceparent` and `tracestate` of `params` (parsed only when
/// the text names a `traceparent` at all).
fn meta_carrier(params: Option<&RawValue>) -> Carrier {
    let mut c = Carrier::default();
    let Some(params) = params.filter(|p| p.get().contains("\"traceparent\"")) else {
        return c;
    };
    let meta = RawObject::parse(params.get())
        .ok()
        .and_then(|p| p.get_object("_meta"));
    if let Some(meta) = meta {
        for key in [TRACEPARENT, TRACESTATE] {
            if let Some(v) = meta
                .get(key)
                .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
            {
                c.0.insert(key, v);
            }
        }
    }
    c
}

/// The opening this module gives params whose `_meta` it wrote alone
/// ([`with_context`]), a `traceparent` of [`TRACEPARENT_LEN`] characters next.
const OWN_META: &str = r#"{"_meta":{"traceparent":""#;

/// A version-00 `traceparent`: `00-{32 hex}-{16 hex}-{2 hex}`.
const TRACEPARENT_LEN: usize = 55;

/// `params` with `_meta.traceparent` / `tracestate` those of `cx` (created
/// when absent); every other member as it was. Params with no `_meta` get it
/// written first, without a parse ([`OWN_META`]); a `traceparent` in that
/// place is replaced where it stands; anything else is parsed and written
/// again.
fn with_context(
    params: Option<&RawValue>,
    cx: &Context,
    propagator: &TraceContextPropagator,
) -> Option<Box<RawValue>> {
    let mut carrier = Carrier::default();
    propagator.inject_context(cx, &mut carrier);
    let parent = carrier.0.get(TRACEPARENT)?;
    let text = params.map_or("{}", |p| p.get());
    // Ours, from the server span: the same length, replaced in place.
    // Only `traceparent` in it (ours as this module writes it), and no
    // tracestate to write.
    let alone = |rest: &str| {
        rest.get(TRACEPARENT_LEN..)
            .is_some_and(|r| r.starts_with("\"}"))
    };
    let stateless = !carrier.0.contains_key(TRACESTATE);
    if let (Some(rest), true) = (
        text.strip_prefix(OWN_META),
        parent.len() == TRACEPARENT_LEN && stateless,
    ) {
        if alone(rest) {
            let mut out = String::with_capacity(text.len());
            out.push_str(OWN_META);
            out.push_str(parent);
            out.push_str(&rest[TRACEPARENT_LEN..]);
            return RawValue::from_string(out).ok();
        }
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') && !text.contains("\"_meta\"") {
        let body = trimmed[1..].trim_start();
        let mut out = String::with_capacity(text.len() + 128);
        out.push_str(OWN_META);
        out.push_str(parent);
        out.push('"');
        if let Some(state) = carrier.0.get(TRACESTATE) {
            out.push_str(r#","tracestate":"#);
            out.push_str(&serde_json::to_string(state).ok()?);
        }
        out.push('}');
        if !body.starts_with('}') {
            out.push(',');
        }
        out.push_str(body);
        return RawValue::from_string(out).ok();
    }
    let mut params = match params {
        Some(p) => RawObject::parse(p.get()).ok()?,
        None => RawObject::default(),
    };
    // A `_meta` that is not an object is the caller's mistake: left as is.
    let mut meta = match params.get("_meta") {
        None => RawObject::default(),
        Some(_) => params.get_object("_meta")?,
    };
    // A tracestate goes only with the traceparent it belongs to.
    if !carrier.0.contains_key(TRACESTATE) {
        meta.remove(TRACESTATE);
    }
    for (k, v) in carrier.0 {
        meta.insert(k, serde_json::value::to_raw_value(&v).ok()?);
    }
    params.insert("_meta", meta.to_raw());
    Some(params.to_raw())
}

/// A request's span: a downstream request's (module `downstream::watch`
/// keeps it until the answer) or an upstream call's (module `upstream`).
pub(crate) struct Span {
    /// Boxed: the SDK's span is hundreds of bytes, and the tables that
    /// keep an open request (with metrics on, traced or not) move theirs.
    span: Box<opentelemetry_sdk::trace::Span>,
}

/// What a span names besides its method: the tool or prompt (`target`).
pub(crate) struct Labels<'a> {
    pub method: &'static str,
    pub target: Option<&'a str>,
    pub version: Option<&'a str>,
    pub session: Option<&'a str>,
    pub transport: &'static str,
}

fn attributes(r: &Request, l: &Labels<'_>, kind_tool: bool) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("mcp.method.name", l.method),
        KeyValue::new("jsonrpc.request.id", r.id.to_string()),
        KeyValue::new("network.transport", l.transport),
    ];
    if let Some(t) = l.target {
        let key = if kind_tool {
            "gen_ai.tool.name"
        } else {
            "gen_ai.prompt.name"
        };
        a.push(KeyValue::new(key, t.to_owned()));
    }
    if let Some(v) = l.version {
        a.push(KeyValue::new("mcp.protocol.version", v.to_owned()));
    }
    if let Some(s) = l.session {
        a.push(KeyValue::new("mcp.session.id", s.to_owned()));
    }
    a
}

impl Tracing {
    /// A span of `kind` for `r`, child of `parent`: named by its method
    /// alone at first, given its full name `{method} {target}` and its
    /// attributes only when it is sampled. A sampled span's context then
    /// replaces the one in `r`'s `_meta`; an unsampled one leaves `r` as it
    /// came (a caller's own context, unsampled, goes on as it was sent), so
    /// that the 99 calls in 100 a 1% sampler drops cost next to nothing.
    fn span(
        &self,
        kind: SpanKind,
        r: &mut Request,
        parent: &Context,
        labels: &Labels<'_>,
        tool: bool,
        extra: Option<KeyValue>,
    ) -> Span {
        let mut span = self
            .tracer
            .span_builder(labels.method)
            .with_kind(kind)
            .start_with_context(&self.tracer, parent);
        if span.is_recording() {
            if let Some(t) = labels.target {
                span.update_name(format!("{} {t}", labels.method));
            }
            let mut attrs = attributes(r, labels, tool);
            attrs.extend(extra);
            span.set_attributes(attrs);
        }
        if span.span_context().is_sampled() {
            let cx = Context::new().with_remote_span_context(span.span_context().clone());
            if let Some(params) = with_context(r.params.as_deref(), &cx, &self.propagator) {
                r.params = Some(params);
            }
        }
        Span {
            span: Box::new(span),
        }
    }

    /// The server span of downstream request `r`, its parent from `_meta`
    /// or else `headers` (a `traceparent` header's value and `tracestate`).
    pub(crate) fn server_span(
        &self,
        r: &mut Request,
        headers: Option<(&str, Option<&str>)>,
        labels: &Labels<'_>,
        tool: bool,
    ) -> Span {
        let mut carrier = meta_carrier(r.params.as_deref());
        if !carrier.0.contains_key(TRACEPARENT) {
            if let Some((parent, state)) = headers {
                carrier.0.insert(TRACEPARENT, parent.to_owned());
                if let Some(s) = state {
                    carrier.0.insert(TRACESTATE, s.to_owned());
                }
            }
        }
        let parent = match carrier.0.is_empty() {
            true => Context::new(),
            false => self.propagator.extract(&carrier),
        };
        self.span(SpanKind::Server, r, &parent, labels, tool, None)
    }

    /// The client span of upstream request `r` to `upstream`, child of the
    /// context in its `_meta` (its server span's, or a caller's it did not
    /// sample), which it then replaces when sampled. `None` for a request
    /// with no context: the gateway's own (its lists), or one no sampled
    /// span is above.
    pub(crate) fn client_span(
        &self,
        r: &mut Request,
        upstream: &str,
        labels: &Labels<'_>,
        tool: bool,
    ) -> Option<Span> {
        let own = r
            .params
            .as_deref()
            .and_then(|p| p.get().strip_prefix(OWN_META))
            // Alone in its `_meta` (else a tracestate may be there too).
            .filter(|rest| {
                rest.get(TRACEPARENT_LEN..)
                    .is_some_and(|r| r.starts_with("\"}"))
            })
            .and_then(|rest| rest.get(..TRACEPARENT_LEN));
        let carrier = match own {
            Some(parent) => {
                let mut c = Carrier::default();
                c.0.insert(TRACEPARENT, parent.to_owned());
                c
            }
            None => meta_carrier(r.params.as_deref()),
        };
        if carrier.0.is_empty() {
            return None;
        }
        let parent = self.propagator.extract(&carrier);
        let address = KeyValue::new("server.address", upstream.to_owned());
        Some(self.span(SpanKind::Client, r, &parent, labels, tool, Some(address)))
    }
}

impl Span {
    /// Its trace id (hex), for log lines, when it is sampled.
    pub(crate) fn trace_id(&self) -> Option<String> {
        let cx = self.span.span_context();
        cx.is_sampled().then(|| cx.trace_id().to_string())
    }

    /// Ends it: `error.type` and an error status unless `outcome` is a result;
    /// `mcp.protocol.version` when `version` is given (an `initialize`'s,
    /// agreed only by its answer).
    pub(crate) fn end(mut self, outcome: Outcome, version: Option<&'static str>) {
        if let Some(v) = version {
            self.span
                .set_attribute(KeyValue::new("mcp.protocol.version", v));
        }
        let error = match outcome {
            Outcome::Ok => None,
            Outcome::Code(c) => Some(c.to_string()),
            Outcome::ToolError => Some("tool_error".to_owned()),
            Outcome::OtherCode => Some(crate::metrics::OTHER.to_owned()),
            Outcome::Cancelled => Some("cancelled".to_owned()),
        };
        if let Some(e) = error {
            self.span
                .set_attribute(KeyValue::new("error.type", e.clone()));
            self.span.set_status(Status::error(e));
        }
        self.span.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

    fn cx(span: u64) -> Context {
        let sc = SpanContext::new(
            TraceId::from(0x0af7651916cd43dd8448eb211c80319c_u128),
            SpanId::from(span),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        );
        Context::new().with_remote_span_context(sc)
    }

    fn meta_of(params: &RawValue) -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(params.get()).unwrap()
    }

    #[test]
    fn the_context_goes_into_meta_and_nothing_else_changes() {
        let p = TraceContextPropagator::new();
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        let parent = |id: u64| format!("00-0af7651916cd43dd8448eb211c80319c-{id:016x}-01");
        // No _meta: written first, the rest as it was.
        for (params, rest) in [
            (
                Some(raw(r#"{"name":"echo","arguments":{"_x":1}}"#)),
                r#","name":"echo","arguments":{"_x":1}}"#,
            ),
            (Some(raw("{ }")), "}"),
            (None, "}"),
        ] {
            let out = with_context(params.as_deref(), &cx(1), &p).unwrap();
            assert_eq!(
                out.get(),
                format!(r#"{{"_meta":{{"traceparent":"{}"}}{rest}"#, parent(1))
            );
        }
        // Ours again (the client span's turn): replaced where it stands.
        let first = with_context(Some(&raw(r#"{"name":"e"}"#)), &cx(1), &p).unwrap();
        let second = with_context(Some(&first), &cx(2), &p).unwrap();
        assert_eq!(
            second.get(),
            format!(
                r#"{{"_meta":{{"traceparent":"{}"}},"name":"e"}}"#,
                parent(2)
            )
        );
        // A client's _meta: its other members, its tracestate included, kept.
        let client = raw(
            r#"{"name":"e","_meta":{"progressToken":7,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","example.com/k":"v"}}"#,
        );
        let out = meta_of(&with_context(Some(&client), &cx(3), &p).unwrap());
        assert_eq!(out["_meta"]["traceparent"], parent(3));
        assert_eq!(out["_meta"]["progressToken"], 7);
        assert_eq!(out["_meta"]["example.com/k"], "v");
        assert_eq!(out["name"], "e");
        // "_meta" only inside the arguments: parsed, and still right.
        let nested = raw(r#"{"name":"e","arguments":{"_meta":1}}"#);
        let out = meta_of(&with_context(Some(&nested), &cx(4), &p).unwrap());
        assert_eq!(out["_meta"]["traceparent"], parent(4));
        assert_eq!(out["arguments"]["_meta"], 1);
    }

    #[test]
    fn a_tracestate_goes_only_with_its_traceparent_and_a_bad_meta_stays() {
        let p = TraceContextPropagator::new();
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        // An invalid traceparent: a new root, and the caller's tracestate,
        // which belonged to it, not sent on.
        let bad = raw(r#"{"_meta":{"traceparent":"zzz","tracestate":"k=v","x":1},"name":"e"}"#);
        let out = meta_of(&with_context(Some(&bad), &cx(5), &p).unwrap());
        assert!(out["_meta"].get("tracestate").is_none(), "{out}");
        assert_eq!(out["_meta"]["x"], 1);
        // Our own shape followed by another member: parsed, not patched.
        let own = raw(
            r#"{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-0000000000000001-01","tracestate":"k=v"},"name":"e"}"#,
        );
        let out = meta_of(&with_context(Some(&own), &cx(6), &p).unwrap());
        assert!(out["_meta"].get("tracestate").is_none(), "{out}");
        // A _meta that is not an object: the request is left as it came.
        let odd = raw(r#"{"_meta":"text","name":"e"}"#);
        assert!(with_context(Some(&odd), &cx(7), &p).is_none());
    }

    #[test]
    fn a_parent_is_read_from_meta_only_when_named() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert!(meta_carrier(Some(&raw(r#"{"name":"e"}"#))).0.is_empty());
        let c = meta_carrier(Some(&raw(
            r#"{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=b"}}"#,
        )));
        assert_eq!(c.get("tracestate"), Some("a=b"));
        assert!(c.get("traceparent").is_some());
        // Inside the arguments, it is not the request's.
        let c = meta_carrier(Some(&raw(r#"{"arguments":{"_meta":{"traceparent":"x"}}}"#)));
        assert!(c.0.is_empty());
    }
}
