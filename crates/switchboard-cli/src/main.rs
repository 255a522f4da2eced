//! `switchboard`: the command-line front of Switchboard.
//!
//! Commands (each in its own module):
//! - `decode` ([`decode`]): re-encode newline-delimited JSON-RPC and answer bad lines
//!   as the spec says;
//! - `tools`, `resources`, `prompts`, `ping` ([`client`]): a terminal MCP client for
//!   a server given as a URL or as `-- CMD [ARGS...]` (stdio);
//! - `auth login|status|logout` ([`auth`]): log in to a protected server with the
//!   browser, show or forget the stored logins;
//! - `example-server` ([`example_server`]): a demonstration MCP server on stdio or
//!   Streamable HTTP;
//! - `bridge` and `connect` ([`bridge`]): stdio ⇄ HTTP;
//! - `gateway` ([`gateway`]): many servers behind one endpoint, from a file;
//! - `config` ([`config`]): check a gateway configuration file, print its schema;
//! - `lock`, `keygen` ([`client::lock`]): lock, check, approve and sign tool definitions;
//! - `completions SHELL`: the shell completion script for bash, zsh, fish,
//!   PowerShell or elvish on stdout, generated from this very definition
//!   (`clap_complete`), so it never lags behind a flag.
//!
//! Exit status: 0 on success; 1 when a called tool returned `isError` (or `auth
//! status URL` finds no login); 2 on a
//! protocol or transport error or bad command-line input; each failure with one
//! line `switchboard: ...` on stderr; 128 + the signal's number (130 for Ctrl-C,
//! 143 for SIGTERM, 129 for SIGHUP) when a signal ended a client command or forced
//! a draining `bridge` to stop ([`signals`]). The exception: a flag or subcommand
//! that does not parse gets clap's usage error (`error: ...`, then the usage and
//! a `--help` hint, a few lines), also with status 2; so does no command at all,
//! which prints the whole usage (commands and options) on stderr.
//!
//! Diagnostics go to stderr through `tracing`, filtered by `RUST_LOG` when set
//! (`target=level,...` directives, e.g. `switchboard=debug`), else by `-v`
//! (client commands: silent, `-v` info, `-vv` debug, `-vvv` trace; `example-server`:
//! info, `-v` debug, `-vv` trace). The bridge commands set up their own.
//!
//! This binary must not hold protocol logic of its own: it calls the
//! `switchboard`, `switchboard-transport` and `switchboard-protocol` crates.

// The print macros of std panic on a failed write; these replace them in
// every module below: with a full or closed stdout or stderr (`| head`,
// `>/dev/full`, `2>/dev/full`) the text is lost, not the command. Where the
// output is the command's work, it writes through [`to_stdout`] instead.
macro_rules! eprintln {
    ($($a:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($a)*);
    }};
}
macro_rules! eprint {
    ($($a:tt)*) => {{
        use std::io::Write as _;
        let mut err = std::io::stderr();
        let _ = write!(err, $($a)*).and_then(|()| err.flush());
    }};
}
macro_rules! println {
    ($($a:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($a)*);
    }};
}
macro_rules! print {
    ($($a:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($a)*);
    }};
}

mod audit;
mod auth;
mod auth_args;
mod bridge;
mod client;
mod config;
mod decode;
mod example_server;
mod files;
mod gateway;
mod log_writer;
mod serve_args;
mod signals;
mod telemetry;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use clap::{ArgAction, CommandFactory, Parser, Subcommand};
use switchboard_protocol::ProtocolVersion;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// `--version`: the package's version and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("SWITCHBOARD_COMMIT"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "switchboard",
    version = VERSION,
    about = "MCP on the wire: a client (tools, resources, prompts), an example server, \
             the bridge (a stdio server over HTTP) and connect, the gateway (many \
             servers behind one endpoint) and the drift guard's lock",
    // No command: the usage on stderr, exit 2 (clap's usage error), as a CLI
    // with subcommands does; nothing is run by default.
    arg_required_else_help = true
)]
struct Cli {
    /// More diagnostics on stderr (repeatable); `RUST_LOG` overrides.
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode newline-delimited JSON-RPC messages and write them back out re-encoded.
    Decode {
        /// A file of messages, one per line; `-` for standard input. Default: the
        /// built-in sample.
        file: Option<PathBuf>,
        /// The protocol revision whose batching rule applies (only 2025-03-26
        /// allows batches).
        #[arg(long, default_value = "2025-11-25")]
        revision: ProtocolVersion,
    },
    /// List or call a server's tools.
    #[command(subcommand)]
    Tools(client::ToolsCommand),
    /// List, or read, a server's resources.
    #[command(subcommand)]
    Resources(client::ResourcesCommand),
    /// List or get a server's prompts.
    #[command(subcommand)]
    Prompts(client::PromptsCommand),
    /// Log in to a protected server with your browser, show or forget logins.
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// Check that a server answers (`ping`).
    Ping(client::PingArgs),
    /// Run the built-in example MCP server (stdio, or Streamable HTTP with --http).
    ExampleServer(example_server::ExampleServerArgs),
    /// Serve a stdio MCP server over HTTP.
    Bridge(Box<bridge::BridgeArgs>),
    /// Serve a remote HTTP MCP server on stdio.
    Connect(bridge::ConnectArgs),
    /// Serve many MCP servers behind one endpoint, from a configuration file.
    Gateway(Box<gateway::GatewayArgs>),
    /// Lock a server's tool, prompt and template definitions, or check it
    /// against the lock (`--check`).
    Lock(Box<client::lock::LockArgs>),
    /// Make an Ed25519 key pair for signing locks (`lock sign`, `--lock-key`).
    Keygen(client::lock::KeygenArgs),
    /// Check a gateway configuration file, or print its JSON Schema.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Check an audit trail (`--audit FILE`).
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Print the shell completion script for SHELL on stdout (e.g. `switchboard
    /// completions bash > ~/.local/share/bash-completion/completions/switchboard`).
    Completions {
        /// The shell: bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
}

/// Sends `tracing` output to stderr: `RUST_LOG` (as [`Targets`] directives) when set
/// and valid, else `default`.
fn init_tracing(default: &str) {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.is_empty())
        .and_then(|s| match Targets::from_str(&s) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("switchboard: ignoring RUST_LOG={s:?}: {e}");
                None
            }
        })
        .unwrap_or_else(|| Targets::from_str(default).unwrap_or_default());
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(log_writer::LogStderr)
        .with_ansi(false);
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init();
}

/// The default filter of the client commands for `-v` given `verbose` times.
fn client_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "off",
        1 => "info",
        2 => "debug",
        _ => "trace",
    }
}

/// The default filter of `example-server` for `-v` given `verbose` times.
fn server_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    }
}

/// The process's allocator: mimalloc. The bridge allocates and frees a few small
/// blocks per forwarded message (a task, channels, map entries, buffers); glibc's
/// malloc spent about a tenth of the shared bridge's samples on them (`perf`, 64
/// sessions). See docs/benchmarks.md for the measured effect.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Decode { file, revision } => match decode::decode(file, revision) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("switchboard: {e:#}");
                ExitCode::from(2)
            }
        },
        Command::Tools(c) => {
            init_tracing(client_filter(cli.verbose));
            client::run_tools(c)
        }
        Command::Resources(c) => {
            init_tracing(client_filter(cli.verbose));
            client::run_resources(c)
        }
        Command::Prompts(c) => {
            init_tracing(client_filter(cli.verbose));
            client::run_prompts(c)
        }
        Command::Auth(c) => {
            init_tracing(client_filter(cli.verbose));
            auth::run(c)
        }
        Command::Ping(a) => {
            init_tracing(client_filter(cli.verbose));
            client::run_ping(a)
        }
        Command::ExampleServer(a) => {
            init_tracing(server_filter(cli.verbose));
            run_example_server(a)
        }
        Command::Bridge(a) => bridge::run_bridge(*a),
        Command::Connect(a) => bridge::run_connect(a),
        Command::Gateway(a) => gateway::run_gateway(*a),
        Command::Config(c) => config::run(c),
        Command::Audit(c) => audit::run(c),
        Command::Keygen(a) => client::lock::keygen(a),
        Command::Lock(a) => {
            init_tracing(client_filter(cli.verbose));
            client::lock::run(*a)
        }
        Command::Completions { shell } => {
            // Generated into memory (clap_complete panics on a failed write),
            // then written.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "switchboard", &mut script);
            match to_stdout(&script) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("switchboard: the completion script was not written: stdout: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Writes `bytes` to stdout and flushes it. A reader that went away (`|
/// head`: EPIPE) is not an error, as what it did not read it did not want;
/// any other failure (`>/dev/full`: ENOSPC) is.
pub(crate) fn to_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Runs the example server on a multi-threaded runtime and exits outright when it
/// is done (stdin may still be held by a blocking read: Tokio's caveat).
fn run_example_server(args: example_server::ExampleServerArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchboard: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = match runtime.block_on(example_server::run(args)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("switchboard: example-server: {e}");
            2
        }
    };
    std::process::exit(code);
}
