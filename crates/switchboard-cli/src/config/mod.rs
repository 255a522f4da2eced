//! The gateway's configuration file, read once into a validated [`GatewayConfig`].
//!
//! Three shapes are read: the project's own (TOML, YAML or JSON; every key in
//! `docs/gateway-config.schema.json`, which `switchboard config schema` prints),
//! and, as they are, the `mcpServers` JSON of Claude Desktop and Cursor and VS
//! Code's `servers`. Every problem is reported, one [`Problem`] with its place
//! each; unknown keys are problems. This module must not know how upstreams are
//! connected or how routes are served.

pub mod auth;
mod expand;
mod foreign;
mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use switchboard_gateway::ChildMode;

pub use auth::{AuthConfig, RouteAuth};
use source::{pointer_token, Source};
pub use source::{Format, Pos};

/// The JSON Schema of the project's own configuration shape.
pub const SCHEMA: &str = include_str!("../../../../docs/gateway-config.schema.json");

/// [`SCHEMA`], read once.
fn schema() -> &'static Value {
    static PARSED: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(SCHEMA).expect("the schema is JSON"))
}

/// The list timeout of an upstream that sets none.
pub const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The path of the route that serves every upstream unless a route claims it.
pub const DEFAULT_ROUTE_PATH: &str = "/mcp";

/// Paths the gateway serves itself (probes), never a route's.
const RESERVED_PATHS: &[&str] = &["/healthz", "/readyz"];

/// A validated configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayConfig {
    /// The address to listen on, when the file sets one.
    pub listen: Option<SocketAddr>,
    /// The admin listener's address, when the file sets one.
    pub admin: Option<SocketAddr>,
    /// How log lines are written, when the file says.
    pub log_format: Option<crate::telemetry::LogFormat>,
    /// The audit trail, when the file writes one.
    pub audit: Option<AuditSettings>,
    /// The upstreams, by name in ascending order.
    pub upstreams: Vec<UpstreamConfig>,
    /// The routes, by path in ascending order; the default route included.
    pub routes: Vec<RouteConfig>,
    /// The top-level `auth` table: the global authorization settings.
    pub auth: Option<AuthConfig>,
    /// What the bridge takes as flags (`allow_hosts`, `max_sessions`, the
    /// timeouts, `threads`, …), as the file sets them; checked.
    pub serve: crate::serve_args::ServeFile,
    /// What was read differently from how it was written (a server name
    /// served by another), one line each, for the reader to see.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// One upstream MCP server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpstreamConfig {
    pub name: String,
    /// The prefix of its served names (`{prefix}__{name}`); `None`: unprefixed.
    pub prefix: Option<String>,
    pub target: Target,
    /// How long a list request may take before its entries are left out.
    #[serde(serialize_with = "as_millis")]
    pub list_timeout: Duration,
}

/// Where an upstream is and how it is spoken to.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Target {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        child: ChildMode,
        /// Every variable of the gateway's environment, not only the safe
        /// set (`HOME`, `PATH`, the locale, …) and `env`.
        inherit_env: bool,
    },
    Http {
        url: String,
        transport: HttpTransport,
        /// Outbound headers in name order; values resolved at each connection.
        headers: Vec<(String, HeaderSource)>,
    },
}

/// How an HTTP upstream is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpTransport {
    /// Found as the library's client finds it (2026-07-28, then Streamable
    /// HTTP, then legacy HTTP+SSE).
    #[default]
    Auto,
    StreamableHttp,
    Sse,
    Stateless,
}

impl fmt::Display for HttpTransport {
    /// As the file writes it (`auto`, `streamable-http`, `sse`, `stateless`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HttpTransport::Auto => "auto",
            HttpTransport::StreamableHttp => "streamable-http",
            HttpTransport::Sse => "sse",
            HttpTransport::Stateless => "stateless",
        })
    }
}

/// Where an outbound header's value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeaderSource {
    Value(String),
    Env(String),
    File(PathBuf),
}

/// The value of an outbound header, read now (from the environment or a
/// file, trimmed). Errors: the variable unset, the file unreadable.
pub fn header_value(source: &HeaderSource) -> Result<String, String> {
    match source {
        HeaderSource::Value(v) => Ok(v.clone()),
        HeaderSource::Env(var) => {
            std::env::var(var).map_err(|_| format!("the environment variable {var} is not set"))
        }
        HeaderSource::File(path) => crate::files::read_text(path, crate::files::MAX_KEY_BYTES)
            .map(|s| s.trim().to_owned())
            .map_err(|e| format!("cannot read {}: {e}", path.display())),
    }
}

/// A virtual server at its own path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteConfig {
    pub name: String,
    pub path: String,
    /// The upstreams it serves, by name.
    pub upstreams: Vec<String>,
    pub tools: Allow,
    /// How it is protected (MCP authorization).
    pub auth: RouteAuth,
}

/// A tool allowlist (`toolNames`), as served names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allow {
    All,
    Only(BTreeSet<String>),
}

/// One thing wrong with a file: where (its place, when the parser gave one,
/// and the key path) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub pos: Option<Pos>,
    /// Dotted key path (`upstreams.time.args[1]`); empty for the whole file.
    pub path: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.pos {
            write!(f, "{}:{}: ", p.line, p.column)?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// Reads and validates the file at `path`; the format comes from its extension.
pub fn load(path: &Path) -> Result<GatewayConfig, Vec<Problem>> {
    let whole = |message: String| {
        vec![Problem {
            pos: None,
            path: String::new(),
            message,
        }]
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let Some(format) = Format::from_extension(ext) else {
        return Err(whole(format!(
            "unknown file type {ext:?}: the name must end in .toml, .yaml, .yml or .json"
        )));
    };
    let text = crate::files::read_text(path, crate::files::MAX_LOCK_BYTES)
        .map_err(|e| whole(format!("cannot read: {e}")))?;
    // A byte order mark (Windows editors write one) is not part of the text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let dir = std::path::absolute(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    parse(text, format, &Env::process(dir))
}

/// What validation reads of the outside world: environment variables, the
/// file's directory, and the files and programs the file names — the checks
/// the gateway would otherwise meet only at start. Passed in so that tests do
/// not depend on the host.
pub struct Env {
    var: Box<VarFn>,
    /// Whether a file can be read (headers' `file`).
    readable: Box<PathFn>,
    /// Whether a directory can be a child's working directory (`cwd`).
    directory: Box<PathFn>,
    /// Whether a child could be started as configured.
    program: Box<ProgramFn>,
    /// The file's directory, absolute: relative paths in the file are
    /// resolved against it.
    dir: PathBuf,
}

/// An environment variable's value, if set.
type VarFn = dyn Fn(&str) -> Option<String>;
/// A check of a path (the error's text if it fails).
type PathFn = dyn Fn(&Path) -> Result<(), String>;
/// A check that a child's program can be found and run.
type ProgramFn = dyn Fn(&switchboard_transport::stdio::ChildConfig) -> Result<(), String>;

impl Env {
    /// The process's environment and file system, for a file in `dir`.
    pub fn process(dir: PathBuf) -> Env {
        Env {
            var: Box::new(|name| std::env::var(name).ok()),
            readable: Box::new(|path| {
                std::fs::File::open(path)
                    .map(drop)
                    .map_err(|e| e.to_string())
            }),
            directory: Box::new(|path| match std::fs::metadata(path) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(_) => Err("not a directory".to_owned()),
                Err(e) => Err(e.to_string()),
            }),
            program: Box::new(|child| child.find_program().map(drop).map_err(|e| e.to_string())),
            dir,
        }
    }

    /// `path` as the file means it: a relative one against [`Env::base`].
    fn path(&self, path: &str) -> PathBuf {
        joined(self.base(), Path::new(path))
    }

    /// Where the file's relative paths start, and what `${workspaceFolder}`
    /// names: the folder holding `.vscode` or `.cursor` for a file in one (as
    /// the editors mean them), else the file's own directory.
    fn base(&self) -> &Path {
        let editor = matches!(
            self.dir.file_name().and_then(|n| n.to_str()),
            Some(".vscode" | ".cursor")
        );
        match self.dir.parent() {
            Some(parent) if editor => parent,
            _ => &self.dir,
        }
    }
}

/// `path` against `base` (an absolute `path` as it is), without `.` steps.
fn joined(base: &Path, path: &Path) -> PathBuf {
    base.join(path)
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

/// `unknown key`, with the nearest of `known` when one is close (a typo or
/// another case).
fn unknown_key(key: &str, known: &[&str]) -> String {
    let lower = key.to_ascii_lowercase();
    let near = known
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&lower, &k.to_ascii_lowercase()),
                k,
            )
        })
        .filter(|(d, k)| {
            (*d <= 2 && *d < k.len())
                || (lower.len() >= 3 && k.to_ascii_lowercase().starts_with(&lower))
        })
        .min_by_key(|(d, _)| *d);
    match near {
        Some((_, k)) => format!("unknown key (did you mean `{k}`?)"),
        None => format!("unknown key (known: {})", known.join(", ")),
    }
}

/// Validates `text` in `format`.
pub fn parse(text: &str, format: Format, env: &Env) -> Result<GatewayConfig, Vec<Problem>> {
    let source = Source::parse(text, format).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| Problem {
                pos: e.pos,
                path: String::new(),
                message: e.message,
            })
            .collect::<Vec<_>>()
    })?;
    if let Value::Object(m) = &source.value {
        let keys: Vec<&str> = ["mcpServers", "servers", "upstreams"]
            .into_iter()
            .filter(|k| m.contains_key(*k))
            .collect();
        if keys.len() > 1 && keys.contains(&"mcpServers") {
            let pos = source.place(&format!("/{}", keys[1]));
            return Err(vec![Problem {
                pos,
                path: keys[1].to_owned(),
                message: format!(
                    "holds both `{}` and `{}`: one list of servers, in one of the shapes",
                    keys[0], keys[1]
                ),
            }]);
        }
    }
    let shape = shape(&source.value);
    let mut problems = Problems {
        source: &source,
        list: Vec::new(),
        upstreams_at: match shape {
            Shape::McpServers => "/mcpServers",
            Shape::VsCode => "/servers",
            _ => "/upstreams",
        },
    };
    let mut notes = Vec::new();
    let workspace = env.base().to_string_lossy().into_owned();
    let vars = expand::Vars {
        workspace: &workspace,
        var: &*env.var,
    };
    let file = match shape {
        Shape::Own => own_shape(&mut problems),
        Shape::McpServers | Shape::VsCode => {
            let key = problems.upstreams_at.trim_start_matches('/');
            own_keys_beside(&mut problems, key);
            foreign::mcp_servers(&mut problems, key, &vars, &mut notes)
        }
        Shape::NotATable => {
            problems.push("", "the file must hold a table (an object) of settings");
            None
        }
    };
    let config = file.and_then(|file| resolve(file, &mut problems, env));
    match config {
        Some(mut config) if problems.list.is_empty() => {
            config.notes = notes;
            Ok(config)
        }
        _ => {
            // In the file's order; problems of the whole file first.
            let mut list = problems.list;
            list.sort_by_key(|p| p.pos.map(|p| (p.line, p.column)));
            Err(list)
        }
    }
}

/// The gateway's own top-level keys in another application's file are not
/// read there (the application owns the file's other keys): each is a
/// problem rather than a setting silently ignored.
fn own_keys_beside(problems: &mut Problems<'_>, list: &str) {
    let Some(Value::Object(own)) = schema().get("properties") else {
        return;
    };
    let Value::Object(top) = &problems.source.value else {
        return;
    };
    let found: Vec<String> = top
        .keys()
        .filter(|k| k.as_str() != list && !k.starts_with('$') && own.contains_key(k.as_str()))
        .cloned()
        .collect();
    for key in found {
        problems.push(
            &format!("/{}", pointer_token(&key)),
            format!(
                "`{key}` is a setting of the gateway's own file shape, not read beside \
                 `{list}`: give it as a flag of `switchboard gateway`, or move the servers \
                 under `upstreams`"
            ),
        );
    }
}

/// The problems found so far, with the source to place them.
struct Problems<'a> {
    source: &'a Source,
    list: Vec<Problem>,
    /// Where the upstreams stand in the file: `/upstreams`, or `/mcpServers`
    /// or `/servers` in another application's file.
    upstreams_at: &'static str,
}

impl Problems<'_> {
    /// Adds a problem at the value `pointer` (RFC 6901).
    fn push(&mut self, pointer: &str, message: impl Into<String>) {
        self.list.push(Problem {
            pos: self.source.place(pointer),
            path: key_path(&self.source.value, pointer),
            message: message.into(),
        });
    }
}

/// `/upstreams/a/args/1` → `upstreams.a.args[1]`, reading `value` to tell list
/// indexes from keys.
fn key_path(value: &Value, pointer: &str) -> String {
    let mut out = String::new();
    let mut at = Some(value);
    for token in pointer.split('/').skip(1) {
        let key = token.replace("~1", "/").replace("~0", "~");
        match at {
            Some(Value::Array(items)) => {
                out.push_str(&format!("[{key}]"));
                at = key.parse::<usize>().ok().and_then(|i| items.get(i));
            }
            _ => {
                if !out.is_empty() {
                    out.push('.');
                }
                let plain = !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if plain {
                    out.push_str(&key);
                } else {
                    out.push_str(&format!("{key:?}"));
                }
                at = at.and_then(|v| v.get(&key));
            }
        }
    }
    out
}

enum Shape {
    Own,
    McpServers,
    VsCode,
    NotATable,
}

fn shape(value: &Value) -> Shape {
    match value {
        Value::Object(m) if m.contains_key("mcpServers") => Shape::McpServers,
        Value::Object(m) if m.contains_key("servers") && !m.contains_key("upstreams") => {
            Shape::VsCode
        }
        Value::Object(_) => Shape::Own,
        _ => Shape::NotATable,
    }
}

/// The file's `audit`, resolved: the trail's file (a relative one against the
/// configuration file's directory) and settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditSettings {
    pub file: PathBuf,
    pub arguments: bool,
    pub max_bytes: u64,
    pub keep: usize,
    pub checkpoint_seconds: u64,
}

impl AuditSettings {
    /// The trail's configuration.
    pub fn to_config(&self) -> switchboard_gateway::audit::AuditConfig {
        let mut c = switchboard_gateway::audit::AuditConfig::new(&self.file);
        c.arguments = self.arguments;
        c.max_bytes = self.max_bytes;
        c.keep = self.keep;
        c.checkpoint_every = Duration::from_secs(self.checkpoint_seconds.max(1));
        c
    }
}

/// The file's `audit`: the trail's path, or a table.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum AuditValue {
    File(String),
    Table(FileAudit),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAudit {
    file: String,
    arguments: Option<bool>,
    max_bytes: Option<u64>,
    keep: Option<usize>,
    checkpoint_seconds: Option<u64>,
}

fn audit_settings(value: AuditValue) -> AuditSettings {
    let d = switchboard_gateway::audit::AuditConfig::new("");
    let t = match value {
        AuditValue::File(file) => FileAudit {
            file,
            arguments: None,
            max_bytes: None,
            keep: None,
            checkpoint_seconds: None,
        },
        AuditValue::Table(t) => t,
    };
    AuditSettings {
        file: PathBuf::from(t.file),
        arguments: t.arguments.unwrap_or(d.arguments),
        max_bytes: t.max_bytes.unwrap_or(d.max_bytes),
        keep: t.keep.unwrap_or(d.keep),
        checkpoint_seconds: t.checkpoint_seconds.unwrap_or(d.checkpoint_every.as_secs()),
    }
}

/// The file's `admin`: `"IP:PORT"`, `"PORT"`, or a port as a number.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum AdminValue {
    Text(String),
    Port(u64),
}

/// The project's own shape, as written (before cross-checks). Unknown keys
/// are the schema's to find ([`own_shape`]): `serve` is flattened in, which
/// serde's `deny_unknown_fields` does not allow.
#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(flatten)]
    serve: crate::serve_args::ServeFile,
    listen: Option<String>,
    admin: Option<AdminValue>,
    log_format: Option<String>,
    audit: Option<AuditValue>,
    #[serde(default)]
    upstreams: BTreeMap<String, FileUpstream>,
    #[serde(default)]
    routes: BTreeMap<String, FileRoute>,
    auth: Option<auth::FileAuth>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileUpstream {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<String>,
    child: Option<ChildMode>,
    inherit_env: Option<bool>,
    url: Option<String>,
    transport: Option<HttpTransport>,
    headers: Option<BTreeMap<String, FileHeader>>,
    prefix: Option<String>,
    timeout: Option<String>,
    /// Its name as the file writes it, when it is served by another.
    #[serde(skip)]
    written: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FileHeader {
    Value(String),
    Env { env: String },
    File { file: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoute {
    path: String,
    upstreams: Option<Vec<String>>,
    tools: Option<Vec<String>>,
    auth: Option<auth::FileRouteAuth>,
}

/// Checks the own shape against [`SCHEMA`], every violation a problem, then
/// reads it.
fn own_shape(problems: &mut Problems<'_>) -> Option<File> {
    let schema = schema();
    let validator = jsonschema::validator_for(schema).expect("the schema is valid");
    let value = &problems.source.value;
    let mut errors: Vec<(String, String)> = Vec::new();
    for error in validator.iter_errors(value) {
        let pointer = error.instance_path().to_string();
        match error.kind() {
            jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                let known = known_keys(schema, &pointer);
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                for key in unexpected {
                    errors.push((
                        format!("{pointer}/{}", pointer_token(key)),
                        unknown_key(key, &known),
                    ));
                }
            }
            // A route's `auth = true`, and a scope with a space: in words.
            jsonschema::error::ValidationErrorKind::Not { .. } if pointer.ends_with("/auth") => {
                errors.push((
                    pointer,
                    "`true` is not a setting: give a table, or `false` (open)".to_owned(),
                ))
            }
            jsonschema::error::ValidationErrorKind::Pattern { .. }
                if pointer.contains("/auth/") && pointer.contains("scopes/") =>
            {
                errors.push((
                    pointer,
                    "not an OAuth scope: printable ASCII without space, '\"' or '\\' (RFC 6749 §3.3)"
                        .to_owned(),
                ))
            }
            // One of a few words: all of them, and the nearest.
            jsonschema::error::ValidationErrorKind::Enum { options } => {
                let words: Vec<String> = options
                    .as_array()
                    .map(|o| o.iter().map(|v| v.to_string()).collect())
                    .unwrap_or_default();
                let given = error.instance().to_string();
                let plain: Vec<&str> = words.iter().map(|w| w.trim_matches('"')).collect();
                let near = unknown_key(given.trim_matches('"'), &plain);
                let hint = near
                    .strip_prefix("unknown key (did you mean ")
                    .map(|rest| format!(" (did you mean {}", rest))
                    .unwrap_or_default();
                errors.push((
                    pointer,
                    format!("{given} is not one of {}{hint}", words.join(", ")),
                ))
            }
            // A duration: said by example, as the flags say it.
            jsonschema::error::ValidationErrorKind::Pattern { pattern }
                if pattern.as_str() == DURATION_PATTERN =>
            {
                let text = error.instance().as_str().unwrap_or_default();
                let why = match crate::serve_args::parse_duration(text) {
                    Err(e) => e.to_string(),
                    Ok(_) => format!("{text:?} is not a duration: write e.g. \"5s\""),
                };
                errors.push((pointer, why))
            }
            _ => errors.push((pointer, schema_message(&error.to_string()))),
        }
    }
    errors.dedup();
    let ok = errors.is_empty();
    for (pointer, message) in errors {
        problems.push(&pointer, message);
    }
    if !ok {
        return None;
    }
    match serde_json::from_value::<File>(value.clone()) {
        Ok(file) => Some(file),
        Err(e) => {
            // The schema and the types say the same; a difference is ours.
            problems.push("", format!("not a valid configuration: {e}"));
            None
        }
    }
}

/// The schema's pattern of a duration (`5s`, `250ms`, `30m`, `2h`, `12`).
const DURATION_PATTERN: &str = "^[0-9]+(ms|s|m|h)?$";

/// The keys the schema knows for the object at `pointer` (for "did you
/// mean"): its `properties`, followed through `properties`,
/// `additionalProperties` (a map's values) and local `$ref`s.
fn known_keys(schema: &Value, pointer: &str) -> Vec<String> {
    fn resolve<'s>(schema: &'s Value, mut s: &'s Value) -> &'s Value {
        while let Some(r) = s.get("$ref").and_then(Value::as_str) {
            match r.strip_prefix('#').and_then(|p| schema.pointer(p)) {
                Some(next) => s = next,
                None => break,
            }
        }
        s
    }
    let mut at = resolve(schema, schema);
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        let next = at
            .get("properties")
            .and_then(|p| p.get(&token))
            .or_else(|| at.get("additionalProperties").filter(|a| a.is_object()));
        match next {
            Some(n) => at = resolve(schema, n),
            None => return Vec::new(),
        }
    }
    at.get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().filter(|k| !k.starts_with('$')).cloned().collect())
        .unwrap_or_default()
}

/// jsonschema's messages quote the whole offending value; keep them short.
fn schema_message(message: &str) -> String {
    const MAX: usize = 160;
    if message.chars().count() <= MAX {
        return message.to_owned();
    }
    let cut: String = message.chars().take(MAX).collect();
    format!("{cut}…")
}

/// Cross-checks a read file and builds the configuration. `None` when a
/// problem was found (each one pushed).
fn resolve(file: File, problems: &mut Problems<'_>, env: &Env) -> Option<GatewayConfig> {
    let before = problems.list.len();
    let listen = file.listen.as_deref().and_then(|s| match s.parse() {
        Ok(addr) => Some(addr),
        Err(_) => {
            problems.push(
                "/listen",
                format!("{s:?} is not an IP:PORT address (e.g. 127.0.0.1:8080)"),
            );
            None
        }
    });
    let admin_text = file.admin.map(|a| match a {
        AdminValue::Text(s) => s,
        AdminValue::Port(p) => p.to_string(),
    });
    let admin = admin_text
        .as_deref()
        .and_then(|s| match crate::bridge::parse_admin(s) {
            Ok(addr) => Some(addr),
            Err(why) => {
                problems.push("/admin", why);
                None
            }
        });
    let log_format = match file.log_format.as_deref() {
        None => None,
        Some("text") => Some(crate::telemetry::LogFormat::Text),
        Some("json") => Some(crate::telemetry::LogFormat::Json),
        Some(other) => {
            problems.push("/log_format", format!("{other:?} is not text or json"));
            None
        }
    };
    // Another application's entries with problems are left out: they are
    // the problem, not the empty list.
    let left_out = problems.upstreams_at != "/upstreams" && !problems.list.is_empty();
    if file.upstreams.is_empty() && !left_out {
        problems.push("", "no upstreams: at least one is needed");
    }
    let names: BTreeSet<String> = file.upstreams.keys().cloned().collect();
    let mut upstreams = Vec::new();
    for (name, u) in file.upstreams {
        if let Some(u) = upstream(&name, u, problems, env) {
            upstreams.push(u);
        }
    }
    check_prefixes(&upstreams, problems);
    let mut routes = Vec::new();
    let mut route_auth = Vec::new();
    let mut paths: BTreeMap<String, String> = BTreeMap::new();
    for (name, r) in file.routes {
        route_auth.push((name.clone(), r.auth));
        let at = format!("/routes/{}", pointer_token(&name));
        if RESERVED_PATHS.contains(&r.path.as_str()) {
            problems.push(
                &format!("{at}/path"),
                format!("{} is the gateway's own probe", r.path),
            );
        }
        if let Some(other) = paths.insert(r.path.clone(), name.clone()) {
            problems.push(
                &format!("{at}/path"),
                format!("{} is also the path of route {other:?}", r.path),
            );
        }
        let served = match r.upstreams {
            None => names.iter().cloned().collect(),
            Some(list) => {
                if list.is_empty() {
                    problems.push(&format!("{at}/upstreams"), "an empty list serves nothing");
                }
                for (i, u) in list.iter().enumerate() {
                    if !names.contains(u) {
                        problems.push(
                            &format!("{at}/upstreams/{i}"),
                            format!("no upstream is named {u:?}"),
                        );
                    }
                }
                list
            }
        };
        let tools = match r.tools {
            None => Allow::All,
            Some(list) => {
                check_allowlist(&at, &list, &served, &upstreams, problems);
                Allow::Only(list.into_iter().collect())
            }
        };
        routes.push(RouteConfig {
            name,
            path: r.path,
            upstreams: served,
            tools,
            auth: RouteAuth::Global,
        });
    }
    if !paths.contains_key(DEFAULT_ROUTE_PATH) {
        route_auth.push(("default".to_owned(), None));
        routes.push(RouteConfig {
            name: "default".to_owned(),
            path: DEFAULT_ROUTE_PATH.to_owned(),
            upstreams: names.iter().cloned().collect(),
            tools: Allow::All,
            auth: RouteAuth::Global,
        });
    }
    let (auth, protections) = auth::resolve(file.auth, &route_auth, problems, env);
    for (route, protection) in routes.iter_mut().zip(protections) {
        route.auth = protection;
    }
    routes.sort_by(|a, b| a.path.cmp(&b.path));
    let audit = file.audit.map(audit_settings).map(|mut a| {
        if !a.file.as_os_str().is_empty() {
            a.file = joined(env.base(), &a.file);
        }
        a
    });
    if audit
        .as_ref()
        .is_some_and(|a| a.file.as_os_str().is_empty())
    {
        problems.push("/audit", "the trail's file is empty".to_owned());
    }
    if let Err(bad) = crate::serve_args::ServeArgs::default().resolve(&file.serve) {
        for p in bad {
            problems.push(&format!("/{}", p.key), p.what);
        }
    }
    (problems.list.len() == before).then_some(GatewayConfig {
        listen,
        admin,
        log_format,
        audit,
        upstreams,
        routes,
        auth,
        serve: file.serve,
        notes: Vec::new(),
    })
}

fn upstream(
    name: &str,
    u: FileUpstream,
    problems: &mut Problems<'_>,
    env: &Env,
) -> Option<UpstreamConfig> {
    let written = u.written.as_deref().unwrap_or(name);
    let at = format!("{}/{}", problems.upstreams_at, pointer_token(written));
    if !valid_name(name) {
        problems.push(
            &at,
            format!(
                "the name {name:?} must be 1 to 32 letters, digits, '-' or '_', without \"__\""
            ),
        );
    }
    let prefix = match u.prefix {
        None => Some(name.to_owned()),
        Some(p) if p.is_empty() => None,
        Some(p) => {
            if !valid_name(&p) {
                problems.push(
                    &format!("{at}/prefix"),
                    "a prefix is 1 to 32 letters, digits, '-' or '_', without \"__\" (or empty: none)",
                );
            }
            Some(p)
        }
    };
    let list_timeout = match u.timeout.as_deref().map(crate::serve_args::parse_duration) {
        None => DEFAULT_LIST_TIMEOUT,
        Some(Ok(d)) if !d.is_zero() => d,
        Some(Ok(_)) => {
            problems.push(
                &format!("{at}/timeout"),
                "a timeout of zero would never wait",
            );
            DEFAULT_LIST_TIMEOUT
        }
        Some(Err(e)) => {
            problems.push(&format!("{at}/timeout"), e.to_string());
            DEFAULT_LIST_TIMEOUT
        }
    };
    let stdio_keys = [
        ("args", u.args.is_some()),
        ("env", u.env.is_some()),
        ("cwd", u.cwd.is_some()),
        ("child", u.child.is_some()),
        ("inherit_env", u.inherit_env.is_some()),
    ];
    let http_keys = [
        ("transport", u.transport.is_some()),
        ("headers", u.headers.is_some()),
    ];
    let target = match (u.command, u.url) {
        (Some(_), Some(_)) => {
            problems.push(
                &at,
                "has both `command` (stdio) and `url` (HTTP); an upstream is one of them",
            );
            None
        }
        (None, None) => {
            problems.push(
                &at,
                "needs `command` (a stdio server) or `url` (an HTTP server)",
            );
            None
        }
        (Some(command), None) => {
            for (key, set) in http_keys {
                if set {
                    problems.push(
                        &format!("{at}/{key}"),
                        "applies to HTTP upstreams (`url`), not to a stdio `command`",
                    );
                }
            }
            let stdio = Target::Stdio {
                command,
                args: u.args.unwrap_or_default(),
                env: u.env.unwrap_or_default(),
                cwd: u.cwd.map(|c| env.path(&c)),
                child: u.child.unwrap_or(ChildMode::Shared),
                inherit_env: u.inherit_env.unwrap_or(false),
            };
            Some(check_start(stdio, &at, problems, env))
        }
        (None, Some(url)) => {
            for (key, set) in stdio_keys {
                if set {
                    problems.push(
                        &format!("{at}/{key}"),
                        "applies to stdio upstreams (`command`), not to a `url`",
                    );
                }
            }
            if let Err(e) = switchboard_transport::http::client::check_endpoint_url(&url) {
                problems.push(&format!("{at}/url"), e);
            }
            let mut headers = Vec::new();
            for (hname, value) in u.headers.unwrap_or_default() {
                let hat = format!("{at}/headers/{}", pointer_token(&hname));
                if let Some(source) = header(&hname, value, &hat, problems, env) {
                    headers.push((hname, source));
                }
            }
            Some(Target::Http {
                url,
                transport: u.transport.unwrap_or_default(),
                headers,
            })
        }
    };
    // Kept despite problems of its own, so that routes and prefixes are still
    // checked against it; `resolve` fails when any problem was found.
    Some(UpstreamConfig {
        name: name.to_owned(),
        prefix,
        target: target?,
        list_timeout,
    })
}

fn header(
    name: &str,
    value: FileHeader,
    at: &str,
    problems: &mut Problems<'_>,
    env: &Env,
) -> Option<HeaderSource> {
    if let Err(e) = switchboard_transport::http::client::refuse_managed_header(name) {
        problems.push(at, e);
        return None;
    }
    if http::HeaderName::try_from(name).is_err() {
        problems.push(at, format!("{name:?} is not a valid header name"));
        return None;
    }
    match value {
        FileHeader::Value(v) => match http::HeaderValue::try_from(v.as_str()) {
            Ok(_) => Some(HeaderSource::Value(v)),
            Err(_) => {
                problems.push(at, "not a valid header value (control characters?)");
                None
            }
        },
        FileHeader::Env { env: var } => match (env.var)(&var) {
            Some(_) => Some(HeaderSource::Env(var)),
            None => {
                problems.push(
                    &format!("{at}/env"),
                    format!("the environment variable {var} is not set"),
                );
                None
            }
        },
        FileHeader::File { file } => match (env.readable)(&env.path(&file)) {
            Ok(()) => Some(HeaderSource::File(env.path(&file))),
            Err(e) => {
                problems.push(&format!("{at}/file"), format!("cannot read {file}: {e}"));
                None
            }
        },
    }
}

/// What the gateway checks as it starts a stdio upstream, checked now: its
/// `cwd` is a directory, and its `command` is found and executable. A relative
/// command path (`./server`) is resolved against `cwd`, else the file's
/// directory. Only the first failure is a problem (a missing `cwd` is not
/// also blamed on the command); the target is kept either way, for the
/// routes' checks.
fn check_start(target: Target, at: &str, problems: &mut Problems<'_>, env: &Env) -> Target {
    let Target::Stdio {
        mut command,
        args,
        env: vars,
        cwd,
        child,
        inherit_env,
    } = target
    else {
        return target;
    };
    let checked = |command| Target::Stdio {
        command,
        args: args.clone(),
        env: vars.clone(),
        cwd: cwd.clone(),
        child,
        inherit_env,
    };
    if let Some(dir) = &cwd {
        if let Err(e) = (env.directory)(dir) {
            problems.push(
                &format!("{at}/cwd"),
                format!(
                    "the working directory {} cannot be used: {e}",
                    dir.display()
                ),
            );
            return checked(command);
        }
    }
    if command.contains('/') && Path::new(&command).is_relative() {
        let base = cwd.as_deref().unwrap_or(env.base());
        command = joined(base, Path::new(&command))
            .to_string_lossy()
            .into_owned();
    }
    let mut c = switchboard_transport::stdio::ChildConfig::new("check", &command);
    if inherit_env {
        c.inherit = switchboard_transport::stdio::Inherit::All;
    }
    for (k, v) in &vars {
        c = c.env(k, v);
    }
    c.current_dir = cwd.clone();
    if let Err(e) = (env.program)(&c) {
        problems.push(&format!("{at}/command"), format!("cannot be run: {e}"));
    }
    checked(command)
}

/// Two upstreams with the same prefix would serve clashing names: a problem
/// seen at load. (Unprefixed upstreams can clash only at run time.)
fn check_prefixes(upstreams: &[UpstreamConfig], problems: &mut Problems<'_>) {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for u in upstreams {
        let Some(prefix) = u.prefix.as_deref() else {
            continue;
        };
        if let Some(other) = seen.insert(prefix, &u.name) {
            problems.push(
                &format!("{}/{}", problems.upstreams_at, pointer_token(&u.name)),
                format!(
                    "upstreams {other:?} and {:?} both have the prefix {prefix:?}: their tools and prompts would clash",
                    u.name
                ),
            );
        }
    }
}

/// An allowlisted name that no upstream of the route could serve (all of them
/// prefixed, none by its prefix) is a problem at load.
fn check_allowlist(
    at: &str,
    list: &[String],
    served: &[String],
    upstreams: &[UpstreamConfig],
    problems: &mut Problems<'_>,
) {
    let mut prefixes = Vec::new();
    for u in upstreams.iter().filter(|u| served.contains(&u.name)) {
        match &u.prefix {
            Some(p) => prefixes.push(format!("{p}__")),
            None => return,
        }
    }
    for (i, tool) in list.iter().enumerate() {
        if !prefixes.iter().any(|p| tool.starts_with(p.as_str())) {
            problems.push(
                &format!("{at}/tools/{i}"),
                format!(
                    "no upstream of this route serves {tool:?}: served names are {{prefix}}__{{name}}, prefixes here: {}",
                    prefixes.join(", ")
                ),
            );
        }
    }
}

fn valid_name(s: &str) -> bool {
    (1..=32).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !s.contains("__")
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

/// `switchboard config ...`.
#[derive(clap::Subcommand)]
pub enum ConfigCommand {
    /// Validate a configuration file (.toml, .yaml, .yml or .json: the gateway's
    /// own shape, an `mcpServers` file of Claude Desktop or Cursor, or VS Code's
    /// `servers`): exit 0 and a summary when it is valid, else one line per
    /// problem (`FILE:LINE:COLUMN: key.path: what`) and exit 2.
    Check {
        /// The configuration file.
        file: PathBuf,
        /// Print the validated configuration as JSON instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of the gateway's own configuration shape (for
    /// editors: completion and checks as you type).
    Schema,
}

/// Runs a `config` command; the exit status follows the binary's rule (0, or 2
/// with each problem on stderr).
pub fn run(command: ConfigCommand) -> std::process::ExitCode {
    use std::process::ExitCode;
    match command {
        ConfigCommand::Schema => {
            out(SCHEMA);
            ExitCode::SUCCESS
        }
        ConfigCommand::Check { file, json } => match load(&file) {
            Ok(config) => {
                for note in &config.notes {
                    eprintln!("{}: note: {note}", file.display());
                }
                if json {
                    let text = serde_json::to_string_pretty(&config).expect("plain data");
                    out(&format!("{text}\n"));
                } else {
                    out(&summary(&config));
                }
                ExitCode::SUCCESS
            }
            Err(problems) => {
                for p in &problems {
                    let sep = if p.pos.is_some() { ":" } else { ": " };
                    eprintln!("{}{sep}{p}", file.display());
                }
                let n = problems.len();
                let s = if n == 1 { "" } else { "s" };
                eprintln!("switchboard: {}: {n} problem{s}", file.display());
                ExitCode::from(2)
            }
        },
    }
}

/// Writes to stdout; a closed stdout (`| head`) is not an error.
fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// A few lines a person reads: each upstream and each route.
fn summary(config: &GatewayConfig) -> String {
    let mut out = String::new();
    if let Some(listen) = config.listen {
        out.push_str(&format!("listen  {listen}\n"));
    }
    for u in &config.upstreams {
        let prefix = u
            .prefix
            .as_deref()
            .map_or("(none)".to_owned(), |p| format!("{p}__"));
        let target = match &u.target {
            Target::Stdio {
                command,
                args,
                child,
                ..
            } => {
                format!("stdio ({child}): {command} {}", args.join(" "))
            }
            Target::Http { url, transport, .. } => format!("http ({transport}): {url}"),
        };
        out.push_str(&format!(
            "upstream  {}  prefix {prefix}  {}\n",
            u.name,
            target.trim_end()
        ));
    }
    if let Some(a) = &config.auth {
        out.push_str(&format!(
            "auth  issuer {}  resource {}\n",
            a.issuer,
            a.resource
                .as_deref()
                .unwrap_or("(none: every route has its own)")
        ));
    }
    for r in &config.routes {
        let tools = match &r.tools {
            Allow::All => "every tool".to_owned(),
            Allow::Only(set) => format!("{} allowed tool(s)", set.len()),
        };
        let auth = match &r.auth {
            RouteAuth::Global if config.auth.is_some() => {
                "  auth: the top-level table's".to_owned()
            }
            RouteAuth::Global => String::new(),
            RouteAuth::Off => "  auth: off".to_owned(),
            RouteAuth::Own(a) => format!(
                "  auth: resource {}",
                a.resource.as_deref().unwrap_or_default()
            ),
        };
        out.push_str(&format!(
            "route  {}  upstreams {}  {tools}{auth}\n",
            r.path,
            r.upstreams.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests;
