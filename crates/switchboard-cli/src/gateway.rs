//! `switchboard gateway --config FILE`: the configuration file (module
//! `config`) turned into a running [`Gateway`], served until SIGTERM or Ctrl-C.
//!
//! This module must not hold gateway logic: it translates the validated file
//! into [`GatewayConfig`] and runs it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use switchboard_gateway::{
    Allowlist, Connector, Gateway, GatewayConfig, GatewayRoute, GatewayUpstream,
};
use switchboard_transport::http::client::HttpClientConfig;
use switchboard_transport::http::sse_client::SseClientConfig;
use switchboard_transport::stdio::ChildConfig;

use crate::config::{self, Allow, HeaderSource, HttpTransport, Target};
use crate::signals::{Inherited, Signals, Stop};

/// `switchboard gateway`.
#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// The configuration file: the gateway's own TOML, YAML or JSON (`switchboard
    /// config schema`), an `mcpServers` file (Claude Desktop, Cursor) or VS
    /// Code's `servers`.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The address to listen on. Default: the file's `listen`, else
    /// 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
}

/// The default listen address: loopback only.
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The gateway's configuration from a validated file: upstream headers read
/// from the environment or files now. Errors: one line each.
fn gateway_config(file: &config::GatewayConfig) -> Result<GatewayConfig, Vec<String>> {
    let mut problems = Vec::new();
    let mut upstreams = Vec::new();
    for u in &file.upstreams {
        let connector = match &u.target {
            Target::Stdio {
                command,
                args,
                env,
                cwd,
                child,
            } => {
                if *child == config::ChildMode::PerSession {
                    problems.push(format!(
                        "upstreams.{}: child = \"per-session\" is not served by the gateway yet (use `switchboard bridge` for a child per session)",
                        u.name
                    ));
                    continue;
                }
                let mut c = ChildConfig::new(u.name.clone(), command).args(args);
                for (k, v) in env {
                    c = c.env(k, v);
                }
                c.current_dir = cwd.clone();
                if let Err(e) = c.find_program() {
                    problems.push(format!("upstreams.{}: cannot run {command:?}: {e}", u.name));
                    continue;
                }
                Connector::Stdio(c)
            }
            Target::Http {
                url,
                transport,
                headers,
            } => {
                let mut resolved = Vec::new();
                for (name, source) in headers {
                    let value = match source {
                        HeaderSource::Value(v) => Ok(v.clone()),
                        HeaderSource::Env(var) => std::env::var(var)
                            .map_err(|_| format!("the environment variable {var} is not set")),
                        HeaderSource::File(path) => std::fs::read_to_string(path)
                            .map(|s| s.trim().to_owned())
                            .map_err(|e| format!("cannot read {}: {e}", path.display())),
                    };
                    match value {
                        Ok(v) => resolved.push((name.clone(), v)),
                        Err(e) => {
                            problems.push(format!("upstreams.{}.headers.{name}: {e}", u.name))
                        }
                    }
                }
                match transport {
                    HttpTransport::Sse => {
                        let mut c = SseClientConfig::default();
                        for (name, value) in resolved {
                            match (
                                http::HeaderName::from_bytes(name.as_bytes()),
                                http::HeaderValue::from_str(&value),
                            ) {
                                (Ok(n), Ok(v)) => {
                                    c.headers.append(n, v);
                                }
                                _ => problems.push(format!(
                                    "upstreams.{}.headers.{name}: not a valid header",
                                    u.name
                                )),
                            }
                        }
                        Connector::Sse(url.clone(), c)
                    }
                    // The era is found by the handshake (2026-07-28 or
                    // Streamable HTTP).
                    HttpTransport::Auto
                    | HttpTransport::StreamableHttp
                    | HttpTransport::Stateless => {
                        let mut c = HttpClientConfig::new(url.clone());
                        c.headers = resolved;
                        c.standalone_stream = true;
                        Connector::StreamableHttp(c)
                    }
                }
            }
        };
        let mut g = GatewayUpstream::new(u.name.clone(), connector);
        g.prefix = u.prefix.clone();
        g.list_timeout = u.list_timeout;
        upstreams.push(g);
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    // The default route first: it takes the listener's main path.
    let mut routes: Vec<GatewayRoute> = file
        .routes
        .iter()
        .map(|r| {
            let mut route = GatewayRoute::new(r.name.clone(), r.path.clone(), r.upstreams.clone());
            route.tools = match &r.tools {
                Allow::All => Allowlist::All,
                Allow::Only(set) => Allowlist::only(set.iter().cloned()),
            };
            route
        })
        .collect();
    routes.sort_by_key(|r| r.path != config::DEFAULT_ROUTE_PATH);
    Ok(GatewayConfig::new(upstreams, routes))
}

/// Runs `switchboard gateway` until SIGTERM or Ctrl-C (drained, exit 0; a
/// second signal stops at once). Exit 2 when the file is invalid or the
/// listener cannot bind.
pub fn run_gateway(args: GatewayArgs) -> ExitCode {
    crate::bridge::init_tracing();
    let file = match config::load(&args.config) {
        Ok(c) => c,
        Err(problems) => {
            for p in &problems {
                let sep = if p.pos.is_some() { ":" } else { ": " };
                eprintln!("{}{sep}{p}", args.config.display());
            }
            eprintln!(
                "switchboard: {}: {} problem(s)",
                args.config.display(),
                problems.len()
            );
            return ExitCode::from(2);
        }
    };
    let mut config = match gateway_config(&file) {
        Ok(c) => c,
        Err(problems) => {
            for p in problems {
                eprintln!("{}: {p}", args.config.display());
            }
            return ExitCode::from(2);
        }
    };
    let listen = args
        .listen
        .or(file.listen)
        .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("a valid address"));
    config.http.bind = listen;
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchboard: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async move {
        let mut signals =
            match Signals::watch(&[Stop::Interrupt, Stop::Terminate], Inherited::Overridden) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("switchboard: cannot watch signals: {e}");
                    return ExitCode::from(2);
                }
            };
        let paths: Vec<String> = config.routes.iter().map(|r| r.path.clone()).collect();
        let gateway = match Gateway::start(config).await {
            Ok(g) => g,
            Err(e) => {
                eprintln!("switchboard: cannot listen on {listen}: {e}");
                return ExitCode::from(2);
            }
        };
        let mut lines = vec![format!(
            "switchboard gateway: {} upstream(s) from {}",
            file.upstreams.len(),
            args.config.display()
        )];
        for p in &paths {
            lines.push(format!("  route {p}: {}", gateway.url_of(p)));
        }
        let base = format!("http://{}", gateway.local_addr());
        lines.push(format!("  health: {base}/healthz   readiness: {base}/readyz"));
        println!("{}", lines.join("\n"));
        signals.next().await;
        eprintln!("switchboard gateway: stopping (draining requests in flight; a second signal stops at once)");
        tokio::select! {
            () = gateway.shutdown() => ExitCode::SUCCESS,
            stop = signals.next() => {
                eprintln!("switchboard gateway: second signal: stopped at once");
                ExitCode::from(stop.exit_code())
            }
        }
    })
}
