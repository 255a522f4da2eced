//! `loadgen`: the bridge benchmark's load generator (issue 4; run by `bench/run`).
//!
//! ```text
//! loadgen --url http://127.0.0.1:PORT/mcp --sessions N --duration SECS [--warmup SECS] [--pid PID] [--label L] [--tool NAME]
//! loadgen --mode stdio --sessions N --duration SECS [--warmup SECS] -- CMD ARGS...
//! ```
//!
//! `streamable` (default): opens N Streamable HTTP sessions (MCP 2025-11-25,
//! "Transports → Streamable HTTP"), each on its own keep-alive HTTP/1.1 connection
//! with TCP_NODELAY: `initialize` (the session's `Mcp-Session-Id` from the reply),
//! `notifications/initialized`, then a loop of `tools/call echo`, one request in
//! flight per session, each with its own text (`s<session>-<counter>`). Replies
//! may be `application/json` or `text/event-stream`. Each session's task drives
//! its own connection (hyper's client connection future is polled in that task,
//! not one of its own) and checks each reply from its JSON text into borrowed
//! fields, so the client spends as little as it can of the CPU it shares with the
//! server under test.
//!
//! `stdio`: spawns CMD and drives it over its pipes (MCP 2025-11-25, "Transports
//! → stdio"): one `initialize`, then N loops ("sessions") of `tools/call echo`
//! multiplexed on the one pipe with distinct ids, one in flight per loop: the
//! upstream driven directly, the lower limit of any bridge.
//!
//! Every reply is checked against its request (same id, exactly one text block
//! with exactly the request's text): anything else, a reply carrying another
//! session's content included, counts as an error, as do HTTP errors and broken
//! connections (a session whose connection fails stops). `--tool NAME` calls
//! an echo tool of another name (a gateway's `a__echo`), checked the same way.
//! Only calls that finish inside the measured window (after `--warmup`) count; latencies are exact
//! nearest-rank percentiles. With `--pid` (default in stdio mode: the child) the
//! process's CPU seconds (utime+stime, children excluded) over the window and its
//! peak RSS are read from `/proc`, as are those of its descendants.
//!
//! Prints one JSON object on stdout (see [`Report`]); exit 0 when it could measure
//! (errors are in the report), 2 when it could not start.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use clap::{Parser, ValueEnum};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, HOST};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::Value;
use switchboard_bench::{echo, proc_stat, reply, stats};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// How the load reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    /// Streamable HTTP sessions against `--url`.
    Streamable,
    /// The command after `--`, driven over its stdin and stdout.
    Stdio,
}

#[derive(Debug, Parser)]
#[command(
    name = "loadgen",
    about = "Drives tools/call echo round trips through an MCP server and reports JSON."
)]
struct Args {
    /// The Streamable HTTP endpoint (streamable mode).
    #[arg(long)]
    url: Option<String>,
    /// streamable (HTTP sessions) or stdio (spawn the command after `--`).
    #[arg(long, value_enum, default_value = "streamable")]
    mode: Mode,
    /// Concurrent sessions (one call in flight each).
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of load before the measured window.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// The server process to sample in /proc (default in stdio mode: the child).
    #[arg(long)]
    pid: Option<u32>,
    /// A name for the target, copied into the report.
    #[arg(long, default_value = "")]
    label: String,
    /// Seconds one request (or session setup) may take before it counts as an error.
    #[arg(long, default_value_t = 10.0)]
    request_timeout: f64,
    /// Threads of the load generator itself: 1 runs everything on tokio's
    /// current-thread runtime; more, on its work-stealing runtime with that many
    /// workers.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The tool called: an echo tool (`{"text": T}` answered with one text block
    /// T), `echo` by default; e.g. `a__echo` through a gateway.
    #[arg(long, default_value = "echo")]
    tool: String,
    /// The stdio command and its arguments (stdio mode).
    #[arg(last = true)]
    cmd: Vec<String>,
}

/// CPU and memory of the sampled server process over the measured window.
#[derive(Debug, Serialize)]
struct ProcReport {
    pid: u32,
    /// utime+stime over the window, s (children excluded).
    cpu_s: f64,
    /// `cpu_s` per 1,000 counted calls.
    cpu_s_per_1000_calls: f64,
    /// VmHWM at the end of the window (peak since the process started), MiB.
    peak_rss_mib: f64,
    /// VmRSS at the end of the window, MiB.
    rss_mib: f64,
    /// Context switches of the process's threads over the window, per counted call
    /// (each is a sleep and a wake-up: the cost of cross-thread hand-offs).
    context_switches_per_call: f64,
    /// Descendant processes alive at the end of the window.
    descendants: usize,
    /// utime+stime of the descendants alive at both ends of the window, s.
    descendants_cpu_s: f64,
    /// Sum of the descendants' VmRSS at the end of the window, MiB.
    descendants_rss_mib: f64,
}

/// Where the machine's CPU went over the measured window: the load generator's
/// own share and every process's, so that a target's CPU per call can be read
/// against the whole budget (two cores shared by load generator, server and
/// upstream).
#[derive(Debug, Serialize)]
struct MachineReport {
    /// The load generator's own utime+stime over the window, s per 1,000 counted
    /// calls.
    loadgen_cpu_s_per_1000_calls: f64,
    /// Busy time of every CPU (user, nice, system, irq, softirq; `/proc/stat`)
    /// over the window, s per 1,000 counted calls: load generator, server,
    /// upstream and anything else running.
    busy_cpu_s_per_1000_calls: f64,
    /// Idle time (idle + iowait) over all CPU time of the window, 0 to 1.
    idle_share: f64,
    /// Time the hypervisor took from our CPUs (steal) over all CPU time of the
    /// window, 0 to 1.
    steal_share: f64,
}

/// The JSON report printed on stdout.
#[derive(Debug, Serialize)]
struct Report {
    label: String,
    mode: Mode,
    target: String,
    sessions: usize,
    sessions_ready: usize,
    warmup_s: f64,
    duration_s: f64,
    /// Calls that finished inside the window and passed the check.
    requests: u64,
    requests_per_s: f64,
    latency: stats::Summary,
    /// Failed checks, HTTP errors, timeouts and broken sessions (setup included).
    errors: u64,
    error_samples: Vec<String>,
    server: Option<ProcReport>,
    /// `None` when `/proc` could not be read.
    machine: Option<MachineReport>,
}

/// Counts and latencies shared by the session loops.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    errors: u64,
    samples: Vec<String>,
}

impl Tally {
    fn error(&mut self, what: String) {
        self.errors += 1;
        if self.samples.len() < 8 {
            self.samples.push(what);
        }
    }
}

/// The measured window and the deadline of every loop.
#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
    request_timeout: Duration,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // One thread: tokio's current-thread runtime (no hand-offs between threads);
    // more: its work-stealing runtime with that many workers.
    let built = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    };
    let runtime = match built {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loadgen: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(report) => {
            println!(
                "{}",
                serde_json::to_string(&report).expect("the report serializes")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadgen: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<Report> {
    if args.sessions == 0 || args.duration <= 0.0 || args.warmup < 0.0 {
        bail!("--sessions must be positive, --duration positive and --warmup not negative");
    }
    let request_timeout = Duration::from_secs_f64(args.request_timeout);
    let tool: Arc<str> = Arc::from(args.tool.as_str());
    let tally = Arc::new(Mutex::new(Tally::default()));
    let (target, loops, pid, _child) = match args.mode {
        Mode::Streamable => {
            let url = args
                .url
                .clone()
                .ok_or_else(|| anyhow!("streamable mode needs --url"))?;
            let target = Target::parse(&url)?;
            let loops =
                open_http_sessions(&target, &tool, args.sessions, request_timeout, &tally).await;
            (url, loops, args.pid, None)
        }
        Mode::Stdio => {
            let (child, pid, loops) =
                open_stdio(&args.cmd, &tool, args.sessions, request_timeout).await?;
            (
                args.cmd.join(" "),
                loops,
                args.pid.or(Some(pid)),
                Some(child),
            )
        }
    };
    let sessions_ready = loops.len();
    let now = Instant::now();
    let window = Window {
        start: now + Duration::from_secs_f64(args.warmup),
        end: now + Duration::from_secs_f64(args.warmup + args.duration),
        request_timeout,
    };
    let mut tasks = Vec::new();
    for (i, l) in loops.into_iter().enumerate() {
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            match l {
                Loop::Http(session) => session.run(i, window, tally).await,
                Loop::Stdio(caller) => caller.run(i, window, tally).await,
            }
        }));
    }
    tokio::time::sleep_until(window.start.into()).await;
    let machine_before = machine_window();
    let before = pid.map(proc_window_start);
    tokio::time::sleep_until(window.end.into()).await;
    let after = pid.map(proc_window_start);
    let machine_after = machine_window();
    for t in tasks {
        let _ = tokio::time::timeout(request_timeout + Duration::from_secs(1), t).await;
    }
    let mut tally = std::mem::take(&mut *tally.lock().expect("tally lock"));
    let latency = stats::summarize(&mut tally.latencies_us);
    let requests = latency.count as u64;
    let server = match (pid, before, after) {
        (Some(pid), Some(Ok(b)), Some(Ok(a))) => Some(proc_report(pid, &b, &a, requests)),
        (Some(pid), b, a) => {
            let e = [b, a]
                .into_iter()
                .flatten()
                .find_map(Result::err)
                .unwrap_or_default();
            tally.error(format!("cannot sample process {pid}: {e}"));
            None
        }
        _ => None,
    };
    let machine = match (machine_before, machine_after) {
        (Ok(b), Ok(a)) => Some(machine_report(&b, &a, requests)),
        _ => None,
    };
    Ok(Report {
        label: args.label,
        mode: args.mode,
        target,
        sessions: args.sessions,
        sessions_ready,
        warmup_s: args.warmup,
        duration_s: args.duration,
        requests,
        requests_per_s: requests as f64 / args.duration,
        latency,
        errors: tally.errors,
        error_samples: tally.samples,
        server,
        machine,
    })
}

/// This process's and the machine's CPU time, read at one end of the window.
fn machine_window() -> Result<(proc_stat::Sample, proc_stat::MachineSample), String> {
    Ok((
        proc_stat::sample(std::process::id())?,
        proc_stat::machine()?,
    ))
}

fn machine_report(
    before: &(proc_stat::Sample, proc_stat::MachineSample),
    after: &(proc_stat::Sample, proc_stat::MachineSample),
    requests: u64,
) -> MachineReport {
    let per_1000 = |ticks: u64| {
        if requests == 0 {
            0.0
        } else {
            ticks as f64 / proc_stat::TICKS_PER_SECOND * 1000.0 / requests as f64
        }
    };
    let (own_b, m_b) = before;
    let (own_a, m_a) = after;
    let busy = m_a.busy_ticks.saturating_sub(m_b.busy_ticks);
    let idle = m_a.idle_ticks.saturating_sub(m_b.idle_ticks);
    let steal = m_a.steal_ticks.saturating_sub(m_b.steal_ticks);
    let all = (busy + idle + steal).max(1) as f64;
    MachineReport {
        loadgen_cpu_s_per_1000_calls: per_1000(own_a.cpu_ticks.saturating_sub(own_b.cpu_ticks)),
        busy_cpu_s_per_1000_calls: per_1000(busy),
        idle_share: idle as f64 / all,
        steal_share: steal as f64 / all,
    }
}

/// A process and its descendants, read at one end of the window.
struct ProcWindow {
    own: proc_stat::Sample,
    descendants: HashMap<u32, proc_stat::Sample>,
}

fn proc_window_start(pid: u32) -> Result<ProcWindow, String> {
    let own = proc_stat::sample(pid)?;
    let descendants = proc_stat::descendants(pid)
        .into_iter()
        .filter_map(|d| proc_stat::sample(d).ok().map(|s| (d, s)))
        .collect();
    Ok(ProcWindow { own, descendants })
}

fn proc_report(pid: u32, before: &ProcWindow, after: &ProcWindow, requests: u64) -> ProcReport {
    let secs = |ticks: u64| ticks as f64 / proc_stat::TICKS_PER_SECOND;
    let mib = |kib: u64| kib as f64 / 1024.0;
    let cpu_s = secs(after.own.cpu_ticks.saturating_sub(before.own.cpu_ticks));
    let descendants_cpu_s = after
        .descendants
        .iter()
        .filter_map(|(d, a)| {
            before
                .descendants
                .get(d)
                .map(|b| a.cpu_ticks.saturating_sub(b.cpu_ticks))
        })
        .map(secs)
        .fold(0.0, |a, b| a + b);
    ProcReport {
        pid,
        cpu_s,
        cpu_s_per_1000_calls: if requests == 0 {
            0.0
        } else {
            cpu_s * 1000.0 / requests as f64
        },
        context_switches_per_call: if requests == 0 {
            0.0
        } else {
            after
                .own
                .context_switches
                .saturating_sub(before.own.context_switches) as f64
                / requests as f64
        },
        peak_rss_mib: mib(after.own.peak_rss_kib.max(before.own.peak_rss_kib)),
        rss_mib: mib(after.own.rss_kib),
        descendants: after.descendants.len(),
        descendants_cpu_s,
        descendants_rss_mib: mib(after.descendants.values().map(|s| s.rss_kib).sum()),
    }
}

/// Adds a loop's own latencies to the tally, once the loop has ended.
fn merge(tally: &Mutex<Tally>, mut latencies: Vec<u32>) {
    tally
        .lock()
        .expect("tally lock")
        .latencies_us
        .append(&mut latencies);
}

/// Records one finished call: its latency in `latencies` (the loop's own, merged
/// into the tally when it ends) when it ended inside the window, or its error in
/// the tally.
fn record(
    latencies: &mut Vec<u32>,
    tally: &Mutex<Tally>,
    window: &Window,
    sent: Instant,
    outcome: Result<(), String>,
) {
    let done = Instant::now();
    match outcome {
        Ok(()) if done >= window.start && done <= window.end => {
            let us = done
                .duration_since(sent)
                .as_micros()
                .min(u128::from(u32::MAX)) as u32;
            latencies.push(us);
        }
        Ok(()) => {}
        Err(e) => tally.lock().expect("tally lock").error(e),
    }
}

enum Loop {
    Http(HttpSession),
    Stdio(StdioCaller),
}

// ---- Streamable HTTP ----

/// Where the endpoint is: the address to connect to, the `Host` header and the path.
struct Target {
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target> {
        let uri: Uri = url.parse().with_context(|| format!("not a URL: {url}"))?;
        if uri.scheme_str() != Some("http") {
            bail!("only http:// URLs are supported: {url}");
        }
        let authority = uri
            .authority()
            .ok_or_else(|| anyhow!("no host in {url}"))?
            .to_string();
        let path = uri
            .path_and_query()
            .map_or("/".to_owned(), |p| p.to_string());
        Ok(Target { authority, path })
    }
}

/// The client half of a session's HTTP/1.1 connection: hyper's connection future,
/// polled by the session's own task (see [`with_connection`]) rather than a task of
/// its own, so a request and its response cost no wake-up of another task.
type Connection = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs `work` while also driving `connection` (until it ends: then `None`), in the
/// calling task.
async fn with_connection<F: Future>(connection: &mut Option<Connection>, work: F) -> F::Output {
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        if let Some(c) = connection.as_mut() {
            if c.as_mut().poll(cx).is_ready() {
                // The connection is gone: `work` now fails (or finishes) on its own.
                *connection = None;
                return work.as_mut().poll(cx);
            }
        }
        Poll::Pending
    })
    .await
}

/// One initialized Streamable HTTP session on its own connection.
struct HttpSession {
    sender: SendRequest<Full<Bytes>>,
    connection: Option<Connection>,
    /// The headers of every POST (Host, Content-Type, Accept, and once known
    /// MCP-Protocol-Version and Mcp-Session-Id), built once.
    headers: HeaderMap,
    path: Uri,
    /// The echo tool called.
    tool: Arc<str>,
}

async fn open_http_sessions(
    target: &Target,
    tool: &Arc<str>,
    n: usize,
    timeout: Duration,
    tally: &Arc<Mutex<Tally>>,
) -> Vec<Loop> {
    let mut opening = Vec::new();
    for _ in 0..n {
        let authority = target.authority.clone();
        let path = target.path.clone();
        let tool = tool.clone();
        opening.push(tokio::spawn(async move {
            tokio::time::timeout(timeout, HttpSession::open(authority, path, tool))
                .await
                .unwrap_or_else(|_| Err(anyhow!("session setup timed out")))
        }));
    }
    let mut loops = Vec::new();
    for o in opening {
        match o.await {
            Ok(Ok(s)) => loops.push(Loop::Http(s)),
            Ok(Err(e)) => tally
                .lock()
                .expect("tally lock")
                .error(format!("setup: {e:#}")),
            Err(e) => tally
                .lock()
                .expect("tally lock")
                .error(format!("setup task: {e}")),
        }
    }
    loops
}

/// A POST's reply: status, headers and the whole body.
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn content_type(&self) -> Option<&str> {
        self.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok())
    }

    /// The JSON-RPC messages of the body, parsed (session setup only).
    fn messages(&self) -> Result<Vec<Value>> {
        if self.body.is_empty() {
            return Ok(Vec::new());
        }
        match reply::messages(self.content_type(), &self.body) {
            Ok(m) => Ok(m),
            Err(_) if !self.status.is_success() => Ok(Vec::new()),
            Err(e) => Err(anyhow!(e)),
        }
    }
}

impl HttpSession {
    async fn open(authority: String, path: String, tool: Arc<str>) -> Result<HttpSession> {
        let stream = TcpStream::connect(&authority)
            .await
            .with_context(|| format!("connect {authority}"))?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_str(&authority)?);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let mut session = HttpSession {
            sender,
            connection: Some(Box::pin(async move {
                let _ = connection.await;
            })),
            headers,
            path: path
                .parse()
                .with_context(|| format!("not a path: {path}"))?,
            tool,
        };
        let init = session.post(echo::initialize_request(0)).await?;
        let messages = init.messages()?;
        if init.status != StatusCode::OK {
            bail!("initialize: HTTP {}", init.status);
        }
        let result = messages
            .iter()
            .find(|m| m.get("id").and_then(Value::as_u64) == Some(0))
            .and_then(|m| m.get("result"))
            .ok_or_else(|| anyhow!("initialize: no result in {messages:?}"))?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(echo::PROTOCOL_VERSION);
        session.headers.insert(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_str(version)?,
        );
        if let Some(id) = init.headers.get("mcp-session-id") {
            session
                .headers
                .insert(HeaderName::from_static("mcp-session-id"), id.clone());
        }
        let initialized = session
            .post(echo::initialized_notification().to_owned())
            .await?;
        if !initialized.status.is_success() {
            bail!("notifications/initialized: HTTP {}", initialized.status);
        }
        Ok(session)
    }

    /// POSTs one JSON-RPC text and reads the whole reply, driving the connection
    /// meanwhile.
    async fn post(&mut self, body: String) -> Result<Reply> {
        let mut request = Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.path.clone();
        *request.headers_mut() = self.headers.clone();
        let sender = &mut self.sender;
        with_connection(&mut self.connection, async move {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok(Reply {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        })
        .await
    }

    async fn call(&mut self, id: u64, text: &str) -> Result<(), String> {
        let reply = self
            .post(echo::call_tool_request(&self.tool, id, text))
            .await
            .map_err(|e| format!("tools/call: {e:#}"))?;
        if reply.status != StatusCode::OK {
            return Err(format!(
                "tools/call: HTTP {}: {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            ));
        }
        for json in reply::message_texts(reply.content_type(), &reply.body)? {
            if echo::check_call_reply_text(&json, id, text)? {
                return Ok(());
            }
        }
        Err(format!(
            "tools/call: no response in {}",
            String::from_utf8_lossy(&reply.body)
        ))
    }

    async fn run(mut self, session: usize, window: Window, tally: Arc<Mutex<Tally>>) {
        let mut counter = 0u64;
        let mut latencies = Vec::new();
        while Instant::now() < window.end {
            counter += 1;
            let text = echo::call_text(session, counter);
            let sent = Instant::now();
            let outcome =
                match tokio::time::timeout(window.request_timeout, self.call(counter, &text)).await
                {
                    Ok(o) => o,
                    Err(_) => Err("tools/call timed out".to_owned()),
                };
            let broken = outcome.is_err()
                && (self.sender.is_closed()
                    || outcome.as_ref().is_err_and(|e| e.contains("timed out")));
            record(&mut latencies, &tally, &window, sent, outcome);
            if broken {
                tally
                    .lock()
                    .expect("tally lock")
                    .error(format!("session {session}: connection lost, stopping"));
                break;
            }
        }
        merge(&tally, latencies);
    }
}

// ---- stdio ----

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// One loop's handle on the shared child: a line writer and the pending table.
struct StdioCaller {
    lines: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: Arc<std::sync::atomic::AtomicU64>,
    /// The echo tool called.
    tool: Arc<str>,
}

async fn open_stdio(
    cmd: &[String],
    tool: &Arc<str>,
    n: usize,
    timeout: Duration,
) -> Result<(tokio::process::Child, u32, Vec<Loop>)> {
    let (program, rest) = cmd
        .split_first()
        .ok_or_else(|| anyhow!("stdio mode needs a command after --"))?;
    let mut child = tokio::process::Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let pid = child.id().ok_or_else(|| anyhow!("the child has no pid"))?;
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let (lines, mut rx) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut out = BufWriter::with_capacity(64 * 1024, stdin);
        while let Some(line) = rx.recv().await {
            if out.write_all(line.as_bytes()).await.is_err() {
                return;
            }
            // Everything already queued goes in the same write.
            while let Ok(more) = rx.try_recv() {
                if out.write_all(more.as_bytes()).await.is_err() {
                    return;
                }
            }
            if out.flush().await.is_err() {
                return;
            }
        }
    });
    let pending: Pending = Arc::default();
    let table = pending.clone();
    tokio::spawn(async move {
        let mut input = BufReader::with_capacity(64 * 1024, stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match input.read_line(&mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let Some(id) = message.get("id").and_then(Value::as_u64) else {
                continue;
            };
            if let Some(waiter) = table.lock().expect("pending lock").remove(&id) {
                let _ = waiter.send(message);
            }
        }
        // The child is gone: fail everything still waiting.
        table.lock().expect("pending lock").clear();
    });
    let first = StdioCaller {
        lines,
        pending,
        next_id: Arc::new(std::sync::atomic::AtomicU64::new(1)),
        tool: tool.clone(),
    };
    let init = tokio::time::timeout(timeout, first.request(0, echo::initialize_request(0)))
        .await
        .map_err(|_| anyhow!("initialize timed out"))?
        .map_err(|e| anyhow!(e))?;
    if init.get("result").is_none() {
        bail!("initialize failed: {init}");
    }
    first
        .lines
        .send(format!("{}\n", echo::initialized_notification()))
        .map_err(|_| anyhow!("the child's stdin is closed"))?;
    let loops = (0..n)
        .map(|_| {
            Loop::Stdio(StdioCaller {
                lines: first.lines.clone(),
                pending: first.pending.clone(),
                next_id: first.next_id.clone(),
                tool: first.tool.clone(),
            })
        })
        .collect();
    Ok((child, pid, loops))
}

impl StdioCaller {
    async fn request(&self, id: u64, mut text: String) -> Result<Value, String> {
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending lock").insert(id, tx);
        text.push('\n');
        self.lines
            .send(text)
            .map_err(|_| "the child's stdin is closed".to_owned())?;
        rx.await
            .map_err(|_| "the child closed its stdout".to_owned())
    }

    async fn run(self, session: usize, window: Window, tally: Arc<Mutex<Tally>>) {
        let mut counter = 0u64;
        let mut latencies = Vec::new();
        while Instant::now() < window.end {
            counter += 1;
            let id = self
                .next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let text = echo::call_text(session, counter);
            let sent = Instant::now();
            let outcome = match tokio::time::timeout(
                window.request_timeout,
                self.request(id, echo::call_tool_request(&self.tool, id, &text)),
            )
            .await
            {
                Ok(Ok(reply)) => echo::check_call_reply(&reply, id, &text),
                Ok(Err(e)) => Err(e),
                Err(_) => {
                    self.pending.lock().expect("pending lock").remove(&id);
                    Err("tools/call timed out".to_owned())
                }
            };
            let fatal = outcome.as_ref().is_err_and(|e| e.contains("the child"));
            record(&mut latencies, &tally, &window, sent, outcome);
            if fatal {
                break;
            }
        }
        merge(&tally, latencies);
    }
}
