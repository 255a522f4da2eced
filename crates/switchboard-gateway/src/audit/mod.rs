//! The audit trail (`--audit FILE`): one JSON line per `tools/call`,
//! `prompts/get` and `resources/read` answered, and per request refused by
//! policy, sealed into a hash chain (module `chain`), with a checkpoint of
//! the chain's head beside the trail (`FILE.checkpoint`, at an interval and
//! at the end) and on `/metrics`.
//!
//! Writing never holds a call: a session hands its [`Entry`] to a bounded
//! queue ([`Audit::record`], never waiting) read by a thread of the trail's
//! own, which writes in batches. When the queue is full, or a write fails
//! (a full disk), the records are counted, the failure logged once, and the
//! first record written afterwards is a `gap` saying how many were lost and
//! why; the file is cut back to its last whole record, so the chain stays
//! intact. Files rotate by size (`FILE.1`, `FILE.2`, … oldest first), the
//! chain running on across them.
//!
//! This module must not know sessions, routes or policy: a session says what
//! was asked and how it ended.

pub mod chain;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use serde_json::value::RawValue;

use crate::metrics::{Name, Outcome};
use chain::{Checkpoint, Head};

/// What a trail is written with (`--audit`, the file's `audit` table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    /// The trail's file (appended to; its chain continued).
    pub path: PathBuf,
    /// A file this long, in bytes, is rotated (`FILE.N`) after its record.
    pub max_bytes: u64,
    /// Rotated files kept; the oldest beyond are removed (0: all kept).
    pub keep: usize,
    /// How often the checkpoint is written (and at the end).
    pub checkpoint_every: Duration,
    /// Whether records carry the arguments themselves (else only their
    /// SHA-256).
    pub arguments: bool,
}

impl AuditConfig {
    /// A trail at `path`: 64 MiB files, 16 kept, a checkpoint each 10 s, no
    /// arguments.
    pub fn new(path: impl Into<PathBuf>) -> AuditConfig {
        AuditConfig {
            path: path.into(),
            max_bytes: 64 << 20,
            keep: 16,
            checkpoint_every: Duration::from_secs(10),
            arguments: false,
        }
    }

    /// `FILE.checkpoint`.
    pub fn checkpoint_path(&self) -> PathBuf {
        sibling(&self.path, "checkpoint")
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".");
    s.push(suffix);
    PathBuf::from(s)
}

/// The rotated files of the trail at `path`, oldest first, then `path`.
pub fn files(path: &Path) -> io::Result<Vec<PathBuf>> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let base = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?
        .to_string_lossy()
        .into_owned();
    let mut rotated: Vec<(u64, PathBuf)> = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(n) = name
            .strip_prefix(&base)
            .and_then(|r| r.strip_prefix('.'))
            .and_then(|n| n.parse::<u64>().ok())
        {
            rotated.push((n, e.path()));
        }
    }
    rotated.sort();
    let mut all: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    all.push(path.to_owned());
    Ok(all)
}

/// One audited request, as its session saw it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// When it was answered.
    pub time: SystemTime,
    /// The endpoint path it came in at.
    pub route: Name,
    /// The caller's subject, when tokens are checked.
    pub subject: Option<Name>,
    /// The caller's client id, when its token names one.
    pub client_id: Option<Name>,
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: &'static str,
    /// The tool's or prompt's name, or the resource's URI.
    pub name: Option<String>,
    /// The upstream that answered, when one did.
    pub upstream: Option<Name>,
    /// The request's `arguments` (hashed when written).
    pub arguments: Option<Box<RawValue>>,
    /// How it ended: a result, `isError`, an error code, or cancelled.
    pub outcome: Outcome,
    /// Why policy refused it (`allowlist`, `drift`, …).
    pub refused: Option<String>,
    /// Not as approved, served in warn mode (`"drift":"drifted"`).
    pub drifted: bool,
    /// Its arrival to its answer.
    pub duration: Duration,
}

/// How long the writer lets records gather once one arrives: at most
/// this late on disk, and one write (and one wake) per batch under load.
const LINGER: Duration = Duration::from_millis(5);

enum Msg {
    Entry(Box<Entry>),
    /// Write the checkpoint and say so.
    Checkpoint(mpsc::Sender<()>),
}

/// Why a trail cannot be started.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file cannot be opened, read or cut, or the writer not started.
    #[error("audit trail {path}: {source}")]
    Io {
        /// The trail's file.
        path: String,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// This process writes a trail already (one per process).
    #[error("an audit trail is already written by this process")]
    Started,
}

/// A running trail.
pub struct Audit {
    queue: SyncSender<Msg>,
    /// Entries the full queue turned away since the writer last looked.
    dropped: AtomicU64,
    config: AuditConfig,
}

static AUDIT: OnceLock<Audit> = OnceLock::new();

/// The process's trail, once [`start`]ed.
#[inline]
pub fn get() -> Option<&'static Audit> {
    AUDIT.get()
}

/// Entries the queue holds before a session's record is dropped (and counted).
const QUEUE: usize = 16 * 1024;

/// Starts the process's trail: its file opened (created, or its chain
/// continued from its last record), its writer thread running.
///
/// Errors: the file cannot be opened or read; a trail already runs.
pub fn start(config: AuditConfig) -> Result<&'static Audit, AuditError> {
    if AUDIT.get().is_some() {
        return Err(AuditError::Started);
    }
    let io = |source| AuditError::Io {
        path: config.path.display().to_string(),
        source,
    };
    let storage = Files::open(&config).map_err(io)?;
    let (queue, inbox) = mpsc::sync_channel(QUEUE);
    let audit = Audit {
        queue,
        dropped: AtomicU64::new(0),
        config: config.clone(),
    };
    if AUDIT.set(audit).is_err() {
        return Err(AuditError::Started);
    }
    let mut writer = Writer::new(Box::new(storage), config.arguments);
    let every = config.checkpoint_every;
    std::thread::Builder::new()
        .name("audit".into())
        .spawn(move || writer.run(inbox, every))
        .map_err(io)?;
    Ok(AUDIT.get().expect("set above"))
}

impl Audit {
    /// Hands `entry` to the writer; never waits (a full queue drops it,
    /// counted, and a `gap` record says so).
    pub fn record(&self, entry: Entry) {
        match self.queue.try_send(Msg::Entry(Box::new(entry))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                if let Some(m) = crate::metrics::get() {
                    m.audit_lost(1);
                }
            }
        }
    }

    /// Writes what is queued and the checkpoint, waiting at most `bound`
    /// (at shutdown).
    pub fn flush(&self, bound: Duration) {
        let (tx, rx) = mpsc::channel();
        let deadline = Instant::now() + bound;
        // The queue may be full: retry until the bound.
        let mut msg = Msg::Checkpoint(tx);
        loop {
            match self.queue.try_send(msg) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) if Instant::now() < deadline => {
                    msg = m;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return,
            }
        }
        let _ = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
    }

    /// Its configuration.
    pub fn config(&self) -> &AuditConfig {
        &self.config
    }
}

/// Where sealed lines go: the trail's files (or, in tests, a storage that
/// fails on purpose).
trait Storage: Send {
    /// Appends whole lines.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Cuts the current file back to `len` bytes (a write that failed).
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// The current file's length.
    fn len(&self) -> u64;
    /// Starts a new file, the current one renamed to the next `FILE.N`.
    fn rotate(&mut self) -> io::Result<()>;
    /// Writes the checkpoint's text (replacing the last).
    fn checkpoint(&mut self, text: &str) -> io::Result<()>;
    /// The head of what is already written (a trail continued).
    fn head(&self) -> Head;
    fn max_bytes(&self) -> u64;
}

struct Files {
    config: AuditConfig,
    file: std::fs::File,
    len: u64,
    head: Head,
}

impl Files {
    fn open(config: &AuditConfig) -> io::Result<Files> {
        // A device, a FIFO or a directory cannot be cut back, rotated or
        // read again (and a FIFO would hold the start until read).
        match std::fs::metadata(&config.path) {
            Ok(m) if !m.file_type().is_file() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a regular file (the trail is read back, cut and rotated)",
                ))
            }
            _ => {}
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&config.path)?;
        let text = std::fs::read(&config.path)?;
        // The chain goes on from the last whole record; a line cut by a
        // crash is cut off the file (verify would name it otherwise).
        let mut good = 0u64;
        let mut head = None;
        let mut at = 0usize;
        for line in text.split_inclusive(|&b| b == b'\n') {
            at += line.len();
            let Some(body) = line.strip_suffix(b"\n") else {
                break;
            };
            match std::str::from_utf8(body).ok().map(chain::open) {
                Some(Ok(s)) => {
                    head = Some(Head {
                        count: s.seq + 1,
                        hash: s.hash,
                    });
                    good = at as u64;
                }
                _ => break,
            }
        }
        if good < text.len() as u64 {
            file.set_len(good)?;
        }
        // An empty current file continues the last rotated one's chain.
        let head = match head {
            Some(h) => h,
            None => last_head(&config.path).unwrap_or_default(),
        };
        Ok(Files {
            config: config.clone(),
            file,
            len: good,
            head,
        })
    }
}

/// The head of the newest rotated file of `path`, if any.
fn last_head(path: &Path) -> Option<Head> {
    let all = files(path).ok()?;
    let newest = all.iter().rev().nth(1)?;
    let text = std::fs::read_to_string(newest).ok()?;
    let last = text.lines().last()?;
    let s = chain::open(last).ok()?;
    Some(Head {
        count: s.seq + 1,
        hash: s.hash,
    })
}

impl Storage for Files {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.len = len;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn rotate(&mut self) -> io::Result<()> {
        let all = files(&self.config.path)?;
        let next = all
            .iter()
            .filter_map(|p| p.extension()?.to_str()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0)
            + 1;
        std::fs::rename(
            &self.config.path,
            sibling(&self.config.path, &next.to_string()),
        )?;
        self.file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.config.path)?;
        self.len = 0;
        if self.config.keep > 0 {
            let rotated = files(&self.config.path)?;
            let rotated = &rotated[..rotated.len() - 1];
            for old in rotated
                .iter()
                .take(rotated.len().saturating_sub(self.config.keep))
            {
                let _ = std::fs::remove_file(old);
            }
        }
        Ok(())
    }

    fn checkpoint(&mut self, text: &str) -> io::Result<()> {
        let path = self.config.checkpoint_path();
        let tmp = sibling(&path, "tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)
    }

    fn head(&self) -> Head {
        self.head
    }

    fn max_bytes(&self) -> u64 {
        self.config.max_bytes
    }
}

/// The writer thread's state: the chain as sealed, and as written.
struct Writer {
    storage: Box<dyn Storage>,
    arguments: bool,
    /// The head of what is sealed (written or in `batch`).
    head: Head,
    /// The head of what is written.
    written: Head,
    batch: Vec<u8>,
    /// Records in `batch` (a gap record not counted).
    in_batch: u64,
    /// Records lost since the last written one, and why.
    lost: u64,
    why: Option<String>,
}

impl Writer {
    fn new(storage: Box<dyn Storage>, arguments: bool) -> Writer {
        let head = storage.head();
        if let Some(m) = crate::metrics::get() {
            m.audit_head(head.count, &head.hash);
        }
        Writer {
            storage,
            arguments,
            head,
            written: head,
            batch: Vec::new(),
            in_batch: 0,
            lost: 0,
            why: None,
        }
    }

    fn run(&mut self, inbox: mpsc::Receiver<Msg>, every: Duration) {
        let mut next = Instant::now() + every;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            let first = match inbox.recv_timeout(wait) {
                Ok(m) => {
                    // Let a batch gather: sessions handing records to a
                    // queue no one waits on wake no one (a wake per record
                    // cost more than the record).
                    if matches!(m, Msg::Entry(_)) {
                        std::thread::sleep(LINGER);
                    }
                    Some(m)
                }
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut done = Vec::new();
            let mut msg = first;
            while let Some(m) = msg {
                match m {
                    Msg::Entry(e) => self.add(&e),
                    Msg::Checkpoint(tx) => done.push(tx),
                }
                msg = inbox.try_recv().ok();
            }
            self.write();
            if !done.is_empty() || Instant::now() >= next {
                self.checkpoint();
                next = Instant::now() + every;
            }
            for tx in done {
                let _ = tx.send(());
            }
        }
        self.write();
        self.checkpoint();
    }

    /// Seals `entry` into the batch (after a gap record, if records were lost).
    fn add(&mut self, entry: &Entry) {
        let dropped = get().map_or(0, |a| a.dropped.swap(0, Ordering::Relaxed));
        if dropped > 0 {
            self.lost += dropped;
            self.why.get_or_insert_with(|| "the queue was full".into());
        }
        if self.lost > 0 && self.in_batch == 0 && self.batch.is_empty() {
            let gap = gap_body(entry.time, self.lost, self.why.as_deref().unwrap_or(""));
            self.push(&gap);
        }
        let body = body(entry, self.arguments);
        self.push(&body);
        self.in_batch += 1;
    }

    fn push(&mut self, body: &str) {
        let line = self.head.seal(body);
        self.batch.extend_from_slice(line.as_bytes());
        self.batch.push(b'\n');
    }

    /// Writes the batch; on failure cuts the file back and counts the
    /// batch's records as lost.
    fn write(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let before = self.storage.len();
        match self.storage.append(&self.batch) {
            Ok(()) => {
                if self.why.take().is_some() && self.lost > 0 {
                    tracing::info!(lost = self.lost, "the audit trail is written again");
                }
                self.lost = 0;
                self.written = self.head;
                if let Some(m) = crate::metrics::get() {
                    m.audit_head(self.head.count, &self.head.hash);
                }
                if self.storage.len() >= self.storage.max_bytes() {
                    if let Err(e) = self.storage.rotate() {
                        tracing::warn!(error = %e, "the audit trail could not be rotated");
                    }
                }
            }
            Err(e) => {
                let _ = self.storage.truncate(before);
                if self.why.is_none() {
                    tracing::warn!(error = %e, "the audit trail cannot be written: records are counted and a gap recorded when it can");
                }
                if let Some(m) = crate::metrics::get() {
                    m.audit_lost(self.in_batch);
                }
                self.lost += self.in_batch;
                self.why = Some(e.to_string());
                self.head = self.written;
            }
        }
        self.batch.clear();
        self.in_batch = 0;
    }

    fn checkpoint(&mut self) {
        let time = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        let text = Checkpoint { head: self.written }.to_text(&time);
        if let Err(e) = self.storage.checkpoint(&text) {
            tracing::warn!(error = %e, "the audit checkpoint could not be written");
        }
    }
}

/// Cuts `s` to at most `max` bytes (at a character boundary), saying how
/// long it was: `…[N bytes]`.
pub(crate) fn cut(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let total = s.len();
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.truncate(at);
    s.push_str(&format!("…[{total} bytes]"));
}

fn push_str(out: &mut String, key: &str, value: &str) {
    out.push_str(",\"");
    out.push_str(key);
    out.push_str("\":");
    out.push_str(&serde_json::to_string(value).unwrap_or_default());
}

fn time_of(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// A record's members (module `chain` adds `seq`, `prev`, `hash`).
fn body(e: &Entry, arguments: bool) -> String {
    let mut out = String::with_capacity(256);
    out.push_str("\"time\":\"");
    out.push_str(&time_of(e.time));
    out.push_str("\",\"kind\":");
    out.push_str(if e.refused.is_some() {
        "\"refused\""
    } else {
        "\"call\""
    });
    push_str(&mut out, "route", e.route.as_str());
    if let Some(s) = &e.subject {
        push_str(&mut out, "subject", s.as_str());
    }
    if let Some(c) = &e.client_id {
        push_str(&mut out, "client_id", c.as_str());
    }
    if !e.method.is_empty() {
        push_str(&mut out, "method", e.method);
    }
    if let Some(n) = &e.name {
        push_str(&mut out, "name", n);
    }
    if let Some(u) = &e.upstream {
        push_str(&mut out, "upstream", u.as_str());
    }
    if let Some(a) = &e.arguments {
        let canonical =
            serde_json::from_str::<serde_json::Value>(a.get()).map(|v| crate::pin::sha256_hex(&v));
        if let Ok(hash) = canonical {
            push_str(&mut out, "arguments_sha256", &hash);
        }
        if arguments {
            out.push_str(",\"arguments\":");
            out.push_str(a.get());
        }
    }
    let (outcome, code) = e.outcome.word();
    push_str(&mut out, "outcome", outcome);
    if let Some(c) = code {
        out.push_str(",\"code\":");
        out.push_str(itoa::Buffer::new().format(c));
    }
    if let Some(r) = &e.refused {
        push_str(&mut out, "reason", r);
    }
    if e.drifted {
        push_str(&mut out, "drift", "drifted");
    }
    out.push_str(",\"duration_ms\":");
    let ms = e.duration.as_secs_f64() * 1000.0;
    out.push_str(&format!("{ms:.3}"));
    out
}

fn gap_body(time: SystemTime, lost: u64, why: &str) -> String {
    let mut out = String::new();
    out.push_str("\"time\":\"");
    out.push_str(&time_of(time));
    out.push_str("\",\"kind\":\"gap\",\"lost\":");
    out.push_str(itoa::Buffer::new().format(lost));
    push_str(&mut out, "why", why);
    out
}

#[cfg(test)]
mod tests;
