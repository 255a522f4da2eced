//! Other applications' server lists, read as they are: the `mcpServers` object
//! of Claude Desktop and Cursor, and VS Code's `servers`. Each entry becomes an
//! upstream of the same name (prefix: the name; a name with other characters
//! is served by a valid one, said in a note), its editor variables expanded.
//! Keys of the file beside the list belong to the application and are left
//! alone, but the gateway's own keys there are problems (they would not be
//! read); unknown keys inside an entry are problems.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::expand::{expand, Vars};
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
/// (`"disabled": true`) are skipped. A name the gateway cannot serve (a space,
/// a slash) is served as [`servable_name`] of it, said in `notes`.
pub(super) fn mcp_servers(
    problems: &mut Problems<'_>,
    key: &str,
    vars: &Vars<'_>,
    notes: &mut Vec<String>,
) -> Option<File> {
    let at = format!("/{key}");
    let Some(Value::Object(entries)) = problems.source.value.get(key).cloned() else {
        problems.push(&at, "must be an object of servers by name");
        return None;
    };
    let before = problems.list.len();
    let mut upstreams = BTreeMap::new();
    // Served name → the entry's name as written.
    let mut written: BTreeMap<String, String> = BTreeMap::new();
    for (name, entry) in &entries {
        let at = format!("{at}/{}", pointer_token(name));
        let Value::Object(entry) = entry else {
            problems.push(&at, "a server must be an object");
            continue;
        };
        let served = if super::valid_name(name) {
            name.clone()
        } else {
            match servable_name(name) {
                Some(s) => {
                    notes.push(format!(
                        "{key}.{name:?} is served as upstream {s:?} (its tools as {s}__NAME): \
                         a name is 1 to 32 letters, digits, '-' or '_'"
                    ));
                    s
                }
                None => {
                    problems.push(
                        &at,
                        format!("the name {name:?} has no letters or digits to serve it by"),
                    );
                    continue;
                }
            }
        };
        if let Some(other) = written.get(&served) {
            problems.push(
                &at,
                format!(
                    "{name:?} and {other:?} would both be served as upstream {served:?}: rename one"
                ),
            );
            continue;
        }
        written.insert(served.clone(), name.clone());
        if let Some(mut u) = entry_upstream(entry, &at, problems, vars) {
            if served != *name {
                u.written = Some(name.clone());
            }
            upstreams.insert(served, u);
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

/// One entry, its editor variables expanded; `None` when disabled or a
/// problem was found.
fn entry_upstream(
    entry: &Map<String, Value>,
    at: &str,
    problems: &mut Problems<'_>,
    vars: &Vars<'_>,
) -> Option<FileUpstream> {
    let before = problems.list.len();
    let mut known: Vec<&str> = KEYS.to_vec();
    known.extend_from_slice(CLIENT_KEYS);
    for key in entry.keys() {
        if key == "envFile" {
            problems.push(
                &format!("{at}/envFile"),
                "envFile is not read by switchboard: give the variables under `env`",
            );
        } else if !known.contains(&key.as_str()) {
            problems.push(
                &format!("{at}/{}", pointer_token(key)),
                super::unknown_key(key, KEYS),
            );
        }
    }
    if entry.get("disabled") == Some(&Value::Bool(true)) {
        return None;
    }
    let mut entry = entry.clone();
    for (key, value) in entry.iter_mut() {
        expand_all(
            value,
            &format!("{at}/{}", pointer_token(key)),
            problems,
            vars,
        );
    }
    let mut r = Reader {
        entry: &entry,
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
    (r.problems.list.len() == before).then_some(u)
}

/// Each string under `value` with its editor variables expanded in place;
/// each one that cannot be is a problem.
fn expand_all(value: &mut Value, at: &str, problems: &mut Problems<'_>, vars: &Vars<'_>) {
    match value {
        Value::String(s) => match expand(s, vars) {
            Ok(done) => *s = done,
            Err(e) => problems.push(at, e.to_string()),
        },
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                expand_all(item, &format!("{at}/{i}"), problems, vars);
            }
        }
        Value::Object(m) => {
            for (k, item) in m.iter_mut() {
                expand_all(item, &format!("{at}/{}", pointer_token(k)), problems, vars);
            }
        }
        _ => {}
    }
}

/// A name the gateway can serve for an entry named `name` (its upstream name
/// and prefix): letters, digits, '-' and '_' kept, any other run of
/// characters one '-', at most 32. `None` when nothing is left.
pub(super) fn servable_name(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    let out: String = out.trim_matches('-').chars().take(32).collect();
    let out = out.trim_end_matches('-').to_owned();
    (!out.is_empty()).then_some(out)
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
