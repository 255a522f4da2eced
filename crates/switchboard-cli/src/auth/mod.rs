//! `switchboard auth login|status|logout` and the automatic login of the
//! client commands and `connect`: MCP authorization for a person (issue 24,
//! item 9), over the transport's OAuth client (`switchboard::client::auth`).
//!
//! - `login URL`: discovery, registration and the authorization code grant
//!   with PKCE, the browser sent to the authorization server and brought back
//!   to a loopback listener ([`loopback`]); the tokens and the registered
//!   client kept in the login file ([`store`]).
//! - `status [URL]`: per stored login, the server, issuer, resource, client id,
//!   scopes and expiry (never a token).
//! - `logout [URL]`: the logins removed (all without a URL), their tokens
//!   revoked (RFC 7009) where the authorization server offers it, best effort.
//!
//! The client commands and `connect` ([`oauth_for`]) use a stored login first
//! (refreshed when it runs out within [`REFRESH_MARGIN`] and a refresh token
//! exists), and on a 401 refresh or log in through the browser, unless
//! `--no-login`, or no browser and no terminal can reach a person (no
//! `$BROWSER`, no `xdg-open`, stderr not a terminal): then the 401 fails at
//! once with a hint to run `switchboard auth login`.

pub mod loopback;
pub mod store;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use switchboard::client::auth::{
    unix_seconds, FollowRedirects, OAuthClient, OAuthConfig, StoredAuthorization, REFRESH_MARGIN,
};
use switchboard::client::HttpClientConfig;
use switchboard::{Client, ClientOptions};
use switchboard_protocol::types::Implementation;
use switchboard_transport::error_chain;

use loopback::{LoopbackAgent, Prompt};
use store::{canonical_url, FileStore};

/// The default bound on a browser login, in seconds.
pub const LOGIN_TIMEOUT_SECS: &str = "300";

/// How long ending the session `login` opened may take.
const CLOSE_BOUND: Duration = Duration::from_secs(3);

/// The bound on each request of the OAuth flow and on a revocation.
const REQUEST_BOUND: Duration = Duration::from_secs(30);

/// `--auth-file`.
#[derive(Debug, Clone, clap::Args)]
pub struct FileArgs {
    /// The login file. Default: $SWITCHBOARD_AUTH_FILE, else
    /// $XDG_CONFIG_HOME/switchboard/auth.json, else ~/.config/switchboard/auth.json.
    #[arg(long, value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
}

/// The login options of the client commands and `connect`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub file: FileArgs,
    /// How long a browser login may take, in seconds.
    #[arg(long, value_name = "SECONDS", default_value = LOGIN_TIMEOUT_SECS, value_parser = parse_secs)]
    pub login_timeout: Duration,
    /// Never log in through the browser: use a stored login (refreshed if it
    /// can be), else a 401 fails.
    #[arg(long)]
    pub no_login: bool,
}

/// `switchboard auth ...`.
#[derive(Debug, clap::Subcommand)]
pub enum AuthCommand {
    /// Log in to a protected MCP server with your browser and keep the tokens.
    Login {
        /// The server's URL (http:// or https://).
        url: String,
        #[command(flatten)]
        file: FileArgs,
        /// How long the browser login may take, in seconds.
        #[arg(long, value_name = "SECONDS", default_value = LOGIN_TIMEOUT_SECS, value_parser = parse_secs)]
        login_timeout: Duration,
    },
    /// Show the stored logins (never their tokens).
    Status {
        /// Only the login for this server; exit status 1 when there is none.
        url: Option<String>,
        #[command(flatten)]
        file: FileArgs,
    },
    /// Forget stored logins (every one without a URL), revoking their tokens
    /// where the authorization server offers it.
    Logout {
        /// Only the login(s) for this server.
        url: Option<String>,
        #[command(flatten)]
        file: FileArgs,
    },
}

/// A positive whole number of seconds.
fn parse_secs(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<u64>() {
        Ok(0) | Err(_) => Err("expected a positive whole number of seconds".into()),
        Ok(n) => Ok(Duration::from_secs(n)),
    }
}

/// Whether a person can be reached: `$BROWSER` set, stderr a terminal (to print
/// the URL to), or `xdg-open` on the `PATH`.
fn someone_to_ask() -> bool {
    std::env::var_os("BROWSER").is_some_and(|b| !b.is_empty())
        || std::io::stderr().is_terminal()
        || std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("xdg-open").is_file()))
}

/// The port of a stored login's loopback redirect URI.
fn stored_port(stored: Option<&StoredAuthorization>) -> Option<u16> {
    let uri = stored?.redirect_uri.as_deref()?;
    let url = url::Url::parse(uri).ok()?;
    (url.host_str() == Some("127.0.0.1")).then(|| url.port())?
}

/// An OAuth client for `url` that keeps its logins in `store`, with a loopback
/// agent (on the port of the stored login's client when free) asking as
/// `prompt` says.
fn oauth_client(
    url: &str,
    store: FileStore,
    timeout: Duration,
    prompt: Prompt,
) -> Result<Arc<OAuthClient>, String> {
    let stored = store.find(url).map_err(|e| error_chain(&e))?;
    let agent = LoopbackAgent::bind(stored_port(stored.as_ref()), timeout, prompt)
        .map_err(|e| error_chain(&e))?;
    OAuthClient::new(OAuthConfig {
        redirect_uri: agent.redirect_uri(),
        agent: Some(Arc::new(agent)),
        store: Some(Arc::new(store)),
        request_timeout: REQUEST_BOUND,
        ..OAuthConfig::default()
    })
    .map_err(|e| e.to_string())
}

/// The OAuth client of a client command or `connect` for `url`: the stored
/// login taken back (refreshed first when due), and on a 401 a refresh or a
/// browser login (see the module's documentation).
///
/// Errors (one line): the login file cannot be read, no loopback port.
pub async fn oauth_for(url: &str, login: &LoginArgs) -> Result<Arc<OAuthClient>, String> {
    let store = FileStore::locate(login.file.auth_file.clone()).map_err(|e| error_chain(&e))?;
    let hint = format!("run `switchboard auth login {url}`");
    let prompt = if login.no_login {
        Prompt::Refuse(format!("not logged in (--no-login): {hint}"))
    } else if !someone_to_ask() {
        Prompt::Refuse(format!(
            "a login is needed and no browser or terminal can reach you ($BROWSER unset, no xdg-open, stderr not a terminal): {hint}"
        ))
    } else {
        Prompt::Browser
    };
    let oauth = oauth_client(url, store, login.login_timeout, prompt)?;
    let resumed = oauth
        .resume(url, true, SystemTime::now(), REFRESH_MARGIN)
        .await
        .map_err(|e| e.to_string())?;
    tracing::debug!(?resumed, "stored login");
    Ok(oauth)
}

/// Whether `--header` values already carry an `Authorization` header (then
/// no OAuth client is used: the user's credentials are sent as given).
pub fn has_authorization(headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
}

/// Runs `switchboard auth ...`: exit 0 on success, 1 when `status URL` finds
/// no login, 2 on failure (one line `switchboard: ...`).
pub fn run(command: AuthCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchboard: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match command {
        AuthCommand::Login {
            url,
            file,
            login_timeout,
        } => runtime.block_on(login(&url, file, login_timeout)),
        AuthCommand::Status { url, file } => status(url.as_deref(), file),
        AuthCommand::Logout { url, file } => runtime.block_on(logout(url.as_deref(), file)),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}

/// `auth login URL`: a new login (the stored client reused, not its tokens),
/// by connecting with MCP so that the server's own 401 starts the flow.
async fn login(url: &str, file: FileArgs, timeout: Duration) -> Result<u8, String> {
    if url::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .is_none()
    {
        return Err(format!("{url:?} is not an http(s):// URL"));
    }
    let store = FileStore::locate(file.auth_file).map_err(|e| error_chain(&e))?;
    let oauth = oauth_client(url, store.clone(), timeout, Prompt::Browser)?;
    oauth
        .resume(url, false, SystemTime::now(), REFRESH_MARGIN)
        .await
        .map_err(|e| e.to_string())?;
    let mut config = HttpClientConfig::new(url);
    config.auth = Some(oauth.clone());
    let options = ClientOptions::new(Implementation::new(
        "switchboard-cli",
        env!("CARGO_PKG_VERSION"),
    ));
    // Bounded: the browser's wait, then room for the flow's requests.
    let bound = timeout + 4 * REQUEST_BOUND;
    let connected = tokio::time::timeout(bound, Client::connect_url(url, options, config)).await;
    let connected = match connected {
        Ok(Ok(client)) => {
            let _ = tokio::time::timeout(CLOSE_BOUND, client.close()).await;
            Ok(())
        }
        Ok(Err(e)) => Err(error_chain(&e)),
        Err(_) => Err(format!("no answer within {} s", bound.as_secs())),
    };
    if oauth.generation() == 0 {
        return match connected {
            Ok(()) => {
                println!("{url} did not ask for authorization; nothing was stored");
                Ok(0)
            }
            Err(e) => Err(format!("login to {url} failed: {e}")),
        };
    }
    if let Err(e) = connected {
        eprintln!("switchboard: logged in, but the MCP connection then failed: {e}");
    }
    let stored = store.find(url).map_err(|e| error_chain(&e))?;
    match stored {
        Some(s) => {
            println!("Logged in to {url}");
            print!("{}", describe(&s, SystemTime::now()));
            println!("  saved in:  {}", store.path().display());
        }
        None => println!(
            "Logged in to {url}, but the login could not be saved in {}",
            store.path().display()
        ),
    }
    Ok(0)
}

/// `auth status [URL]`.
fn status(url: Option<&str>, file: FileArgs) -> Result<u8, String> {
    let store = FileStore::locate(file.auth_file).map_err(|e| error_chain(&e))?;
    let mut entries = store.entries().map_err(|e| error_chain(&e))?;
    if let Some(u) = url {
        let u = canonical_url(u);
        entries.retain(|a| canonical_url(&a.server) == u);
    }
    if entries.is_empty() {
        match url {
            Some(u) => {
                println!(
                    "Not logged in to {u} (logins are kept in {})",
                    store.path().display()
                );
                return Ok(1);
            }
            None => {
                println!(
                    "No stored logins (they are kept in {})",
                    store.path().display()
                );
                return Ok(0);
            }
        }
    }
    let now = SystemTime::now();
    for a in &entries {
        println!("{}", a.server);
        print!("{}", describe(a, now));
    }
    Ok(0)
}

/// `auth logout [URL]`.
async fn logout(url: Option<&str>, file: FileArgs) -> Result<u8, String> {
    let store = FileStore::locate(file.auth_file).map_err(|e| error_chain(&e))?;
    let which = url.map(canonical_url);
    let removed = store
        .remove(|a| {
            which
                .as_ref()
                .is_none_or(|u| canonical_url(&a.server) == *u)
        })
        .map_err(|e| error_chain(&e))?;
    if removed.is_empty() {
        match url {
            Some(u) => println!("Not logged in to {u}; nothing to do"),
            None => println!("No stored logins; nothing to do"),
        }
        return Ok(0);
    }
    // Revocation needs no browser: a client that never authorizes.
    let revoker = OAuthClient::new(OAuthConfig {
        agent: Some(Arc::new(
            FollowRedirects::new(REQUEST_BOUND).map_err(|e| e.to_string())?,
        )),
        request_timeout: REQUEST_BOUND,
        ..OAuthConfig::default()
    })
    .map_err(|e| e.to_string())?;
    for a in &removed {
        let revoked = tokio::time::timeout(2 * REQUEST_BOUND, revoker.revoke(a)).await;
        let note = match revoked {
            Ok(Ok(true)) => "tokens revoked".to_owned(),
            Ok(Ok(false)) => "the authorization server offers no revocation".to_owned(),
            Ok(Err(e)) => format!("revocation failed: {e}"),
            Err(_) => "revocation did not finish in time".to_owned(),
        };
        println!(
            "Logged out of {} (client {} at {}; {note})",
            a.server, a.client_id, a.issuer
        );
    }
    Ok(0)
}

/// The lines `status` and `login` print for a login: never a token or secret.
fn describe(a: &StoredAuthorization, now: SystemTime) -> String {
    let scopes = if a.scopes.is_empty() {
        "(none)".to_owned()
    } else {
        a.scopes.join(" ")
    };
    let expires = match a.expires_at {
        None => "not stated by the server".to_owned(),
        Some(t) => {
            let now = unix_seconds(now);
            let when = utc(t);
            if t <= now {
                format!("{when} (expired)")
            } else {
                format!("{when} (in {})", human(t - now))
            }
        }
    };
    let refresh = if a.refresh_token.is_some() {
        "yes"
    } else {
        "no"
    };
    format!(
        "  issuer:    {}\n  resource:  {}\n  client id: {}\n  scopes:    {scopes}\n  expires:   {expires}\n  refresh:   {refresh}\n",
        a.issuer, a.resource, a.client_id
    )
}

/// A duration in seconds, roughly (`45 s`, `12 min`, `3 h`, `2 d`).
fn human(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        7200..172_800 => format!("{} h", secs / 3600),
        _ => format!("{} d", secs / 86_400),
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` for Unix seconds (Howard Hinnant's
/// `civil_from_days`).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rest = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_798_761_599), "2026-12-31 23:59:59 UTC");
    }

    #[test]
    fn status_lines_hold_no_token() {
        let a = StoredAuthorization {
            server: "http://h/mcp".into(),
            issuer: "http://h/".into(),
            resource: "http://h/mcp".into(),
            client_id: "cid".into(),
            client_secret: Some("SECRET-1".into()),
            token_endpoint_auth_method: None,
            redirect_uri: None,
            access_token: "SECRET-2".into(),
            refresh_token: Some("SECRET-3".into()),
            expires_at: Some(1000),
            scopes: vec!["a".into(), "b".into()],
            saved_at: 0,
        };
        let now = std::time::UNIX_EPOCH + Duration::from_secs(400);
        let text = describe(&a, now);
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("client id: cid"), "{text}");
        assert!(text.contains("scopes:    a b"), "{text}");
        assert!(text.contains("(in 10 min)"), "{text}");
        assert!(text.contains("refresh:   yes"), "{text}");
        let later = std::time::UNIX_EPOCH + Duration::from_secs(2000);
        assert!(describe(&a, later).contains("(expired)"));
    }

    #[test]
    fn stored_port_only_from_a_loopback_redirect() {
        let mut a = StoredAuthorization {
            server: String::new(),
            issuer: String::new(),
            resource: String::new(),
            client_id: String::new(),
            client_secret: None,
            token_endpoint_auth_method: None,
            redirect_uri: Some("http://127.0.0.1:4567/callback".into()),
            access_token: String::new(),
            refresh_token: None,
            expires_at: None,
            scopes: vec![],
            saved_at: 0,
        };
        assert_eq!(stored_port(Some(&a)), Some(4567));
        a.redirect_uri = Some("https://example.com:4567/cb".into());
        assert_eq!(stored_port(Some(&a)), None);
        a.redirect_uri = None;
        assert_eq!(stored_port(Some(&a)), None);
        assert_eq!(stored_port(None), None);
    }
}
