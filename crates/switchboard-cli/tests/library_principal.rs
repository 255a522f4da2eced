//! A library server's tool handler sees who called (`ToolContext::principal`)
//! when its HTTP server checks tokens: the access token's subject, client id
//! and scopes, in a Streamable HTTP session and in a 2026-07-28 request alike.
//! The token is minted here and checked against a JWK set served by this test
//! on 127.0.0.1 (`auth_util`). Every wait is bounded.

mod auth_util;

use std::time::Duration;

use serde_json::{json, Value};
use switchboard::client::http::HttpClientConfig;
use switchboard::client::EraPolicy;
use switchboard::server::{ServeOptions, Server};
use switchboard::{Client, ClientOptions};
use switchboard_protocol::types::{CallToolResult, Implementation, Tool};
use switchboard_transport::http::resource::ResourceServerConfig;
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};

const RESOURCE: &str = "https://library.example/mcp";
const LIMIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_handler_sees_the_caller_its_token_names() {
    let jwks = auth_util::jwks_server().await;
    let issuer = "http://127.0.0.1:1";
    let mut auth = ResourceServerConfig::new(issuer.to_owned(), RESOURCE);
    auth.jwks_url = Some(jwks);
    let mut http = HttpServerConfig::default();
    http.auth = Some(auth);
    let (server_http, acceptor) = HttpServer::bind(http).await.unwrap();
    let url = server_http.url();
    let whoami: Tool = serde_json::from_value(json!({
        "name": "whoami", "inputSchema": {"type": "object"}
    }))
    .unwrap();
    let server = Server::builder(Implementation::new("principal-test", "1"))
        .tool(whoami, |_args, ctx| async move {
            let who = match ctx.principal() {
                Some(p) => json!({"subject": p.subject, "client": p.client_id, "scopes": p.scopes}),
                None => Value::Null,
            };
            let result: CallToolResult = serde_json::from_value(
                json!({"content": [{"type": "text", "text": who.to_string()}]}),
            )
            .unwrap();
            Ok(result)
        })
        .build()
        .unwrap();
    let serving = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
    let token = auth_util::mint(&json!({
        "iss": issuer, "aud": RESOURCE, "sub": "alice", "client_id": "cli-1",
        "scope": "mcp:tools extra", "exp": auth_util::now() + 300,
    }));
    for era in [EraPolicy::Legacy, EraPolicy::Modern] {
        let mut http = HttpClientConfig::new("");
        http.headers = vec![("Authorization".into(), format!("Bearer {token}"))];
        let options = ClientOptions::new(Implementation::new("t", "1")).with_era(era);
        let client = tokio::time::timeout(LIMIT, Client::connect_url(&url, options, http))
            .await
            .expect("in time")
            .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        let r = tokio::time::timeout(LIMIT, client.call_tool("whoami", json!({})))
            .await
            .expect("in time")
            .unwrap();
        let text: String = r.content.iter().filter_map(|b| b.as_text()).collect();
        let who: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(who["subject"], "alice", "{era:?}: {text}");
        assert_eq!(who["client"], "cli-1", "{era:?}: {text}");
        assert_eq!(
            who["scopes"],
            json!(["mcp:tools", "extra"]),
            "{era:?}: {text}"
        );
    }
    serving.abort();
}
