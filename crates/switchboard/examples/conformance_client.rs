//! The conformance **client**: an MCP client built with the `switchboard` library
//! that the official conformance suite (`@modelcontextprotocol/conformance`, client
//! mode) runs once per client scenario.
//!
//! ```sh
//! cargo build -p switchboard --example conformance_client
//! MCP_CONFORMANCE_SCENARIO=tools_call target/debug/examples/conformance_client http://localhost:PORT/mcp
//! ```
//!
//! `scripts/conformance-client` drives it through both suites (2025-11-25 with the
//! stable suite, 2026-07-28 with the pre-release). Inputs, as the suite sets them:
//!
//! - `argv[1]`: the URL of the scenario's server;
//! - `MCP_CONFORMANCE_SCENARIO`: the scenario's name (`conformance list --client`);
//! - `MCP_CONFORMANCE_PROTOCOL_VERSION` (pre-release only; absent means
//!   2025-11-25): the revision to speak. A 2026-07-28 value forces the modern era
//!   (`server/discover`, no `initialize`), any other the legacy one (`initialize`),
//!   so a scenario server that answers every method with `{}` cannot be mistaken for
//!   the other era;
//! - `MCP_CONFORMANCE_CONTEXT` (some scenarios): JSON with scenario inputs, e.g.
//!   `{"toolCalls": [{"name", "arguments"}]}` for `http-custom-headers`.
//!
//! It uses only the library's public API ([`Client::connect_url`] and the typed
//! calls) and answers the server's requests with the handlers of
//! [`ClientOptions`]: elicitation accepts with every default the requested schema
//! gives (SEP-1034), sampling answers with one fixed assistant text, roots lists
//! none. Scenario by scenario it does what the scenario's server checks: the
//! handshake alone (`initialize`), list and call tools (`tools_call`, `sse-retry`,
//! `elicitation-sep1034-client-defaults`), round-trip a tool's `inputSchema`
//! (`json-schema-2020-12-preservation`), run the 2026-07-28 MRTR flows
//! (`sep-2322-client-request-state`), exercise every method that carries
//! `Mcp-Method` / `Mcp-Name` / `Mcp-Param-*` headers (`http-*`), connect through a
//! -32022 refusal and send one more request (`request-metadata`), or list the tools
//! (`json-schema-ref-no-deref`). The `auth/*` scenarios connect through the
//! server's OAuth authorization ([`HttpClientConfig::auth`]: the authorization
//! endpoint redirects at once, so a headless agent follows it; the suite's Client
//! ID Metadata Document URL; the pre-registered credentials of
//! `MCP_CONFORMANCE_CONTEXT`), then list the tools and call each.
//!
//! Exit status: 0 when the scenario's steps all succeeded; 1 with a one-line
//! reason on stderr when one failed; 2 for an unknown scenario or bad arguments;
//! 3 for the authorization extensions it does not implement (private_key_jwt,
//! enterprise-managed authorization, DPoP, workload identity).
//! The whole run is bounded (45 s; the suite's own timeout is 60 s). Set
//! `CONFORMANCE_CLIENT_DEBUG=1` for the library's debug log on stderr.
//!
//! This example must not know HTTP, JSON-RPC framing or the wire rules of either
//! era: the library does; it only knows what each scenario asks a client to do.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchboard::client::auth::{FollowRedirects, Grant, OAuthClient, OAuthConfig, PreRegistered};
use switchboard::client::{EraPolicy, HttpClientConfig};
use switchboard::{Client, ClientOptions, Error};
use switchboard_protocol::jsonrpc::ErrorObject;
use switchboard_protocol::types::{
    CallToolResult, ContentBlock, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitResult, ElicitValue, Implementation, ListRootsResult, Tool,
};
use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;

/// The bound on one whole run (the suite kills the client at its `--timeout`).
const RUN_TIMEOUT: Duration = Duration::from_secs(45);

/// How a run ends, besides success.
enum Failure {
    /// A step failed: exit 1.
    Step(String),
    /// Unknown scenario or bad arguments: exit 2.
    Usage(String),
    /// A scenario this client does not take part in yet: exit 3.
    Unsupported(String),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Step(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Unsupported(_) => 3,
        }
    }

    fn message(&self) -> &str {
        match self {
            Failure::Step(m) | Failure::Usage(m) | Failure::Unsupported(m) => m,
        }
    }
}

type Outcome = Result<(), Failure>;

/// `context: error` as a failed step.
fn step(context: &str) -> impl Fn(Error) -> Failure + '_ {
    move |e| Failure::Step(format!("{context}: {e}"))
}

fn main() -> ExitCode {
    if std::env::var_os("CONFORMANCE_CLIENT_DEBUG").is_some() {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_max_level(tracing::Level::DEBUG)
            .init();
    }
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let url = std::env::args().nth(1).unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("conformance_client: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(async {
        match tokio::time::timeout(RUN_TIMEOUT, run(&scenario, &url)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Failure::Step(format!(
                "scenario {scenario:?} did not finish within {} s",
                RUN_TIMEOUT.as_secs()
            ))),
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("conformance_client: {}", f.message());
            ExitCode::from(f.code())
        }
    }
}

/// The revision the suite asks for (`MCP_CONFORMANCE_PROTOCOL_VERSION`, default
/// 2025-11-25).
fn requested_version() -> Result<ProtocolVersion, Failure> {
    match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        Err(_) => Ok(ProtocolVersion::V2025_11_25),
        Ok(v) => ProtocolVersion::parse(&v).ok_or_else(|| {
            Failure::Usage(format!(
                "MCP_CONFORMANCE_PROTOCOL_VERSION={v:?} is not a revision this client knows"
            ))
        }),
    }
}

async fn run(scenario: &str, url: &str) -> Outcome {
    if scenario.is_empty() {
        return Err(Failure::Usage(
            "MCP_CONFORMANCE_SCENARIO is not set (usage: MCP_CONFORMANCE_SCENARIO=NAME conformance_client URL)"
                .into(),
        ));
    }
    if let Some(why) = UNSUPPORTED_AUTH
        .iter()
        .find(|(prefix, _)| scenario.starts_with(prefix))
        .map(|(_, why)| why)
    {
        return Err(Failure::Unsupported(format!(
            "scenario {scenario:?} needs {why}, which this client does not implement"
        )));
    }
    if url.is_empty() {
        return Err(Failure::Usage(format!(
            "no server URL for scenario {scenario:?} (usage: conformance_client URL)"
        )));
    }
    let version = requested_version()?;
    if scenario.starts_with("auth/") {
        return authorized(scenario, url, version).await;
    }
    if !SCENARIOS.contains(&scenario) {
        return Err(Failure::Usage(format!(
            "unknown scenario {scenario:?} (known: {}, auth/*)",
            SCENARIOS.join(", ")
        )));
    }
    let client = connect(url, version).await?;
    match scenario {
        "initialize" => initialize(&client).await,
        "tools_call" => tools_call(&client).await,
        "elicitation-sep1034-client-defaults" => elicitation_defaults(&client).await,
        "sse-retry" => sse_retry(&client).await,
        "json-schema-2020-12-preservation" => schema_preservation(&client).await,
        "json-schema-ref-no-deref" => schema_ref_no_deref(&client).await,
        "request-metadata" => request_metadata(&client).await,
        "sep-2322-client-request-state" => mrtr_request_state(&client).await,
        "http-standard-headers" => standard_headers(&client).await,
        "http-custom-headers" => custom_headers(&client).await,
        "http-invalid-tool-headers" => invalid_tool_headers(&client).await,
        other => Err(Failure::Usage(format!("unknown scenario {other:?}"))),
    }
}

/// The scenarios this client runs (`conformance list --client`, minus `auth/*`).
const SCENARIOS: [&str; 11] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "json-schema-2020-12-preservation",
    "json-schema-ref-no-deref",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
];

/// The `auth/*` scenarios this client does not take part in (exit 3): the
/// extensions outside MCP authorization proper.
const UNSUPPORTED_AUTH: [(&str, &str); 5] = [
    (
        "auth/client-credentials-jwt",
        "private_key_jwt client authentication (RFC 7523)",
    ),
    (
        "auth/enterprise-managed-authorization",
        "enterprise-managed authorization (SEP-990)",
    ),
    ("auth/dpop", "DPoP-bound tokens (RFC 9449)"),
    (
        "auth/wif",
        "workload identity federation (JWT bearer grant)",
    ),
    (
        "auth/cross-app-access",
        "enterprise-managed authorization (SEP-990)",
    ),
];

/// The Client ID Metadata Document URL this client names as its `client_id`
/// where the authorization server accepts one (the suite expects this one).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The OAuth client of an `auth/*` scenario: the authorization code grant through
/// a headless agent (the suite's authorization endpoint redirects at once), the
/// suite's CIMD URL, and the pre-registered credentials of
/// `MCP_CONFORMANCE_CONTEXT` (`client_id`, `client_secret`, `issuer`), with the
/// client credentials grant for `auth/client-credentials-*`.
fn oauth_client(scenario: &str) -> Result<Arc<OAuthClient>, Failure> {
    let mut config = OAuthConfig {
        client_name: "switchboard-conformance-client".into(),
        client_metadata_url: Some(CLIENT_METADATA_URL.into()),
        ..OAuthConfig::default()
    };
    let agent = FollowRedirects::new(Duration::from_secs(10))
        .map_err(|e| Failure::Step(format!("cannot start the agent: {e}")))?;
    config.agent = Some(Arc::new(agent));
    if let Ok(raw) = std::env::var("MCP_CONFORMANCE_CONTEXT") {
        let context: Value = serde_json::from_str(&raw)
            .map_err(|e| Failure::Usage(format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}")))?;
        let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
        if let Some(client_id) = text("client_id") {
            config.pre_registered.push(PreRegistered {
                issuer: text("issuer"),
                client_id,
                client_secret: text("client_secret"),
            });
        }
    }
    if scenario.starts_with("auth/client-credentials") {
        config.grant = Grant::ClientCredentials;
    }
    OAuthClient::new(config).map_err(|e| Failure::Usage(format!("OAuth configuration: {e}")))
}

/// An `auth/*` scenario: connect through the server's authorization, list the
/// tools and call each one that takes no arguments (a step-up scenario asks for
/// more scope at `tools/call`).
async fn authorized(scenario: &str, url: &str, version: ProtocolVersion) -> Outcome {
    let mut config = HttpClientConfig::new(url);
    config.auth = Some(oauth_client(scenario)?);
    let client = connect_with(url, version, config).await?;
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    for tool in &tools {
        call_ok(&client, &tool.name, sample_arguments(tool)).await?;
    }
    Ok(())
}

/// Connects in the era of `version` with the handlers every scenario may need.
async fn connect(url: &str, version: ProtocolVersion) -> Result<Client, Failure> {
    // The standalone GET stream carries the server's requests that belong to no
    // request of ours (the TypeScript SDK sends `Server.request` calls made inside a
    // tool there, e.g. the elicitation of `elicitation-sep1034-client-defaults`);
    // legacy revisions only, the library ignores it in 2026-07-28.
    let mut config = HttpClientConfig::new(url);
    config.standalone_stream = true;
    connect_with(url, version, config).await
}

/// Connects with `config` in the era of `version`, with the handlers every
/// scenario may need.
async fn connect_with(
    url: &str,
    version: ProtocolVersion,
    config: HttpClientConfig,
) -> Result<Client, Failure> {
    let era = match version.era() {
        Era::Modern => EraPolicy::Modern,
        Era::Legacy => EraPolicy::Legacy,
    };
    let options = ClientOptions::new(Implementation::new(
        "switchboard-conformance-client",
        env!("CARGO_PKG_VERSION"),
    ))
    .with_era(era)
    .with_elicitation(|params, _cx| async move { Ok(accept_with_defaults(params)) })
    .with_sampling(|_params, _cx| async move { sampling_reply() })
    .with_roots(|_cx| async move { no_roots() });
    Client::connect_url(url, options, config)
        .await
        .map_err(step("connect"))
}

/// Accepts a form elicitation with the `default` of every field that has one
/// (SEP-1034, MCP 2025-11-25 "Elicitation"); declines anything else (URL mode
/// needs a user).
fn accept_with_defaults(params: ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::Form(form) = params else {
        return ElicitResult::new(ElicitAction::Decline);
    };
    let mut content = Vec::new();
    for (name, field) in &form.requested_schema.properties {
        let Ok(field) = serde_json::to_value(field) else {
            continue;
        };
        if let Some(default) = field.get("default") {
            if let Ok(value) = serde_json::from_value::<ElicitValue>(default.clone()) {
                content.push((name.clone(), value));
            }
        }
    }
    let mut result = ElicitResult::new(ElicitAction::Accept);
    result.content = Some(content);
    result
}

/// The one answer to `sampling/createMessage`: a fixed assistant text.
fn sampling_reply() -> Result<CreateMessageResult, ErrorObject> {
    serde_json::from_value(json!({
        "role": "assistant",
        "content": {"type": "text", "text": "This is a reply from the switchboard conformance client."},
        "model": "switchboard-conformance-client",
        "stopReason": "endTurn",
    }))
    .map_err(|e| ErrorObject::new(-32603, format!("cannot build the sampling result: {e}")))
}

/// The answer to `roots/list`: no roots.
fn no_roots() -> Result<ListRootsResult, ErrorObject> {
    serde_json::from_value(json!({"roots": []}))
        .map_err(|e| ErrorObject::new(-32603, format!("cannot build the roots result: {e}")))
}

/// The tool called `name` in `tools`, or a failed step.
fn find_tool<'a>(tools: &'a [Tool], name: &str) -> Result<&'a Tool, Failure> {
    tools.iter().find(|t| t.name == name).ok_or_else(|| {
        Failure::Step(format!(
            "tools/list has no tool {name:?} (it has: {})",
            tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// `tools/call name arguments`; a JSON-RPC error or `isError: true` fails the step.
async fn call_ok(client: &Client, name: &str, arguments: Value) -> Result<CallToolResult, Failure> {
    let result = client
        .call_tool(name, arguments)
        .await
        .map_err(|e| Failure::Step(format!("tools/call {name}: {e}")))?;
    if result.is_error() {
        return Err(Failure::Step(format!(
            "tools/call {name} returned isError: {}",
            texts(&result)
        )));
    }
    Ok(result)
}

/// The text blocks of a tool result, joined (for messages).
fn texts(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `initialize`: the handshake is the whole scenario (its server declares no
/// capability, so there is nothing to list).
async fn initialize(client: &Client) -> Outcome {
    if client.protocol_version().era() != Era::Legacy {
        return Err(Failure::Step(format!(
            "negotiated {} instead of a legacy revision",
            client.protocol_version().as_str()
        )));
    }
    Ok(())
}

/// `tools_call`: list the tools, then `add_numbers {a: 5, b: 3}`.
async fn tools_call(client: &Client) -> Outcome {
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    find_tool(&tools, "add_numbers")?;
    let result = call_ok(client, "add_numbers", json!({"a": 5, "b": 3})).await?;
    if !texts(&result).contains('8') {
        return Err(Failure::Step(format!(
            "add_numbers(5, 3) answered {:?}",
            texts(&result)
        )));
    }
    Ok(())
}

/// `elicitation-sep1034-client-defaults`: the tool elicits; the handler accepts
/// with the schema's defaults.
async fn elicitation_defaults(client: &Client) -> Outcome {
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    find_tool(&tools, "test_client_elicitation_defaults")?;
    call_ok(client, "test_client_elicitation_defaults", json!({})).await?;
    Ok(())
}

/// `sse-retry`: the tool's SSE stream is closed after a priming event with
/// `retry: 500`; the library resumes with GET + `Last-Event-ID` after that delay
/// and gets the result there.
async fn sse_retry(client: &Client) -> Outcome {
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    find_tool(&tools, "test_reconnection")?;
    call_ok(client, "test_reconnection", json!({})).await?;
    Ok(())
}

/// `json-schema-2020-12-preservation`: send the focal tool's `inputSchema` back,
/// as received, to the echo tool.
async fn schema_preservation(client: &Client) -> Outcome {
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    let focal = find_tool(&tools, "json_schema_2020_12_tool")?;
    find_tool(&tools, "json_schema_echo")?;
    let schema = Value::Object(focal.input_schema.clone());
    call_ok(client, "json_schema_echo", json!({ "schema": schema })).await?;
    Ok(())
}

/// `json-schema-ref-no-deref`: list the tools (whose schema has a network `$ref`
/// that must not be fetched).
async fn schema_ref_no_deref(client: &Client) -> Outcome {
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    find_tool(&tools, "lookup_user")?;
    Ok(())
}

/// `request-metadata`: the first request is refused with -32022; the connection
/// retries at a supported revision. One more request shows the `_meta` and
/// `MCP-Protocol-Version` of a later request.
async fn request_metadata(client: &Client) -> Outcome {
    if client.protocol_version() != ProtocolVersion::V2026_07_28 {
        return Err(Failure::Step(format!(
            "negotiated {} instead of 2026-07-28",
            client.protocol_version().as_str()
        )));
    }
    // `ping` is `server/discover` in 2026-07-28.
    client.ping().await.map_err(step("server/discover"))?;
    Ok(())
}

/// `sep-2322-client-request-state`: the MRTR tools. `test_mrtr_unrelated` runs
/// while `test_mrtr_echo_state` is between rounds, so their inputs must not mix.
async fn mrtr_request_state(client: &Client) -> Outcome {
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    for name in [
        "test_mrtr_echo_state",
        "test_mrtr_no_state",
        "test_mrtr_unrelated",
        "test_mrtr_no_result_type",
    ] {
        find_tool(&tools, name)?;
    }
    let (echo, unrelated) = tokio::join!(
        call_ok(client, "test_mrtr_echo_state", json!({})),
        call_ok(client, "test_mrtr_unrelated", json!({})),
    );
    expect_text(echo?, "echo-state-ok")?;
    expect_text(unrelated?, "unrelated-ok")?;
    expect_text(
        call_ok(client, "test_mrtr_no_state", json!({})).await?,
        "no-state-ok",
    )?;
    expect_text(
        call_ok(client, "test_mrtr_no_result_type", json!({})).await?,
        "no-result-type-test-ok",
    )?;
    Ok(())
}

fn expect_text(result: CallToolResult, want: &str) -> Outcome {
    let got = texts(&result);
    if got == want {
        Ok(())
    } else {
        Err(Failure::Step(format!(
            "expected the text {want:?}, got {got:?}"
        )))
    }
}

/// `http-standard-headers`: one request of every method that carries `Mcp-Method`
/// and, for `tools/call`, `resources/read` and `prompts/get`, `Mcp-Name`.
async fn standard_headers(client: &Client) -> Outcome {
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    if tools.is_empty() {
        return Err(Failure::Step("tools/list returned no tool".into()));
    }
    for tool in &tools {
        call_ok(client, &tool.name, json!({})).await?;
    }
    let resources = client
        .list_resources()
        .await
        .map_err(step("resources/list"))?;
    for resource in &resources {
        client
            .read_resource(&resource.uri)
            .await
            .map_err(|e| Failure::Step(format!("resources/read {}: {e}", resource.uri)))?;
    }
    let prompts = client.list_prompts().await.map_err(step("prompts/list"))?;
    for prompt in &prompts {
        client
            .get_prompt(&prompt.name, None)
            .await
            .map_err(|e| Failure::Step(format!("prompts/get {}: {e}", prompt.name)))?;
    }
    Ok(())
}

/// The `toolCalls` of `MCP_CONFORMANCE_CONTEXT`: (name, arguments) pairs.
fn context_tool_calls() -> Result<Vec<(String, Value)>, Failure> {
    let raw = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .map_err(|_| Failure::Usage("MCP_CONFORMANCE_CONTEXT is not set".into()))?;
    let context: Value = serde_json::from_str(&raw)
        .map_err(|e| Failure::Usage(format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}")))?;
    let calls = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .ok_or_else(|| Failure::Usage("MCP_CONFORMANCE_CONTEXT has no toolCalls array".into()))?;
    calls
        .iter()
        .map(|c| {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| Failure::Usage(format!("a toolCalls entry has no name: {c}")))?;
            let arguments = c.get("arguments").cloned().unwrap_or(Value::Null);
            Ok((name.to_owned(), arguments))
        })
        .collect()
}

/// `http-custom-headers`: list the tools (which gives the library their
/// `x-mcp-header` annotations), then make the calls the context names.
async fn custom_headers(client: &Client) -> Outcome {
    let calls = context_tool_calls()?;
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    for (name, arguments) in calls {
        find_tool(&tools, &name)?;
        call_ok(client, &name, arguments).await?;
    }
    Ok(())
}

/// Arguments for `tool`: a value of the declared type for every required property
/// (`"conformance"`, 1, `true`, `[]`, `{}`, `null`; a string when untyped).
fn sample_arguments(tool: &Tool) -> Value {
    let properties = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    let required = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut arguments = Map::new();
    for name in required {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = match kind {
            "integer" | "number" => json!(1),
            "boolean" => json!(true),
            "array" => json!([]),
            "object" => json!({}),
            "null" => Value::Null,
            _ => json!("conformance"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

/// `http-invalid-tool-headers`: the library drops the tools whose `x-mcp-header`
/// annotations are invalid; call every tool it kept.
async fn invalid_tool_headers(client: &Client) -> Outcome {
    let tools = client.list_tools().await.map_err(step("tools/list"))?;
    find_tool(&tools, "valid_tool")?;
    for tool in &tools {
        call_ok(client, &tool.name, sample_arguments(tool)).await?;
    }
    Ok(())
}
