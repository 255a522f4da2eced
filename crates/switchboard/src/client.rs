//! The MCP client: [`Client::connect`] runs the legacy handshake over any transport,
//! then offers typed calls for every client→server method and answers the server's
//! requests (sampling, elicitation, roots) with the handlers set in [`ClientOptions`].
//!
//! ```text
//! Client::connect(transport, options)
//!   --> initialize{protocolVersion: newest legacy in options.supported, capabilities, clientInfo}
//!   <-- result{protocolVersion, capabilities, serverInfo, instructions?}
//!       accepted if that version is in options.supported, else Err and disconnect
//!   --> notifications/initialized
//! ```
//!
//! Rules kept here (spec notes §3, §4, §7):
//! - the client's capabilities are derived from which handlers are set: `sampling{}`
//!   with a sampling handler, `elicitation{}` (form) with an elicitation handler,
//!   `roots{}` with a roots handler; nothing is declared that cannot be answered;
//! - every request goes through the lifecycle's `check_send_request` first: a method
//!   whose server capability was not declared fails locally
//!   ([`Error::is_local_refusal`]) and nothing is sent;
//! - server→client requests go through the lifecycle's `recv_request`: an undeclared
//!   capability (no handler) is answered -32601;
//! - a tool's own failure (`isError: true`) is an `Ok(CallToolResult)`; only a
//!   JSON-RPC error is an `Err`;
//! - listings follow `nextCursor` until it is absent, at most
//!   [`ClientOptions::max_list_pages`] pages ([`Error::is_limit`] beyond).
//!
//! **Modern (2026-07-28) is not done yet.** Where it goes: [`Client::connect`] would
//! probe with `server/discover` first (spec §6, "stdio client") and keep an era enum
//! (`Legacy(ClientLifecycle)` / `Modern{version, discover result}`) where
//! `lifecycle` is now; `Client::call` is the one place every request is checked, so it
//! is also where a modern request would get its `_meta` (`modern_request_meta`) and
//! where `input_required` results would be answered and retried (MRTR, §5.5) with the
//! same sampling/elicitation/roots handlers.
//!
//! This module must not know about bytes, framing or processes (the transport) nor
//! about ids, deadlines and routing (the peer).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{ErrorObject, Id, Notification, Request, Response};
use switchboard_protocol::lifecycle::{ClientLifecycle, LegacySession, LifecycleError};
use switchboard_protocol::types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, CompleteRequestParams,
    CompleteResult, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, GetPromptRequestParams, GetPromptResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListRootsResult,
    ListToolsResult, LoggingLevel, PaginatedRequestParams, Prompt, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, RootsCapability, SamplingCapability,
    ServerCapabilities, ServerNotification, ServerRequest, SetLevelRequestParams,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::Transport;

use crate::error::Error;
use crate::peer::{
    self, method_not_found, Handler, HandlerContext, HandlerFuture, Peer, PeerConfig,
    RequestOptions,
};

/// Options of one call: timeout, progress callback, cancellation (the peer's
/// [`RequestOptions`]).
pub type CallOptions = RequestOptions;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Answers `sampling/createMessage` (spec §7 "Sampling"). An `Err` is sent as the
/// JSON-RPC error.
pub type SamplingHandler = Arc<
    dyn Fn(
            CreateMessageRequestParams,
            HandlerContext,
        ) -> BoxFuture<Result<CreateMessageResult, ErrorObject>>
        + Send
        + Sync,
>;

/// Answers `elicitation/create` (spec §7 "Elicitation", 2025-06-18+).
pub type ElicitationHandler = Arc<
    dyn Fn(ElicitRequestParams, HandlerContext) -> BoxFuture<Result<ElicitResult, ErrorObject>>
        + Send
        + Sync,
>;

/// Answers `roots/list` (spec §7 "Roots").
pub type RootsHandler =
    Arc<dyn Fn(HandlerContext) -> BoxFuture<Result<ListRootsResult, ErrorObject>> + Send + Sync>;

/// Receives the server's notifications other than progress and cancellation
/// (`notifications/tools/list_changed`, `notifications/resources/updated`,
/// `notifications/message`, ...), on the driver task: return quickly.
pub type NotificationCallback = Arc<dyn Fn(ServerNotification) + Send + Sync>;

/// How a [`Client`] connects and behaves. Every field documents its default.
#[derive(Clone)]
pub struct ClientOptions {
    /// Our `clientInfo`.
    pub client_info: Implementation,
    /// The revisions we speak. Default: all; `initialize` offers the newest legacy
    /// one, and the server's answer is accepted when it is a legacy revision in here.
    pub supported: Supported,
    /// The timeout of a call that sets none. Default 60 s.
    pub default_timeout: Duration,
    /// The hard maximum of any call, progress included. Default 10 min.
    pub max_timeout: Duration,
    /// The most calls awaiting an answer at once. Default 1024.
    pub max_pending: usize,
    /// The most server requests handled at once. Default 16.
    pub max_concurrent_handlers: usize,
    /// The most pages one listing follows. Default 100.
    pub max_list_pages: usize,
    /// Answers `sampling/createMessage`; declares `sampling{}`. Default none.
    pub sampling: Option<SamplingHandler>,
    /// Answers `elicitation/create`; declares `elicitation{}` (form). Default none.
    pub elicitation: Option<ElicitationHandler>,
    /// Answers `roots/list`; declares `roots{}`. Default none.
    pub roots: Option<RootsHandler>,
    /// Receives the server's notifications. Default none (dropped).
    pub on_notification: Option<NotificationCallback>,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("client_info", &self.client_info)
            .field("supported", &self.supported)
            .field("default_timeout", &self.default_timeout)
            .field("max_timeout", &self.max_timeout)
            .field("max_pending", &self.max_pending)
            .field("max_concurrent_handlers", &self.max_concurrent_handlers)
            .field("max_list_pages", &self.max_list_pages)
            .field("capabilities", &self.capabilities())
            .finish()
    }
}

impl ClientOptions {
    /// Defaults, as `client_info`.
    pub fn new(client_info: Implementation) -> Self {
        ClientOptions {
            client_info,
            supported: Supported::default(),
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            max_pending: 1024,
            max_concurrent_handlers: 16,
            max_list_pages: 100,
            sampling: None,
            elicitation: None,
            roots: None,
            on_notification: None,
        }
    }

    /// Sets the sampling handler.
    pub fn with_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageRequestParams, HandlerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p, cx| Box::pin(f(p, cx))));
        self
    }

    /// Sets the elicitation handler.
    pub fn with_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitRequestParams, HandlerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p, cx| Box::pin(f(p, cx))));
        self
    }

    /// Sets the roots handler.
    pub fn with_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(HandlerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, ErrorObject>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move |cx| Box::pin(f(cx))));
        self
    }

    /// Sets the notification callback.
    pub fn with_notifications(
        mut self,
        f: impl Fn(ServerNotification) + Send + Sync + 'static,
    ) -> Self {
        self.on_notification = Some(Arc::new(f));
        self
    }

    /// The capabilities `initialize` declares, derived from the handlers set.
    pub fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: self
                .sampling
                .as_ref()
                .map(|_| SamplingCapability::default()),
            elicitation: self
                .elicitation
                .as_ref()
                .map(|_| ElicitationCapability::default()),
            roots: self.roots.as_ref().map(|_| RootsCapability::default()),
            ..Default::default()
        }
    }
}

/// A connected MCP client. Cloneable (clones share the session). Dropping the last
/// clone closes our side of the transport (see [`crate::peer`]).
#[derive(Clone)]
pub struct Client {
    peer: Peer,
    lifecycle: Arc<Mutex<ClientLifecycle>>,
    session: Arc<LegacySession>,
    max_list_pages: usize,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server_info", &self.session.server_info)
            .field("protocol_version", &self.session.version)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn to_params<P: Serialize>(p: &P) -> Result<Option<Box<RawValue>>, Error> {
    serde_json::value::to_raw_value(p)
        .map(Some)
        .map_err(Error::decode)
}

impl Client {
    /// Connects over `transport`: spawns the peer's driver on the current Tokio
    /// runtime and performs the legacy handshake (spec §3).
    ///
    /// Errors: [`Error::is_local_refusal`] when the server answered a version not in
    /// `options.supported` (or an unreadable result); [`Error::is_protocol`] when it
    /// answered `initialize` with an error; [`Error::is_timeout`] /
    /// [`Error::is_closed`]. On error our side of the transport is closed (the spec's
    /// "SHOULD disconnect").
    ///
    /// Panics outside a Tokio runtime.
    pub async fn connect(transport: Transport, options: ClientOptions) -> Result<Client, Error> {
        let lifecycle = Arc::new(Mutex::new(ClientLifecycle::new(
            options.supported.clone(),
            options.capabilities(),
            options.client_info.clone(),
        )));
        let handler = Arc::new(ClientHandler {
            lifecycle: lifecycle.clone(),
            options: options.clone(),
        });
        let config = PeerConfig {
            name: options.client_info.name.clone(),
            default_timeout: options.default_timeout,
            max_timeout: options.max_timeout,
            max_pending: options.max_pending,
            max_concurrent_handlers: options.max_concurrent_handlers,
        };
        let (peer, driver) = peer::connect(transport, config, handler);
        tokio::spawn(driver.run());

        let mut init_id: Option<Id> = None;
        let answer = peer
            .request_with("initialize", RequestOptions::default(), false, |id| {
                let request = lock(&lifecycle)
                    .initialize_request(id.clone())
                    .map_err(|e| Error::lifecycle(e).with_method("initialize"))?;
                init_id = Some(id);
                Ok(request.params)
            })
            .await;
        let result = match answer {
            Ok(result) => result,
            Err(e) => {
                let mut lc = lock(&lifecycle);
                if !lc.recv_error_response(init_id.as_ref()) {
                    lc.close();
                }
                tracing::warn!(error = %e, "initialize failed; disconnecting");
                return Err(e);
            }
        };
        let id = init_id.expect("the id is set before initialize is sent");
        let (session, initialized) = {
            let mut lc = lock(&lifecycle);
            lc.recv_response(&Response { id, result })
                .map_err(|e| Error::lifecycle(e).with_method("initialize"))?;
            let session = lc
                .session()
                .cloned()
                .expect("an accepted answer gives a session");
            let note = lc
                .initialized_notification()
                .map_err(|e| Error::lifecycle(e).with_method("initialize"))?;
            (session, note)
        };
        // Batches exist only in 2025-03-26; set before `initialized` (see Sender).
        peer.set_batching(session.version.batching());
        peer.notify(initialized).await?;
        tracing::info!(
            server = %session.server_info.name,
            version = %session.version,
            "connected"
        );
        Ok(Client {
            peer,
            lifecycle,
            session: Arc::new(session),
            max_list_pages: options.max_list_pages,
        })
    }

    /// The server's `serverInfo`.
    pub fn server_info(&self) -> &Implementation {
        &self.session.server_info
    }

    /// The server's declared capabilities.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.session.server_capabilities
    }

    /// The negotiated revision.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.session.version
    }

    /// The server's `instructions`, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.session.instructions.as_deref()
    }

    /// The underlying peer (for raw requests and notifications, bypassing the
    /// lifecycle's checks: use with care).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Sends any request after the lifecycle's check, and returns the raw result.
    ///
    /// Errors: [`Error::is_local_refusal`] (nothing sent) when the method needs a
    /// server capability that was not declared; [`Error::is_closed`] once the session
    /// is closed; otherwise as [`Peer::request`].
    pub async fn request(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        let check = lock(&self.lifecycle).check_send_request(method, params.as_deref());
        match check {
            Ok(()) => {}
            Err(LifecycleError::Closed) => {
                let reason = self
                    .peer
                    .closed_reason()
                    .unwrap_or_else(|| "the session is closed".to_owned());
                return Err(Error::closed(reason).with_method(method));
            }
            Err(e) => return Err(Error::lifecycle(e).with_method(method)),
        }
        self.peer.request(method, params, options).await
    }

    async fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: CallOptions,
    ) -> Result<R, Error> {
        let raw = self.request(method, params, options).await?;
        serde_json::from_str(raw.get()).map_err(|e| Error::decode(e).with_method(method))
    }

    async fn list_all<R: DeserializeOwned, T>(
        &self,
        method: &str,
        split: impl Fn(R) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.max_list_pages {
            let params = match cursor.take() {
                None => None,
                Some(c) => to_params(&PaginatedRequestParams {
                    cursor: Some(c),
                    ..Default::default()
                })?,
            };
            let (page, next) = split(self.call(method, params, CallOptions::default()).await?);
            items.extend(page);
            match next {
                Some(c) => cursor = Some(c),
                None => return Ok(items),
            }
        }
        Err(Error::limit(format!("more than {} pages", self.max_list_pages)).with_method(method))
    }

    /// `ping` (legacy revisions; either direction): Ok when the server answers.
    pub async fn ping(&self) -> Result<(), Error> {
        self.call::<Value>("ping", None, CallOptions::default())
            .await
            .map(|_| ())
    }

    /// `tools/list`, every page (needs the server's `tools`).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_all("tools/list", |r: ListToolsResult| (r.tools, r.next_cursor))
            .await
    }

    /// One page of `tools/list`, from `cursor` (`None`: the first).
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<ListToolsResult, Error> {
        let params = match cursor {
            None => None,
            Some(c) => to_params(&PaginatedRequestParams {
                cursor: Some(c),
                ..Default::default()
            })?,
        };
        self.call("tools/list", params, CallOptions::default())
            .await
    }

    /// `tools/call` with `arguments` (a JSON object, or `null` for none) and default
    /// options. A tool's own failure is `Ok` with `is_error()`; a JSON-RPC error
    /// (unknown tool: -32602) is `Err`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, CallOptions::default())
            .await
    }

    /// `tools/call` with a timeout, a progress callback or a cancellation token.
    ///
    /// Errors: as [`call_tool`](Self::call_tool); [`Error::is_decode`] when
    /// `arguments` is neither an object nor `null` (nothing sent).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        let arguments: Option<Map<String, Value>> = match arguments {
            Value::Null => None,
            Value::Object(m) => Some(m),
            _ => {
                return Err(Error::decode(serde::de::Error::custom(
                    "tool arguments must be a JSON object",
                ))
                .with_method("tools/call"))
            }
        };
        let params = to_params(&CallToolRequestParams::new(name, arguments))?;
        self.call("tools/call", params, options).await
    }

    /// `resources/list`, every page (needs `resources`).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list_all("resources/list", |r: ListResourcesResult| {
            (r.resources, r.next_cursor)
        })
        .await
    }

    /// `resources/templates/list`, every page (needs `resources`).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_all(
            "resources/templates/list",
            |r: ListResourceTemplatesResult| (r.resource_templates, r.next_cursor),
        )
        .await
    }

    /// `resources/read{uri}` (needs `resources`). Not found is `Err` with -32002
    /// (legacy) or -32602.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        let params = to_params(&ReadResourceRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        })?;
        self.call("resources/read", params, CallOptions::default())
            .await
    }

    /// `resources/subscribe{uri}` (needs `resources.subscribe`); updates then arrive as
    /// `notifications/resources/updated` at the notification callback.
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        let params = to_params(&SubscribeRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        })?;
        self.call::<Value>("resources/subscribe", params, CallOptions::default())
            .await
            .map(|_| ())
    }

    /// `resources/unsubscribe{uri}` (needs `resources.subscribe`).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        let params = to_params(&UnsubscribeRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        })?;
        self.call::<Value>("resources/unsubscribe", params, CallOptions::default())
            .await
            .map(|_| ())
    }

    /// `prompts/list`, every page (needs `prompts`).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list_all("prompts/list", |r: ListPromptsResult| {
            (r.prompts, r.next_cursor)
        })
        .await
    }

    /// `prompts/get{name, arguments?}` (needs `prompts`).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, Error> {
        let params = to_params(&GetPromptRequestParams {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        })?;
        self.call("prompts/get", params, CallOptions::default())
            .await
    }

    /// `completion/complete` (needs `completions`, 2025-03-26+).
    pub async fn complete(&self, params: &CompleteRequestParams) -> Result<CompleteResult, Error> {
        let params = to_params(params)?;
        self.call("completion/complete", params, CallOptions::default())
            .await
    }

    /// `logging/setLevel{level}` (needs `logging`).
    pub async fn set_level(&self, level: LoggingLevel) -> Result<(), Error> {
        let params = to_params(&SetLevelRequestParams {
            level,
            meta: None,
            extra: Default::default(),
        })?;
        self.call::<Value>("logging/setLevel", params, CallOptions::default())
            .await
            .map(|_| ())
    }
}

/// The client's [`Handler`]: the lifecycle's checks, then the configured handlers.
struct ClientHandler {
    lifecycle: Arc<Mutex<ClientLifecycle>>,
    options: ClientOptions,
}

fn encode_result<T: Serialize>(r: Result<T, ErrorObject>) -> Result<Box<RawValue>, ErrorObject> {
    let v = r?;
    serde_json::value::to_raw_value(&v).map_err(|e| {
        ErrorObject::new(
            switchboard_protocol::jsonrpc::code::INTERNAL_ERROR,
            format!("result did not encode: {e}"),
        )
    })
}

impl Handler for ClientHandler {
    fn request(&self, request: Request, cx: HandlerContext) -> HandlerFuture {
        if let Err(e) = lock(&self.lifecycle).recv_request(&request) {
            tracing::debug!(method = %request.method, error = %e, "server request refused");
            let error = e.to_error_object();
            return Box::pin(async move { Err(error) });
        }
        let decoded = match ServerRequest::from_request(&request) {
            Ok(d) => d,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let not_found = || -> HandlerFuture {
            let e = method_not_found(&request.method);
            Box::pin(async move { Err(e) })
        };
        match decoded {
            ServerRequest::Ping(_) => {
                Box::pin(async { Ok(RawValue::from_string("{}".to_owned()).expect("valid JSON")) })
            }
            ServerRequest::CreateMessage(p) => match &self.options.sampling {
                Some(h) => {
                    let fut = h(*p, cx);
                    Box::pin(async move { encode_result(fut.await) })
                }
                None => not_found(),
            },
            ServerRequest::Elicit(p) => match &self.options.elicitation {
                Some(h) => {
                    let fut = h(*p, cx);
                    Box::pin(async move { encode_result(fut.await) })
                }
                None => not_found(),
            },
            ServerRequest::ListRoots(_) => match &self.options.roots {
                Some(h) => {
                    let fut = h(cx);
                    Box::pin(async move { encode_result(fut.await) })
                }
                None => not_found(),
            },
            _ => not_found(),
        }
    }

    fn notification(&self, notification: Notification) {
        if let Err(e) = lock(&self.lifecycle).recv_notification(&notification) {
            tracing::debug!(method = %notification.method, error = %e, "server notification refused; dropped");
            return;
        }
        match ServerNotification::from_notification(&notification) {
            Ok(n) => match &self.options.on_notification {
                Some(cb) => cb(n),
                None => {
                    tracing::debug!(method = %notification.method, "server notification (no callback)")
                }
            },
            Err(e) => {
                tracing::debug!(method = %notification.method, error = %e.message, "malformed server notification; dropped")
            }
        }
    }

    fn closed(&self, reason: &str) {
        tracing::debug!(%reason, "session closed");
        lock(&self.lifecycle).close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_follow_the_handlers() {
        let o = ClientOptions::new(Implementation::new("c", "1"));
        assert_eq!(
            serde_json::to_value(o.capabilities()).unwrap(),
            serde_json::json!({})
        );
        let o = o
            .with_sampling(|_, _| async { Err(ErrorObject::new(-1, "x")) })
            .with_roots(|_| async {
                Ok(ListRootsResult {
                    roots: vec![],
                    meta: None,
                    extra: Default::default(),
                })
            });
        assert_eq!(
            serde_json::to_value(o.capabilities()).unwrap(),
            serde_json::json!({"sampling": {}, "roots": {}})
        );
    }
}
