//! The HTTP server as an OAuth resource server (`HttpServerConfig::auth`,
//! module `http::resource`), against a real HTTP client (reqwest) and a
//! scripted authorization server on 127.0.0.1 (its RFC 8414 metadata, a JWK set
//! that a test can rotate, RFC 7662 introspection). Tokens are minted here with
//! `jsonwebtoken` and test keys: each bad one gets its status and
//! `WWW-Authenticate` checked. Servers bind 127.0.0.1:0 only; every wait is
//! bounded.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use switchboard_protocol::jsonrpc::{Message, Response};
use switchboard_transport::http::resource::{
    IntrospectionConfig, Principal, RefetchPolicy, ResourceServerConfig,
};
use switchboard_transport::http::server::{
    HttpServer, HttpServerConfig, HttpSession, SessionAcceptor,
};
use switchboard_transport::Inbound;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(20);
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const RESOURCE: &str = "https://mcp.example/mcp";
const METADATA_URL: &str = "https://mcp.example/.well-known/oauth-protected-resource/mcp";

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

/// Test keys (generated once with openssl; test use only): Ed25519 PKCS#8 DER
/// and the public `x`.
const ED1: (&str, &str) = (
    "MC4CAQAwBQYDK2VwBCIEIGbIJxeyCFvPWHF1osnaF7a7SRfGYtDWKd9GvtLBMd0M",
    "GjzkVYDne0KflCZIk0dgxf3GXm-1Gp8dWERqzRxmhrM",
);
const ED2: (&str, &str) = (
    "MC4CAQAwBQYDK2VwBCIEINdVHvxRN65SOKrVlDhmAR6qtYWUkdqXgjFhzJeHfZ0O",
    "BUUIKFBZKZhW_ihB4W_eWwNPvY5HpfwMnE7Bn9vGagY",
);

fn jwk(kid: &str, x: &str) -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA"})
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// What the scripted authorization server holds and saw.
#[derive(Default)]
struct AsState {
    jwks: Value,
    jwks_fetches: usize,
    /// Opaque token → introspection answer.
    introspection: HashMap<String, Value>,
    /// The `Authorization` headers of the introspection requests.
    introspection_auth: Vec<String>,
}

struct AuthServer {
    issuer: String,
    state: Arc<Mutex<AsState>>,
}

impl AuthServer {
    async fn start() -> AuthServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(AsState {
            jwks: json!({"keys": [jwk("k1", ED1.1)]}),
            ..AsState::default()
        }));
        let (st, iss) = (state.clone(), issuer.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (st, iss) = (st.clone(), iss.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let (st, iss) = (st.clone(), iss.clone());
                        async move { Ok::<_, Infallible>(answer_as(&st, &iss, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        AuthServer { issuer, state }
    }

    fn set_keys(&self, keys: Value) {
        self.state.lock().unwrap().jwks = json!({"keys": keys});
    }

    fn jwks_fetches(&self) -> usize {
        self.state.lock().unwrap().jwks_fetches
    }
}

async fn answer_as(
    state: &Mutex<AsState>,
    issuer: &str,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let json_reply = |v: Value| {
        hyper::Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(v.to_string())))
            .unwrap()
    };
    match path.as_str() {
        "/.well-known/oauth-authorization-server" => json_reply(json!({
            "issuer": issuer,
            "jwks_uri": format!("{issuer}/jwks"),
            "token_endpoint": format!("{issuer}/token"),
            "introspection_endpoint": format!("{issuer}/introspect"),
        })),
        "/jwks" => {
            let mut st = state.lock().unwrap();
            st.jwks_fetches += 1;
            json_reply(st.jwks.clone())
        }
        "/introspect" => {
            let form: HashMap<String, String> =
                url::form_urlencoded::parse(&body).into_owned().collect();
            let mut st = state.lock().unwrap();
            st.introspection_auth.push(auth.unwrap_or_default());
            let token = form.get("token").cloned().unwrap_or_default();
            json_reply(
                st.introspection
                    .get(&token)
                    .cloned()
                    .unwrap_or(json!({"active": false})),
            )
        }
        _ => hyper::Response::builder()
            .status(404)
            .body(Full::new(Bytes::new()))
            .unwrap(),
    }
}

/// The claims of a good token for `sub`.
fn claims(issuer: &str, sub: &str) -> Value {
    json!({"iss": issuer, "aud": RESOURCE, "sub": sub, "client_id": "test-client",
           "scope": "mcp:tools", "exp": now() + 300, "iat": now()})
}

fn with(mut c: Value, key: &str, value: Value) -> Value {
    if value.is_null() {
        c.as_object_mut().unwrap().remove(key);
    } else {
        c[key] = value;
    }
    c
}

fn sign(kid: &str, key: (&str, &str), claims: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.to_owned());
    let der = base64::engine::general_purpose::STANDARD
        .decode(key.0)
        .unwrap();
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&der)).unwrap()
}

/// What the library side saw of each session: its principal and whether its
/// headers held `Authorization`.
type Opened = mpsc::UnboundedReceiver<(Option<Principal>, bool)>;

/// Answers every request of every session with `{}` (`initialize` with a
/// result), and reports each new session.
fn serve(mut acceptor: SessionAcceptor) -> Opened {
    let (opened_tx, opened_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(session) = acceptor.accept().await {
            let HttpSession {
                transport,
                principal,
                headers,
                ..
            } = session;
            let _ = opened_tx.send((principal, headers.contains_key("authorization")));
            tokio::spawn(async move {
                let (tx, mut rx) = transport.split();
                while let Some(event) = rx.recv().await {
                    let request = match event {
                        Inbound::Message(Message::Request(r)) => r,
                        Inbound::Closed { .. } => break,
                        _ => continue,
                    };
                    let result = match request.method.as_str() {
                        "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                                "serverInfo": {"name": "t", "version": "0"}}),
                        _ => json!({}),
                    };
                    let response = Response::new(request.id.clone(), &result).unwrap();
                    if tx.send(Message::Response(response)).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    opened_rx
}

struct Setup {
    url: String,
    base: String,
    auth_server: AuthServer,
    opened: Opened,
    _server: HttpServer,
}

async fn setup(tune: impl FnOnce(&mut ResourceServerConfig)) -> Setup {
    let auth_server = AuthServer::start().await;
    let mut rs = ResourceServerConfig::new(auth_server.issuer.clone(), RESOURCE);
    rs.scopes = vec!["mcp:tools".into()];
    tune(&mut rs);
    let mut config = HttpServerConfig::default();
    config.auth = Some(rs);
    config.json_response = true;
    let (server, acceptor) = HttpServer::bind(config).await.unwrap();
    let url = server.url();
    let base = format!("http://{}", server.local_addr());
    Setup {
        url,
        base,
        auth_server,
        opened: serve(acceptor),
        _server: server,
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

async fn post(
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: String,
) -> reqwest::Response {
    let mut req = client()
        .post(url)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json")
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    bounded(req.send()).await.unwrap()
}

fn challenge(r: &reqwest::Response) -> String {
    r.headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn invalid_token(description: &str) -> String {
    format!("Bearer error=\"invalid_token\", error_description=\"{description}\", scope=\"mcp:tools\", resource_metadata=\"{METADATA_URL}\"")
}

#[tokio::test]
async fn metadata_is_served_where_clients_look() {
    let s = setup(|_| {}).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = bounded(client().get(format!("{}{path}", s.base)).send())
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.headers()["content-type"], "application/json");
        let doc: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(
            doc,
            json!({"resource": RESOURCE, "authorization_servers": [s.auth_server.issuer],
                   "bearer_methods_supported": ["header"], "scopes_supported": ["mcp:tools"]})
        );
    }
    let r = bounded(
        client()
            .post(format!("{}/.well-known/oauth-protected-resource", s.base))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 405);

    // Authorization off: nothing there.
    let (plain, _acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = bounded(
            client()
                .get(format!("http://{}{path}", plain.local_addr()))
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 404, "{path}");
    }
}

#[tokio::test]
async fn each_bad_token_is_refused_with_its_challenge() {
    let mut s = setup(|_| {}).await;
    let iss = s.auth_server.issuer.clone();
    let good = claims(&iss, "alice");
    let ed1_x = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(ED1.1)
        .unwrap();
    let mut hs = Header::new(Algorithm::HS256);
    hs.kid = Some("k1".into());
    let hmac_with_public_key =
        jsonwebtoken::encode(&hs, &good, &EncodingKey::from_secret(&ed1_x)).unwrap();
    let alg_none = format!(
        "{}.{}.",
        b64url(br#"{"alg":"none","kid":"k1"}"#),
        b64url(good.to_string().as_bytes())
    );
    let mut bad_signature = sign("k1", ED1, &good);
    bad_signature.replace_range(bad_signature.len() - 6.., "AAAAAA");

    let cases: Vec<(&str, String, String)> = vec![
        (
            "expired",
            sign("k1", ED1, &with(good.clone(), "exp", json!(now() - 120))),
            invalid_token("the token has expired"),
        ),
        (
            "not yet valid",
            sign("k1", ED1, &with(good.clone(), "nbf", json!(now() + 600))),
            invalid_token("the token is not valid yet"),
        ),
        (
            "wrong issuer",
            sign(
                "k1",
                ED1,
                &with(good.clone(), "iss", json!(format!("{iss}/other"))),
            ),
            invalid_token(&format!(
                "the token was issued by {iss}/other, not this resource's issuer"
            )),
        ),
        (
            "wrong audience",
            sign(
                "k1",
                ED1,
                &with(good.clone(), "aud", json!("https://other.example/mcp")),
            ),
            invalid_token("the token is not for this resource (aud)"),
        ),
        (
            "bad signature",
            bad_signature,
            invalid_token("the token's signature does not verify"),
        ),
        (
            "signed by a key not the issuer's",
            sign("k1", ED2, &good),
            invalid_token("the token's signature does not verify"),
        ),
        (
            "alg none",
            alg_none,
            invalid_token("the token's algorithm \\\"none\\\" is not accepted"),
        ),
        (
            "HS256 with the public key",
            hmac_with_public_key,
            invalid_token("the token's algorithm \\\"HS256\\\" is not accepted"),
        ),
        (
            "opaque, no introspection",
            "opaque-token".into(),
            invalid_token("opaque tokens are not accepted here"),
        ),
        (
            "not a b64token",
            "a b".into(),
            invalid_token("the bearer token is malformed"),
        ),
    ];
    for (name, token, want) in cases {
        let r = post(&s.url, Some(&token), None, initialize()).await;
        assert_eq!(r.status(), 401, "{name}");
        assert_eq!(challenge(&r), want, "{name}");
    }
    // No token: a challenge without an error code.
    let r = post(&s.url, None, None, initialize()).await;
    assert_eq!(r.status(), 401);
    assert_eq!(
        challenge(&r),
        format!("Bearer scope=\"mcp:tools\", resource_metadata=\"{METADATA_URL}\"")
    );
    // Another scheme is no bearer token either.
    let r = bounded(
        client()
            .post(&s.url)
            .header("authorization", "Basic dXNlcjpwdw==")
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .body(initialize())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 401);
    assert!(!challenge(&r).contains("error="));
    // A token in the query string: 400 invalid_request, even with a good header.
    let token = sign("k1", ED1, &good);
    let r = post(
        &format!("{}?access_token={token}", s.url),
        Some(&token),
        None,
        initialize(),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        challenge(&r),
        format!("Bearer error=\"invalid_request\", error_description=\"access tokens are not accepted in the query string\", scope=\"mcp:tools\", resource_metadata=\"{METADATA_URL}\"")
    );
    // None of them opened a session.
    assert!(s.opened.try_recv().is_err());
    // The good one does.
    let r = post(&s.url, Some(&token), None, initialize()).await;
    assert_eq!(r.status(), 200);
    let (principal, saw_authorization) = bounded(s.opened.recv()).await.unwrap();
    assert_eq!(
        principal,
        Some(Principal::new(
            "alice",
            Some("test-client".into()),
            vec!["mcp:tools".into()]
        ))
    );
    assert!(!saw_authorization, "the library never sees the token");
}

#[tokio::test]
async fn missing_scopes_get_403_with_the_scopes_to_ask_for() {
    let mut s = setup(|rs| {
        rs.tool_scopes
            .insert("admin".into(), vec!["mcp:admin".into()]);
    })
    .await;
    let iss = s.auth_server.issuer.clone();
    let no_scope = sign(
        "k1",
        ED1,
        &with(claims(&iss, "alice"), "scope", json!("other")),
    );
    let r = post(&s.url, Some(&no_scope), None, initialize()).await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        challenge(&r),
        format!("Bearer error=\"insufficient_scope\", error_description=\"the token lacks the scopes: mcp:tools\", scope=\"mcp:tools\", resource_metadata=\"{METADATA_URL}\"")
    );
    // A tool with scopes of its own: step-up.
    let token = sign("k1", ED1, &claims(&iss, "alice"));
    let r = post(&s.url, Some(&token), None, initialize()).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    bounded(s.opened.recv()).await.unwrap();
    let call = |name: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": {}}})
            .to_string()
    };
    let r = post(&s.url, Some(&token), Some(&session), call("admin")).await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        challenge(&r),
        format!("Bearer error=\"insufficient_scope\", error_description=\"the token lacks the scopes: mcp:admin\", scope=\"mcp:tools mcp:admin\", resource_metadata=\"{METADATA_URL}\"")
    );
    let r = post(&s.url, Some(&token), Some(&session), call("echo")).await;
    assert_eq!(r.status(), 200);
    let stepped_up = sign(
        "k1",
        ED1,
        &with(claims(&iss, "alice"), "scope", json!("mcp:tools mcp:admin")),
    );
    let r = post(&s.url, Some(&stepped_up), Some(&session), call("admin")).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_session_belongs_to_the_subject_that_opened_it() {
    let mut s = setup(|_| {}).await;
    let iss = s.auth_server.issuer.clone();
    let alice = sign("k1", ED1, &claims(&iss, "alice"));
    let bob = sign("k1", ED1, &claims(&iss, "bob"));
    let r = post(&s.url, Some(&alice), None, initialize()).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    bounded(s.opened.recv()).await.unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let r = post(&s.url, Some(&bob), Some(&session), ping.clone()).await;
    assert_eq!(r.status(), 404, "another subject's valid token");
    // GET and DELETE too.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = bounded(
            client()
                .request(method.clone(), &s.url)
                .bearer_auth(&bob)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &session)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 404, "{method}");
    }
    // The owner, with a fresh token of hers, goes on.
    let alice_again = sign(
        "k1",
        ED1,
        &with(claims(&iss, "alice"), "iat", json!(now() + 1)),
    );
    let r = post(&s.url, Some(&alice_again), Some(&session), ping).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn an_unknown_kid_refetches_the_keys_and_a_rotation_is_accepted() {
    let s = setup(|rs| {
        rs.refetch = RefetchPolicy {
            min_interval: Duration::ZERO,
            max_age: Duration::from_secs(3600),
        };
    })
    .await;
    let iss = s.auth_server.issuer.clone();
    let rotated = sign("k2", ED2, &claims(&iss, "alice"));
    let r = post(&s.url, Some(&rotated), None, initialize()).await;
    assert_eq!(r.status(), 401);
    assert_eq!(
        challenge(&r),
        invalid_token("no key of the issuer verifies the token (kid k2)")
    );
    let before = s.auth_server.jwks_fetches();
    s.auth_server
        .set_keys(json!([jwk("k1", ED1.1), jwk("k2", ED2.1)]));
    let r = post(&s.url, Some(&rotated), None, initialize()).await;
    assert_eq!(r.status(), 200, "the rotated key is fetched and accepted");
    assert_eq!(s.auth_server.jwks_fetches(), before + 1);
    // A kid now known costs no fetch.
    let r = post(&s.url, Some(&rotated), None, initialize()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(s.auth_server.jwks_fetches(), before + 1);
}

#[tokio::test]
async fn unknown_kids_refetch_at_a_bounded_rate() {
    // The default policy: at most one fetch per 30 s.
    let s = setup(|_| {}).await;
    let iss = s.auth_server.issuer.clone();
    let good = sign("k1", ED1, &claims(&iss, "alice"));
    assert_eq!(
        post(&s.url, Some(&good), None, initialize()).await.status(),
        200
    );
    assert_eq!(s.auth_server.jwks_fetches(), 1);
    s.auth_server
        .set_keys(json!([jwk("k1", ED1.1), jwk("k2", ED2.1)]));
    for i in 0..5 {
        let made_up = sign(&format!("made-up-{i}"), ED2, &claims(&iss, "mallory"));
        assert_eq!(
            post(&s.url, Some(&made_up), None, initialize())
                .await
                .status(),
            401
        );
    }
    assert_eq!(
        s.auth_server.jwks_fetches(),
        1,
        "no fetch within the interval"
    );
}

#[tokio::test]
async fn opaque_tokens_are_introspected() {
    let auth_server = AuthServer::start().await;
    let iss = auth_server.issuer.clone();
    {
        let mut st = auth_server.state.lock().unwrap();
        st.introspection.insert(
            "opaque-good".into(),
            json!({"active": true, "sub": "carol", "client_id": "cli", "scope": "mcp:tools",
                   "aud": RESOURCE, "iss": iss, "exp": now() + 300}),
        );
        st.introspection.insert(
            "opaque-other-resource".into(),
            json!({"active": true, "sub": "carol", "scope": "mcp:tools", "aud": "https://other.example"}),
        );
    }
    let mut rs = ResourceServerConfig::new(iss.clone(), RESOURCE);
    rs.scopes = vec!["mcp:tools".into()];
    rs.introspection = Some(IntrospectionConfig::new(
        format!("{iss}/introspect"),
        "rs",
        "rs-secret",
    ));
    let mut config = HttpServerConfig::default();
    config.auth = Some(rs);
    config.json_response = true;
    let (server, acceptor) = HttpServer::bind(config).await.unwrap();
    let mut opened = serve(acceptor);
    let url = server.url();

    let r = post(&url, Some("opaque-good"), None, initialize()).await;
    assert_eq!(r.status(), 200);
    let (principal, _) = bounded(opened.recv()).await.unwrap();
    assert_eq!(principal.unwrap().subject, "carol");
    // Cached: the second use asks nothing.
    let r = post(&url, Some("opaque-good"), None, initialize()).await;
    assert_eq!(r.status(), 200);
    for (token, want) in [
        ("opaque-unknown", "the token is not active"),
        (
            "opaque-other-resource",
            "the token is not for this resource (aud)",
        ),
    ] {
        let r = post(&url, Some(token), None, initialize()).await;
        assert_eq!(r.status(), 401, "{token}");
        assert_eq!(challenge(&r), invalid_token(want), "{token}");
    }
    let st = auth_server.state.lock().unwrap();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("rs:rs-secret")
    );
    assert_eq!(
        st.introspection_auth,
        vec![basic.clone(), basic.clone(), basic]
    );
}

#[tokio::test]
async fn stateless_and_legacy_requests_need_a_token_too() {
    let mut s = setup(|_| {}).await;
    let iss = s.auth_server.issuer.clone();
    let token = sign("k1", ED1, &claims(&iss, "dave"));
    let modern = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
    .to_string();
    let send = |token: Option<String>| {
        let mut req = client()
            .post(&s.url)
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .body(modern.clone());
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    let r = bounded(send(None)).await.unwrap();
    assert_eq!(r.status(), 401);
    let r = bounded(send(Some(token.clone()))).await.unwrap();
    assert_eq!(r.status(), 200);
    let (principal, saw_authorization) = bounded(s.opened.recv()).await.unwrap();
    assert_eq!(principal.unwrap().subject, "dave");
    assert!(!saw_authorization);

    // Legacy HTTP+SSE: the stream's GET needs one.
    let sse = format!("{}/sse", s.base);
    let r = bounded(
        client()
            .get(&sse)
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 401);
    assert!(challenge(&r).contains(METADATA_URL));
    let r = bounded(
        client()
            .post(format!("{}/message?sessionId=x", s.base))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn unreachable_keys_are_503_not_a_bad_token() {
    // A port nothing listens on (taken, then let go).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut rs = ResourceServerConfig::new(format!("http://127.0.0.1:{port}"), RESOURCE);
    rs.jwks_url = Some(format!("http://127.0.0.1:{port}/jwks"));
    let mut config = HttpServerConfig::default();
    config.auth = Some(rs);
    let (server, _acceptor) = HttpServer::bind(config).await.unwrap();
    let token = sign(
        "k1",
        ED1,
        &claims(&format!("http://127.0.0.1:{port}"), "alice"),
    );
    // The fetch fails, then the next is not due: both are the server's
    // trouble (503, no challenge), never the client's token (401).
    for _ in 0..2 {
        let r = post(&server.url(), Some(&token), None, initialize()).await;
        assert_eq!(r.status(), 503);
        assert!(r.headers().get("www-authenticate").is_none());
    }
    // A token that can never be valid is refused without the keys: 401.
    let issuer = format!("http://127.0.0.1:{port}");
    let none = format!(
        "{}.{}.",
        b64url(br#"{"alg":"none"}"#),
        b64url(&serde_json::to_vec(&claims(&issuer, "alice")).unwrap())
    );
    for bad in [sign("k1", ED1, &claims("https://evil", "alice")), none] {
        let r = post(&server.url(), Some(&bad), None, initialize()).await;
        assert_eq!(r.status(), 401);
        assert!(challenge(&r).contains("invalid_token"), "{}", challenge(&r));
    }
}

#[tokio::test]
async fn a_legacy_session_belongs_to_its_subject_too() {
    let mut s = setup(|_| {}).await;
    let iss = s.auth_server.issuer.clone();
    let alice = sign("k1", ED1, &claims(&iss, "alice"));
    let bob = sign("k1", ED1, &claims(&iss, "bob"));
    let mut stream = bounded(
        client()
            .get(format!("{}/sse", s.base))
            .bearer_auth(&alice)
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(stream.status(), 200);
    let (principal, saw_authorization) = bounded(s.opened.recv()).await.unwrap();
    assert_eq!(principal.unwrap().subject, "alice");
    assert!(!saw_authorization);
    // The `endpoint` event names the message path with the session's id.
    let mut text = String::new();
    let endpoint = loop {
        let chunk = bounded(stream.chunk())
            .await
            .unwrap()
            .expect("the stream goes on");
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(line) = text.lines().find(|l| l.starts_with("data: /message")) {
            break line.trim_start_matches("data: ").to_owned();
        }
    };
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let send = |token: String| {
        client()
            .post(format!("{}{endpoint}", s.base))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(ping.clone())
            .send()
    };
    assert_eq!(bounded(send(bob)).await.unwrap().status(), 404);
    assert_eq!(bounded(send(alice)).await.unwrap().status(), 202);
}

/// `HttpServerConfig::route_auth`: routes that are resources of their own
/// (each its metadata, its audience, its introspection rule for an absent
/// `aud`), an open route, and the main path under `auth`; and what `bind`
/// refuses.
#[tokio::test]
async fn each_route_can_be_a_resource_of_its_own_or_open() {
    const RES_A: &str = "https://mcp.example/a";
    const RES_B: &str = "https://mcp.example/b";
    let auth_server = AuthServer::start().await;
    let iss = auth_server.issuer.clone();
    {
        let mut st = auth_server.state.lock().unwrap();
        for (token, aud) in [("opaque-a", Some(RES_A)), ("opaque-no-aud", None)] {
            let mut answer = json!({"active": true, "sub": "erin", "scope": "mcp:tools",
                                    "iss": iss, "exp": now() + 300});
            if let Some(aud) = aud {
                answer["aud"] = json!(aud);
            }
            st.introspection.insert(token.into(), answer);
        }
    }
    let introspected = |resource: &str, accept_missing_audience: bool| {
        let mut rs = ResourceServerConfig::new(iss.clone(), resource);
        let mut i = IntrospectionConfig::new(format!("{iss}/introspect"), "rs", "rs-secret");
        i.accept_missing_audience = accept_missing_audience;
        rs.introspection = Some(i);
        rs
    };
    let mut config = HttpServerConfig::default();
    config.auth = Some(ResourceServerConfig::new(iss.clone(), RESOURCE));
    config.routes = vec!["/a".into(), "/b".into(), "/open".into()];
    config
        .route_auth
        .insert("/a".into(), Some(introspected(RES_A, false)));
    config
        .route_auth
        .insert("/b".into(), Some(introspected(RES_B, true)));
    config.route_auth.insert("/open".into(), None);
    config.json_response = true;

    // What bind refuses: a key that is no endpoint, two resources at one
    // metadata path.
    let mut unknown = config.clone();
    unknown.route_auth.insert("/nope".into(), None);
    let e = HttpServer::bind(unknown).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("\"/nope\""), "{e}");
    let mut clash = config.clone();
    clash.route_auth.insert(
        "/b".into(),
        Some(ResourceServerConfig::new(
            iss.clone(),
            "https://mcp.example/a",
        )),
    );
    let e = HttpServer::bind(clash).await.unwrap_err();
    assert!(e.to_string().contains("would serve two resources"), "{e}");

    let (server, acceptor) = HttpServer::bind(config).await.unwrap();
    let _opened = serve(acceptor);
    let at = |path: &str| server.url_of(path);
    let base = format!("http://{}", server.local_addr());

    // Each route's challenge names its own metadata, served with its resource.
    for (path, resource) in [("/mcp", RESOURCE), ("/a", RES_A), ("/b", RES_B)] {
        let r = post(&at(path), None, None, initialize()).await;
        assert_eq!(r.status(), 401, "{path}");
        let meta = resource.replace(
            "mcp.example",
            "mcp.example/.well-known/oauth-protected-resource",
        );
        assert_eq!(
            challenge(&r),
            format!("Bearer resource_metadata=\"{meta}\""),
            "{path}"
        );
        let r = bounded(
            client()
                .get(format!("{base}/.well-known/oauth-protected-resource{path}"))
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let doc: Value = serde_json::from_str(&bounded(r.text()).await.unwrap()).unwrap();
        assert_eq!(doc["resource"], resource, "{path}");
    }
    let r = bounded(
        client()
            .get(format!("{base}/.well-known/oauth-protected-resource"))
            .send(),
    )
    .await
    .unwrap();
    let doc: Value = serde_json::from_str(&bounded(r.text()).await.unwrap()).unwrap();
    assert_eq!(doc["resource"], RESOURCE, "the root is the main path's");
    // The open route: no token, no metadata.
    let r = post(&at("/open"), None, None, initialize()).await;
    assert_eq!(r.status(), 200);
    let r = bounded(
        client()
            .get(format!("{base}/.well-known/oauth-protected-resource/open"))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 404);

    // A server whose every endpoint is open or its own: `auth`, used by
    // none, serves no metadata (the main path's and the root are 404).
    let mut unused = HttpServerConfig::default();
    unused.auth = Some(ResourceServerConfig::new(iss.clone(), RESOURCE));
    unused.routes = vec!["/a".into()];
    unused.route_auth.insert("/mcp".into(), None);
    unused.route_auth.insert(
        "/a".into(),
        Some(ResourceServerConfig::new(iss.clone(), RES_A)),
    );
    let (other, _other_acceptor) = HttpServer::bind(unused).await.unwrap();
    let other_base = format!("http://{}", other.local_addr());
    for path in ["/mcp", ""] {
        let r = bounded(
            client()
                .get(format!(
                    "{other_base}/.well-known/oauth-protected-resource{path}"
                ))
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 404, "{path:?}");
    }
    let r = bounded(
        client()
            .get(format!(
                "{other_base}/.well-known/oauth-protected-resource/a"
            ))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);

    // Audiences: A's token at A only; an answer without aud only where the
    // opt-in is on; the main path introspects nothing.
    let cases = [
        ("/a", "opaque-a", None),
        (
            "/b",
            "opaque-a",
            Some("the token is not for this resource (aud)"),
        ),
        (
            "/mcp",
            "opaque-a",
            Some("opaque tokens are not accepted here"),
        ),
        (
            "/a",
            "opaque-no-aud",
            Some("the token is not for this resource (aud)"),
        ),
        ("/b", "opaque-no-aud", None),
    ];
    for (path, token, refused) in cases {
        let r = post(&at(path), Some(token), None, initialize()).await;
        match refused {
            None => assert_eq!(r.status(), 200, "{path} {token}"),
            Some(why) => {
                assert_eq!(r.status(), 401, "{path} {token}");
                assert!(
                    challenge(&r).contains(why),
                    "{path} {token}: {}",
                    challenge(&r)
                );
            }
        }
    }
}
