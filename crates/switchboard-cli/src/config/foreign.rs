//! Other applications' server lists, read as they are: the `mcpServers` object
//! of Claude Desktop and Cursor, and VS Code's `servers`. Each entry becomes an
//! upstream of the same name (prefix: the name). Keys of the file beside the
//! list belong to the application and are left alone; unknown keys inside an
//! entry are problems.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::source::pointer_token;
use super::{File, FileHeader, FileUpstream, HttpTransport, Problems};

/// The keys an entry may have (both applications' documented ones).
const KEYS: &[&str] = &[
    "type", "command", "args", "env", "cwd", "url", "headers", "disabled",
];

/// Keys that are the client application's own business (its tool approvals,
/// its development mode), accepted and left alone.
const CLIENT_KEYS: &[&str] = &["autoApprove", "alwaysAllow", "disabledTools", "dev"];

/// Reads the list under `key` (`mcpServers` or `servers`). Disabled entries
/// (`"disabled": true`) are skipped.
pub(super) fn mcp_servers(problems: &mut Problems<'_>, key: &str) -> Option<File> {
    let at = format!("/{key}");
    let Some(Value::Object(entries)) = problems.source.value.get(key).cloned() else {
        problems.push(&at, "must be an object of servers by name");
        return None;
    };
    let before = problems.list.len();
    let mut upstreams = BTreeMap::new();
    for (name, entry) in &entries {
        let at = format!("{at}/{}", pointer_token(name));
        let Value::Object(entry) = entry else {
            problems.push(&at, "a server must be an object");
            continue;
        };
        if let Some(u) = entry_upstream(entry, &at, problems) {
            upstreams.insert(name.clone(), u);
        }
    }
    if upstreams.is_empty() && problems.list.len() == before {
        problems.push(&at, "no servers (or every one disabled)");
    }
    // Entries with problems are left out; `resolve` still checks the rest.
    Some(File {
        upstreams,
        ..File::default()
    })
}

/// One entry; `None` when disabled or a problem was found.
fn entry_upstream(
    entry: &Map<String, Value>,
    at: &str,
    problems: &mut Problems<'_>,
) -> Option<FileUpstream> {
    let before = problems.list.len();
    for key in entry.keys() {
        if key == "envFile" {
            problems.push(
                &format!("{at}/envFile"),
                "envFile is not read by switchboard: give the variables under `env`",
            );
        } else if !KEYS.contains(&key.as_str()) && !CLIENT_KEYS.contains(&key.as_str()) {
            problems.push(
                &format!("{at}/{}", pointer_token(key)),
                format!("unknown key (known: {})", KEYS.join(", ")),
            );
        }
    }
    let mut r = Reader {
        entry,
        at,
        problems,
    };
    if r.bool("disabled") == Some(true) {
        return None;
    }
    let kind = r.string("type");
    let mut u = FileUpstream {
        command: r.string("command"),
        args: r.strings("args"),
        env: r.string_map("env"),
        cwd: r.string("cwd"),
        url: r.string("url"),
        headers: r.string_map("headers").map(|h| {
            h.into_iter()
                .map(|(k, v)| (k, FileHeader::Value(v)))
                .collect()
        }),
        ..FileUpstream::default()
    };
    match kind.as_deref() {
        None => {}
        Some("stdio") if u.url.is_some() => r.push("type", "`stdio` with a `url`"),
        Some("stdio") => {}
        Some("http") => u.transport = Some(HttpTransport::Auto),
        Some("streamable-http" | "streamableHttp" | "streamable_http") => {
            u.transport = Some(HttpTransport::StreamableHttp)
        }
        Some("sse") => u.transport = Some(HttpTransport::Sse),
        Some(other) => r.push(
            "type",
            format!("unknown server type {other:?} (stdio, http, sse, streamable-http)"),
        ),
    }
    if u.transport.is_some() && u.command.is_some() {
        r.push("type", "an HTTP type with a `command`");
    }
    // The editors expand `${input:…}`, `${env:…}`, `${workspaceFolder}`;
    // switchboard would send them as they are.
    for (key, value) in entry {
        variables(value, &format!("{at}/{}", pointer_token(key)), r.problems);
    }
    (r.problems.list.len() == before).then_some(u)
}

/// Each string under `value` that holds an editor variable (`${...}`) is a
/// problem.
fn variables(value: &Value, at: &str, problems: &mut Problems<'_>) {
    match value {
        Value::String(s) if s.contains("${") => problems.push(
            at,
            "holds an editor variable (`${...}`), which switchboard does not expand: give the value itself",
        ),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                variables(item, &format!("{at}/{i}"), problems);
            }
        }
        Value::Object(m) => {
            for (k, item) in m {
                variables(item, &format!("{at}/{}", pointer_token(k)), problems);
            }
        }
        _ => {}
    }
}

/// Typed reads of an entry's members, each wrong type a problem.
struct Reader<'e, 'p, 's> {
    entry: &'e Map<String, Value>,
    at: &'e str,
    problems: &'p mut Problems<'s>,
}

impl Reader<'_, '_, '_> {
    fn push(&mut self, key: &str, message: impl Into<String>) {
        let at = format!("{}/{key}", self.at);
        self.problems.push(&at, message);
    }

    fn bool(&mut self, key: &str) -> Option<bool> {
        match self.entry.get(key)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.push(key, "must be true or false");
                None
            }
        }
    }

    fn string(&mut self, key: &str) -> Option<String> {
        match self.entry.get(key)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                self.push(key, "must be a string");
                None
            }
        }
    }

    fn strings(&mut self, key: &str) -> Option<Vec<String>> {
        match self.entry.get(key)? {
            Value::Array(items) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        _ => self.push(&format!("{key}/{i}"), "must be a string"),
                    }
                }
                Some(out)
            }
            _ => {
                self.push(key, "must be a list of strings");
                None
            }
        }
    }

    fn string_map(&mut self, key: &str) -> Option<BTreeMap<String, String>> {
        match self.entry.get(key)? {
            Value::Object(m) => {
                let mut out = BTreeMap::new();
                for (k, v) in m {
                    match v {
                        Value::String(s) => {
                            out.insert(k.clone(), s.clone());
                        }
                        _ => self.push(&format!("{key}/{}", pointer_token(k)), "must be a string"),
                    }
                }
                Some(out)
            }
            _ => {
                self.push(key, "must be an object of strings");
                None
            }
        }
    }
}
