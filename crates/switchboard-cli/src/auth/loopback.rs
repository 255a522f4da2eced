//! The browser and loopback agent of a person's login: the authorization URL
//! printed on stderr and opened with `$BROWSER` (else `xdg-open`); the
//! authorization server's redirect received by a listener on `127.0.0.1`
//! (RFC 8252 §7.3: a loopback redirect URI on an ephemeral port,
//! `http://127.0.0.1:PORT/callback`), its `state` checked, the browser answered
//! with a small page, the redirect URL handed back to the OAuth client (which
//! checks `state` and `iss` again and redeems the code).
//!
//! A callback whose `state` is not the request's (a forged or stale link) is
//! answered 400 and the wait goes on; other paths get 404. Every wait is
//! bounded: the whole login by the agent's timeout, each connection's request
//! head by [`READ_BOUND`]. A login that failed is not asked for again by the
//! same agent (a command's next connection attempt, in another era, fails at
//! once with the same reason instead of opening the browser again).

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use switchboard::client::auth::{AgentFuture, AuthorizationAgent, AuthorizationRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path of the redirect URI.
pub const CALLBACK_PATH: &str = "/callback";

/// How long one connection has to send its request head.
pub const READ_BOUND: Duration = Duration::from_secs(10);

/// The largest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;

/// Why the listener could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on 127.0.0.1 for the login's redirect")]
pub struct BindError(#[source] pub std::io::Error);

/// Whether, and how, a person can be asked to log in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// Print the URL and open the browser.
    Browser,
    /// Refuse at once with this reason (no automatic login wanted or possible).
    Refuse(String),
}

/// The agent: a listener bound on `127.0.0.1` and how long a login may take.
#[derive(Debug)]
pub struct LoopbackAgent {
    listener: StdListener,
    port: u16,
    timeout: Duration,
    prompt: Prompt,
    /// Why an earlier login failed, if one did.
    failed: Mutex<Option<String>>,
}

impl LoopbackAgent {
    /// Binds `127.0.0.1:preferred` when given and free (the port an earlier
    /// login's client was registered with, so that client can be used again),
    /// else an ephemeral port.
    ///
    /// Errors: [`BindError`] when no port can be bound.
    pub fn bind(
        preferred: Option<u16>,
        timeout: Duration,
        prompt: Prompt,
    ) -> Result<Self, BindError> {
        let listener = preferred
            .filter(|p| *p != 0)
            .and_then(|p| StdListener::bind((Ipv4Addr::LOCALHOST, p)).ok())
            .map_or_else(|| StdListener::bind((Ipv4Addr::LOCALHOST, 0)), Ok)
            .map_err(BindError)?;
        listener.set_nonblocking(true).map_err(BindError)?;
        let port = listener.local_addr().map_err(BindError)?.port();
        Ok(LoopbackAgent {
            listener,
            port,
            timeout,
            prompt,
            failed: Mutex::new(None),
        })
    }

    /// `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// One login, or the failure of an earlier one.
    async fn once(&self, request: &AuthorizationRequest) -> Result<String, String> {
        let earlier = self
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(why) = earlier {
            return Err(why);
        }
        let result = self.run(request).await;
        if let Err(why) = &result {
            *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
        }
        result
    }

    async fn run(&self, request: &AuthorizationRequest) -> Result<String, String> {
        if let Prompt::Refuse(why) = &self.prompt {
            return Err(why.clone());
        }
        let state = url::Url::parse(&request.url)
            .ok()
            .and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned())
            })
            .ok_or("the authorization URL has no state")?;
        let listener = self
            .listener
            .try_clone()
            .and_then(TcpListener::from_std)
            .map_err(|e| format!("cannot use the redirect listener: {e}"))?;
        eprintln!(
            "switchboard: log in with your browser; if it does not open, open this URL:\n\n    {}\n\nswitchboard: waiting up to {} s for the redirect to {}",
            request.url,
            self.timeout.as_secs(),
            self.redirect_uri()
        );
        if let Err(e) = open_browser(&request.url) {
            eprintln!(
                "switchboard: the browser could not be started ({e}); open the URL above yourself"
            );
        }
        tokio::time::timeout(
            self.timeout,
            wait_for_callback(&listener, &state, &request.redirect_uri),
        )
        .await
        .map_err(|_| {
            format!(
                "no redirect came to {} within {} s: the login was not completed",
                self.redirect_uri(),
                self.timeout.as_secs()
            )
        })
    }
}

impl AuthorizationAgent for LoopbackAgent {
    fn authorize<'a>(&'a self, request: &'a AuthorizationRequest) -> AgentFuture<'a> {
        Box::pin(self.once(request))
    }
}

/// Accepts connections until one brings the callback with `state`; answers
/// each. Returns `redirect_uri?<its query>`.
async fn wait_for_callback(listener: &TcpListener, state: &str, redirect_uri: &str) -> String {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        match tokio::time::timeout(READ_BOUND, answer(stream, peer, state)).await {
            Ok(Some(query)) => return format!("{redirect_uri}?{query}"),
            Ok(None) => {}
            Err(_) => {
                tracing::debug!(%peer, "a connection to the redirect listener sent no request in time")
            }
        }
    }
}

/// Reads one request and answers it; the query when it is the callback with
/// the right `state`.
async fn answer(mut stream: TcpStream, peer: SocketAddr, state: &str) -> Option<String> {
    let head = read_head(&mut stream).await?;
    let target = head
        .lines()
        .next()
        .and_then(|l| {
            let mut parts = l.split(' ');
            match (parts.next(), parts.next()) {
                (Some("GET"), Some(t)) => Some(t.to_owned()),
                _ => None,
            }
        })
        .unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    if path != CALLBACK_PATH {
        respond(
            &mut stream,
            404,
            "Not found",
            "This is switchboard's login listener.",
        )
        .await;
        return None;
    }
    let params: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if get("state") != Some(state) {
        eprintln!("switchboard: refused a redirect whose state is not this login's (from {peer})");
        respond(
            &mut stream,
            400,
            "Login refused",
            "This redirect does not belong to the login in progress (its state does not match), so it was refused.",
        )
        .await;
        return None;
    }
    match get("error") {
        Some(error) => {
            let description = get("error_description").unwrap_or_default();
            respond(
                &mut stream,
                200,
                "Login failed",
                &format!("The authorization server answered {error}: {description}. You can close this tab."),
            )
            .await;
        }
        None => {
            respond(
                &mut stream,
                200,
                "Logged in",
                "switchboard is authorized. You can close this tab and return to the terminal.",
            )
            .await;
        }
    }
    Some(query.to_owned())
}

/// The request head (up to the blank line), at most [`MAX_HEAD`] bytes.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > MAX_HEAD {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).ok()
}

/// Writes a small HTML page with `status` and closes.
async fn respond(stream: &mut TcpStream, status: u16, title: &str, text: &str) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        _ => "Not Found",
    };
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head><body><h1>{t}</h1><p>{x}</p></body></html>\n",
        t = escape(title),
        x = escape(text)
    );
    let mut out = String::new();
    let _ = write!(
        out,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(out.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// `text` safe inside HTML.
fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            c => s.push(c),
        }
    }
    s
}

/// The browser commands: each `$BROWSER` entry (`:`-separated; words split on
/// whitespace; `%s` is the URL, else it is appended), else `xdg-open URL`.
pub fn browser_commands(browser: Option<&str>, url: &str) -> Vec<Vec<String>> {
    let command = |entry: &str| {
        let mut words: Vec<String> = entry.split_whitespace().map(str::to_owned).collect();
        if words.iter().any(|w| w.contains("%s")) {
            for w in &mut words {
                *w = w.replace("%s", url);
            }
        } else {
            words.push(url.to_owned());
        }
        words
    };
    match browser.filter(|b| !b.trim().is_empty()) {
        Some(b) => b
            .split(':')
            .filter(|e| !e.trim().is_empty())
            .map(command)
            .collect(),
        None => vec![vec!["xdg-open".to_owned(), url.to_owned()]],
    }
}

/// Starts the first browser command that starts (its stdio detached: stdout
/// may be a JSON-RPC stream); it is reaped by a thread of its own.
fn open_browser(url: &str) -> Result<(), String> {
    let browser = std::env::var("BROWSER").ok();
    let mut last = String::from("no browser command");
    for words in browser_commands(browser.as_deref(), url) {
        let Some((program, args)) = words.split_first() else {
            continue;
        };
        match Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(mut child) => {
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
                return Ok(());
            }
            Err(e) => last = format!("{program}: {e}"),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_commands_from_the_environment() {
        let u = "http://a/?x=1";
        assert_eq!(
            browser_commands(None, u),
            vec![vec!["xdg-open".to_owned(), u.to_owned()]]
        );
        assert_eq!(
            browser_commands(Some("firefox --new-tab:lynx"), u),
            vec![
                vec!["firefox".to_owned(), "--new-tab".to_owned(), u.to_owned()],
                vec!["lynx".to_owned(), u.to_owned()]
            ]
        );
        assert_eq!(
            browser_commands(Some("open -u %s --now"), u),
            vec![vec![
                "open".to_owned(),
                "-u".to_owned(),
                u.to_owned(),
                "--now".to_owned()
            ]]
        );
    }

    #[test]
    fn pages_are_escaped() {
        assert_eq!(
            escape("<a href='x'>&\""),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;"
        );
    }

    /// The listener refuses a wrong state, 404s other paths, and hands back the
    /// callback with the right one (real sockets on 127.0.0.1).
    #[tokio::test]
    async fn state_is_checked_on_the_callback() {
        let agent = LoopbackAgent::bind(None, Duration::from_secs(30), Prompt::Browser).unwrap();
        let listener = TcpListener::from_std(agent.listener.try_clone().unwrap()).unwrap();
        let port = agent.port;
        let redirect = agent.redirect_uri();
        let waiting =
            tokio::spawn(async move { wait_for_callback(&listener, "good", &redirect).await });
        async fn get(port: u16, target: &str) -> String {
            let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
                .await
                .unwrap();
            s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        }
        let bound = Duration::from_secs(10);
        let r = tokio::time::timeout(bound, get(port, "/favicon.ico"))
            .await
            .unwrap();
        assert!(r.starts_with("HTTP/1.1 404"), "{r}");
        let r = tokio::time::timeout(bound, get(port, "/callback?code=c&state=bad"))
            .await
            .unwrap();
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        let r = tokio::time::timeout(bound, get(port, "/callback?code=c"))
            .await
            .unwrap();
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        let r = tokio::time::timeout(bound, get(port, "/callback?code=c&state=good"))
            .await
            .unwrap();
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        let url = tokio::time::timeout(bound, waiting).await.unwrap().unwrap();
        assert_eq!(
            url,
            format!("http://127.0.0.1:{port}/callback?code=c&state=good")
        );
    }

    #[tokio::test]
    async fn a_refusing_agent_fails_at_once() {
        let agent = LoopbackAgent::bind(
            None,
            Duration::from_secs(30),
            Prompt::Refuse("no login here".into()),
        )
        .unwrap();
        let request = AuthorizationRequest {
            url: "http://127.0.0.1:1/authorize?state=s".into(),
            redirect_uri: agent.redirect_uri(),
        };
        assert_eq!(
            agent.authorize(&request).await.unwrap_err(),
            "no login here"
        );
    }
}
