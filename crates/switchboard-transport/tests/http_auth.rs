//! MCP authorization in the Streamable HTTP client transport (`http::auth`
//! hooked into `http::client`) against a scripted server on 127.0.0.1 that is
//! both the protected MCP server and its authorization server: a 401 runs
//! discovery, registration and the code grant (PKCE S256, resource) and the
//! request goes again with the token, once for requests that met the 401
//! together; a 403 `insufficient_scope` steps up with the union of scopes,
//! bounded; a refresh token is used before a new authorization; a wrong RFC 9207
//! `iss` stops the flow before the token request; client credentials with HTTP
//! Basic. Every wait is bounded.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use switchboard_protocol::jsonrpc::{Id, Message, Request};
use switchboard_transport::http::auth::{
    FollowRedirects, Grant, OAuthClient, OAuthConfig, PreRegistered,
};
use switchboard_transport::http::client::{self, HttpClientConfig, TRANSPORT_ERROR};
use switchboard_transport::{Inbound, Receiver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LIMIT: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

/// One HTTP request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
    body: String,
}

impl Seen {
    fn form(&self) -> HashMap<String, String> {
        url::form_urlencoded::parse(self.body.as_bytes())
            .into_owned()
            .collect()
    }
}

/// How the scripted server behaves.
#[derive(Default)]
struct Script {
    /// `tools/call` needs this scope (403 `insufficient_scope` otherwise).
    call_scope: Option<&'static str>,
    /// `tools/call` always gets 403 `insufficient_scope`.
    never_enough: bool,
    /// Issue refresh tokens.
    refresh: bool,
    /// The metadata advertises RFC 9207 `iss`; the redirect carries this one
    /// (`None`: the right one).
    advertise_iss: bool,
    wrong_iss: Option<&'static str>,
    /// The token endpoint does not know the first client it registered (a
    /// server that lost its registrations): `invalid_client`.
    forgets_first_client: bool,
    /// A 2025-03-26 server: no metadata at all; the authorization server's
    /// endpoints are the defaults at the root (`/authorize`, `/token`,
    /// `/register`), no `iss` on the redirect.
    no_metadata: bool,
    /// The metadata names a plain-http token endpoint off the loopback.
    insecure_token_endpoint: bool,
}

#[derive(Default)]
struct Books {
    seen: Vec<Seen>,
    /// code → (code_challenge, scopes)
    codes: HashMap<String, (String, Vec<String>)>,
    /// access token → scopes
    tokens: HashMap<String, Vec<String>>,
    refresh: HashMap<String, Vec<String>>,
    issued: usize,
    registered: usize,
    /// The resource moved to the second authorization server (`/as2`): its
    /// PRM names that one, and only tokens that one issued are accepted.
    moved: bool,
    issued_by_as2: std::collections::HashSet<String>,
}

struct Server {
    base: String,
    script: Script,
    books: Mutex<Books>,
}

impl Server {
    fn seen(&self) -> Vec<Seen> {
        self.books.lock().unwrap().seen.clone()
    }

    fn at(&self, path: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }

    /// Forgets every access token (refresh tokens stay): the next request gets 401.
    fn revoke_access(&self) {
        self.books.lock().unwrap().tokens.clear();
    }

    fn issuer(&self) -> String {
        format!("{}/as", self.base)
    }

    /// The resource moves to the second authorization server; every access
    /// token is forgotten (refresh tokens of the first stay valid there).
    fn move_to_as2(&self) {
        let mut books = self.books.lock().unwrap();
        books.moved = true;
        books.tokens.clear();
    }

    fn json(status: u16, body: Value) -> (u16, Vec<(String, String)>, String) {
        (
            status,
            vec![("content-type".into(), "application/json".into())],
            body.to_string(),
        )
    }

    fn answer(&self, seen: &Seen) -> (u16, Vec<(String, String)>, String) {
        let base = &self.base;
        // Two authorization servers on this origin: `/as` and `/as2`, served alike.
        let (as_name, normalized) = match seen.path.strip_prefix("/as2/") {
            Some(rest) => ("as2", format!("/as/{rest}")),
            None if seen.path == "/.well-known/oauth-authorization-server/as2" => (
                "as2",
                "/.well-known/oauth-authorization-server/as".to_owned(),
            ),
            None => ("as", seen.path.clone()),
        };
        let issuer = format!("{base}/{as_name}");
        let mut books = self.books.lock().unwrap();
        books.seen.push(seen.clone());
        let mut path = normalized.as_str();
        if self.script.no_metadata {
            path = match path {
                p if p.starts_with("/.well-known/") || p.starts_with("/as/") => "/gone",
                "/authorize" => "/as/authorize",
                "/token" => "/as/token",
                "/register" => "/as/register",
                p => p,
            };
        }
        match (seen.method.as_str(), path) {
            ("GET", "/.well-known/oauth-protected-resource/mcp") => Self::json(
                200,
                json!({"resource": format!("{base}/mcp"),
                       "authorization_servers": [format!("{base}/{}", if books.moved { "as2" } else { "as" })],
                       "scopes_supported": ["read"]}),
            ),
            ("GET", "/.well-known/oauth-authorization-server/as") => Self::json(
                200,
                json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": if self.script.insecure_token_endpoint {
                        "http://auth.example.invalid/token".to_owned()
                    } else {
                        format!("{issuer}/token")
                    },
                    "registration_endpoint": format!("{issuer}/register"),
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                    "authorization_response_iss_parameter_supported": self.script.advertise_iss,
                }),
            ),
            ("POST", "/as/register") => {
                books.registered += 1;
                Self::json(
                    201,
                    json!({"client_id": format!("dyn-client-{}", books.registered)}),
                )
            }
            ("GET", "/as/authorize") => {
                let q = &seen.query;
                let n = books.codes.len() + 1;
                let code = format!("code-{n}");
                let scopes = q
                    .get("scope")
                    .map(|s| s.split(' ').map(str::to_owned).collect())
                    .unwrap_or_default();
                books.codes.insert(
                    code.clone(),
                    (q.get("code_challenge").cloned().unwrap_or_default(), scopes),
                );
                let mut to = url::Url::parse(&q["redirect_uri"]).unwrap();
                to.query_pairs_mut()
                    .append_pair("code", &code)
                    .append_pair("state", &q["state"]);
                if !self.script.no_metadata {
                    to.query_pairs_mut()
                        .append_pair("iss", self.script.wrong_iss.unwrap_or(&issuer));
                }
                (
                    302,
                    vec![("location".into(), to.to_string())],
                    String::new(),
                )
            }
            ("POST", "/as/token") => {
                let f = seen.form();
                if self.script.forgets_first_client
                    && f.get("client_id").map(String::as_str) == Some("dyn-client-1")
                {
                    return Self::json(
                        401,
                        json!({"error": "invalid_client", "error_description": "unknown client"}),
                    );
                }
                let scopes = match f.get("grant_type").map(String::as_str) {
                    Some("authorization_code") => {
                        let Some((challenge, scopes)) = books.codes.remove(&f["code"]) else {
                            return Self::json(400, json!({"error": "invalid_grant"}));
                        };
                        let verifier = f.get("code_verifier").cloned().unwrap_or_default();
                        let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                            .encode(Sha256::digest(verifier.as_bytes()));
                        if computed != challenge {
                            return Self::json(
                                400,
                                json!({"error": "invalid_grant", "error_description": "PKCE"}),
                            );
                        }
                        scopes
                    }
                    Some("refresh_token") => match books.refresh.get(&f["refresh_token"]) {
                        Some(s) => s.clone(),
                        None => return Self::json(400, json!({"error": "invalid_grant"})),
                    },
                    Some("client_credentials") => {
                        let basic = base64::engine::general_purpose::STANDARD.encode("m2m:s3cret");
                        if seen.headers.get("authorization") != Some(&format!("Basic {basic}")) {
                            return Self::json(401, json!({"error": "invalid_client"}));
                        }
                        vec!["read".to_owned()]
                    }
                    _ => return Self::json(400, json!({"error": "unsupported_grant_type"})),
                };
                books.issued += 1;
                let access = format!("tok-{}", books.issued);
                books.tokens.insert(access.clone(), scopes.clone());
                if as_name == "as2" {
                    books.issued_by_as2.insert(access.clone());
                }
                let mut body =
                    json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600});
                if self.script.refresh {
                    let r = format!("ref-{}", books.issued);
                    books.refresh.insert(r.clone(), scopes);
                    body["refresh_token"] = json!(r);
                }
                Self::json(200, body)
            }
            ("POST", "/mcp") => {
                let prm = format!("{base}/.well-known/oauth-protected-resource/mcp");
                let token = seen
                    .headers
                    .get("authorization")
                    .and_then(|a| a.strip_prefix("Bearer "));
                let stale = books.moved && !token.is_some_and(|t| books.issued_by_as2.contains(t));
                let Some(scopes) = token.and_then(|t| books.tokens.get(t)).filter(|_| !stale)
                else {
                    return (
                        401,
                        vec![(
                            "www-authenticate".into(),
                            format!(r#"Bearer error="invalid_token", resource_metadata="{prm}""#),
                        )],
                        String::new(),
                    );
                };
                let body: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
                if body["method"] == "tools/call" {
                    let needed = self.script.call_scope.unwrap_or("read");
                    if self.script.never_enough || !scopes.iter().any(|s| s == needed) {
                        return (
                            403,
                            vec![(
                                "www-authenticate".into(),
                                format!(
                                    r#"Bearer error="insufficient_scope", scope="{needed}", resource_metadata="{prm}""#
                                ),
                            )],
                            String::new(),
                        );
                    }
                }
                if body.get("id").is_none() {
                    return (202, Vec::new(), String::new());
                }
                Self::json(
                    200,
                    json!({"jsonrpc": "2.0", "id": body["id"], "result": {"ok": true}}),
                )
            }
            _ => (404, Vec::new(), "not found".into()),
        }
    }
}

/// Starts the scripted server on 127.0.0.1 (one request per connection).
async fn serve(script: Script) -> Arc<Server> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Arc::new(Server {
        base: format!("http://{}", listener.local_addr().unwrap()),
        script,
        books: Mutex::new(Books::default()),
    });
    let s = server.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let s = s.clone();
            tokio::spawn(async move {
                let _ = serve_one(sock, &s).await;
            });
        }
    });
    server
}

async fn serve_one(mut sock: TcpStream, server: &Server) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let target = url::Url::parse(&format!("http://x{}", first.next().unwrap_or("/"))).unwrap();
    let mut headers = HashMap::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let seen = Seen {
        method,
        path: target.path().to_owned(),
        query: target.query_pairs().into_owned().collect(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let (status, headers, body) = server.answer(&seen);
    let mut out = format!(
        "HTTP/1.1 {status} X\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&body);
    sock.write_all(out.as_bytes()).await?;
    sock.shutdown().await
}

fn code_grant() -> OAuthConfig {
    OAuthConfig {
        redirect_uri: "http://127.0.0.1:9/callback".into(),
        agent: Some(Arc::new(
            FollowRedirects::new(Duration::from_secs(10)).unwrap(),
        )),
        ..OAuthConfig::default()
    }
}

fn connect(
    server: &Server,
    config: OAuthConfig,
) -> (switchboard_transport::Sender, Receiver, Arc<OAuthClient>) {
    let auth = OAuthClient::new(config).unwrap();
    let mut c = HttpClientConfig::new(format!("{}/mcp", server.base));
    c.auth = Some(auth.clone());
    let (transport, _handle) = client::connect(c).unwrap();
    let (tx, rx) = transport.split();
    (tx, rx, auth)
}

fn request(id: i64, method: &str) -> Message {
    let params = if method == "tools/call" {
        json!({"name": "deploy", "arguments": {}})
    } else {
        json!({})
    };
    Message::Request(Request::new(id, method, &params).unwrap())
}

/// The next answer: `Ok(id)` for a result, `Err((id, message, data))` for a
/// transport failure.
async fn next(rx: &mut Receiver) -> Result<Id, (Id, String, Value)> {
    match bounded(rx.recv()).await {
        Some(Inbound::Message(Message::Response(r))) => Ok(r.id),
        Some(Inbound::Failed { id, error }) => {
            assert_eq!(error.code, TRANSPORT_ERROR);
            let data = error
                .data
                .as_ref()
                .map(|d| serde_json::from_str(d.get()).unwrap())
                .unwrap_or(Value::Null);
            Err((id, error.message, data))
        }
        Some(other) => panic!("unexpected {other:?}"),
        None => panic!("the transport closed"),
    }
}

/// A 401 runs the whole flow once, even for two requests that met it together,
/// and both go again with the token. Before, the 401 failed both requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_runs_discovery_registration_and_the_code_grant_then_sends_again() {
    let server = serve(Script::default()).await;
    let (tx, mut rx, auth) = connect(&server, code_grant());
    tx.send(request(1, "tools/list")).await.unwrap();
    tx.send(request(2, "tools/list")).await.unwrap();
    let mut got = vec![next(&mut rx).await.unwrap(), next(&mut rx).await.unwrap()];
    got.sort_by_key(|i| i.to_string());
    assert_eq!(got, [Id::from(1), Id::from(2)]);
    assert!(auth.is_authorized());

    let resource = format!("{}/mcp", server.base);
    let authorize = server.at("/as/authorize");
    assert_eq!(authorize.len(), 1, "one flow for both requests");
    let q = &authorize[0].query;
    assert_eq!(q["client_id"], "dyn-client-1");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["resource"], resource);
    assert_eq!(q["scope"], "read", "scopes_supported of the PRM");
    let register = server.at("/as/register");
    assert_eq!(register.len(), 1);
    let reg: Value = serde_json::from_str(&register[0].body).unwrap();
    assert_eq!(reg["application_type"], "native");
    assert_eq!(reg["redirect_uris"], json!(["http://127.0.0.1:9/callback"]));
    assert_eq!(reg["token_endpoint_auth_method"], "none");
    let token = server.at("/as/token");
    assert_eq!(token.len(), 1);
    let f = token[0].form();
    assert_eq!(f["grant_type"], "authorization_code");
    assert_eq!(f["resource"], resource);
    assert_eq!(f["client_id"], "dyn-client-1");
    assert!(!token[0].headers.contains_key("authorization"));
    let with_token: Vec<_> = server
        .at("/mcp")
        .into_iter()
        .filter(|s| s.headers.get("authorization").map(String::as_str) == Some("Bearer tok-1"))
        .collect();
    assert_eq!(with_token.len(), 2);
    // Discovery in order: the challenge's PRM URL, then the AS metadata.
    let gets: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.method == "GET" && s.path.starts_with("/.well-known"))
        .map(|s| s.path)
        .collect();
    assert_eq!(
        gets,
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server/as"
        ]
    );
}

/// A 403 `insufficient_scope` authorizes again with the scopes granted before
/// and the challenge's (SEP-2350), and the request goes again with the new token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_insufficient_scope_steps_up_with_the_union_of_scopes() {
    let server = serve(Script {
        call_scope: Some("write"),
        ..Script::default()
    })
    .await;
    let (tx, mut rx, _auth) = connect(&server, code_grant());
    tx.send(request(1, "tools/list")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(1));
    tx.send(request(2, "tools/call")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(2));
    let scopes: Vec<_> = server
        .at("/as/authorize")
        .into_iter()
        .map(|s| s.query["scope"].clone())
        .collect();
    assert_eq!(scopes, ["read", "read write"]);
    assert_eq!(server.at("/as/register").len(), 1, "the client is kept");
}

/// A server that is never satisfied gets at most `max_authorizations` (3) per
/// request; then the request fails with its 403.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_ups_are_bounded_then_the_403_fails_the_request() {
    let server = serve(Script {
        never_enough: true,
        ..Script::default()
    })
    .await;
    let (tx, mut rx, _auth) = connect(&server, code_grant());
    tx.send(request(7, "tools/call")).await.unwrap();
    let (id, message, data) = next(&mut rx).await.unwrap_err();
    assert_eq!(id, Id::from(7));
    assert_eq!(data["httpStatus"], 403, "{message}");
    assert_eq!(server.at("/as/authorize").len(), 3);
}

/// With a refresh token, a 401 refreshes (same `resource`) instead of sending
/// the user through the authorization again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_with_a_refresh_token_refreshes_first() {
    let server = serve(Script {
        refresh: true,
        ..Script::default()
    })
    .await;
    let (tx, mut rx, auth) = connect(&server, code_grant());
    tx.send(request(1, "tools/list")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(1));
    let first = auth.generation();
    server.revoke_access();
    tx.send(request(2, "tools/list")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(2));
    assert_eq!(auth.generation(), first + 1);
    assert_eq!(server.at("/as/authorize").len(), 1);
    let token = server.at("/as/token");
    assert_eq!(token.len(), 2);
    let f = token[1].form();
    assert_eq!(f["grant_type"], "refresh_token");
    assert_eq!(f["refresh_token"], "ref-1");
    assert_eq!(f["resource"], format!("{}/mcp", server.base));
    let last = server.at("/mcp").pop().unwrap();
    assert_eq!(last.headers["authorization"], "Bearer tok-2");
}

/// RFC 9207: a redirect whose `iss` is not the authorization server's issuer
/// stops the flow before the code reaches the token endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_iss_stops_the_flow_before_the_token_request() {
    let server = serve(Script {
        advertise_iss: true,
        wrong_iss: Some("https://evil.example.com"),
        ..Script::default()
    })
    .await;
    let (tx, mut rx, auth) = connect(&server, code_grant());
    tx.send(request(1, "tools/list")).await.unwrap();
    let (_, message, data) = next(&mut rx).await.unwrap_err();
    assert!(message.contains("RFC 9207"), "{message}");
    assert_eq!(data["httpStatus"], 401);
    assert!(server.at("/as/token").is_empty());
    assert!(!auth.is_authorized());
}

/// The client credentials grant: pre-registered credentials by HTTP Basic, the
/// `resource` parameter, no registration and no authorization endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_with_basic_authentication() {
    let server = serve(Script::default()).await;
    let config = OAuthConfig {
        grant: Grant::ClientCredentials,
        pre_registered: vec![PreRegistered {
            issuer: Some(server.issuer()),
            client_id: "m2m".into(),
            client_secret: Some("s3cret".into()),
        }],
        ..OAuthConfig::default()
    };
    let (tx, mut rx, _auth) = connect(&server, config);
    tx.send(request(1, "tools/list")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(1));
    let token = server.at("/as/token");
    assert_eq!(token.len(), 1);
    let f = token[0].form();
    assert_eq!(f["grant_type"], "client_credentials");
    assert_eq!(f["resource"], format!("{}/mcp", server.base));
    assert_eq!(f["scope"], "read");
    assert!(server.at("/as/register").is_empty());
    assert!(server.at("/as/authorize").is_empty());
}

/// A dynamically registered client the token endpoint no longer knows
/// (`invalid_client`) fails that request and is forgotten: the next challenge
/// registers again instead of failing forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_the_server_forgot_is_made_again() {
    let server = serve(Script {
        forgets_first_client: true,
        ..Script::default()
    })
    .await;
    let (tx, mut rx, _auth) = connect(&server, code_grant());
    tx.send(request(1, "tools/list")).await.unwrap();
    let (_, message, _) = next(&mut rx).await.unwrap_err();
    assert!(message.contains("invalid_client"), "{message}");
    tx.send(request(2, "tools/list")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(2));
    assert_eq!(server.at("/as/register").len(), 2);
    let last = server.at("/as/token").pop().unwrap();
    assert_eq!(last.form()["client_id"], "dyn-client-2");
}

/// A 2025-03-26 server without Protected Resource Metadata nor authorization
/// server metadata: the flow uses the default endpoints at the server's root
/// (MCP 2025-03-26, "Fallbacks for Servers without Metadata Discovery"), after
/// asking for the metadata at the origin, and `resource` is the server's URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_03_26_server_without_metadata_gets_the_default_endpoints() {
    let server = serve(Script {
        no_metadata: true,
        ..Script::default()
    })
    .await;
    let (tx, mut rx, _auth) = connect(&server, code_grant());
    tx.send(request(1, "tools/list")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(1));
    let paths: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.path != "/mcp")
        .map(|s| s.path)
        .collect();
    assert_eq!(
        paths,
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
            "/register",
            "/authorize",
            "/token",
        ]
    );
    let token = server.at("/token");
    assert_eq!(token[0].form()["resource"], format!("{}/mcp", server.base));
}

/// A plain-http token endpoint off the loopback is refused before anything is
/// sent to the authorization server (MCP "Communication Security").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_token_endpoint_is_refused() {
    let server = serve(Script {
        insecure_token_endpoint: true,
        ..Script::default()
    })
    .await;
    let (tx, mut rx, _auth) = connect(&server, code_grant());
    tx.send(request(1, "tools/list")).await.unwrap();
    let (_, message, _) = next(&mut rx).await.unwrap_err();
    assert!(message.contains("not https"), "{message}");
    assert!(server.at("/as/register").is_empty());
    assert!(server.at("/as/authorize").is_empty());
}

/// A resource that moves to another authorization server (its PRM names a new
/// one, SEP-2352): the refresh token of the old one is not used; the client
/// registers with the new one and authorizes there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_that_moves_to_another_authorization_server_is_authorized_there() {
    let server = serve(Script {
        refresh: true,
        ..Script::default()
    })
    .await;
    let (tx, mut rx, _auth) = connect(&server, code_grant());
    tx.send(request(1, "tools/list")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(1));
    server.move_to_as2();
    tx.send(request(2, "tools/list")).await.unwrap();
    assert_eq!(next(&mut rx).await.unwrap(), Id::from(2));
    assert_eq!(
        server.at("/as/token").len(),
        1,
        "no refresh at the old server"
    );
    assert_eq!(server.at("/as2/register").len(), 1);
    let authorize = server.at("/as2/authorize");
    assert_eq!(authorize.len(), 1);
    assert_eq!(authorize[0].query["client_id"], "dyn-client-2");
}
