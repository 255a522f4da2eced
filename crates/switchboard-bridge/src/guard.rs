//! The drift guard in front of clients: with a lock (`--lock`), the tools a
//! client sees and calls are judged against the definitions an operator
//! approved (`pin`). In `block` mode a tool that is new or whose definition
//! changed is withheld from `tools/list` and a call to it is refused before it
//! reaches the upstream; in `warn` mode it is served and logged. Each tool's
//! latest verdict comes from every list the upstream answers: the bridge's own
//! at each (re)connection and `notifications/tools/list_changed`, and every
//! client's, so a definition changed mid-session is caught before the next call.
//!
//! This module must not know about transports, sessions or children.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use serde_json::value::RawValue;
use serde_json::Value;
use tracing::warn;

use crate::pin::{definition, Kind, UpstreamLock};
use crate::raw::RawObject;

/// What the guard does with a tool that is not as approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GuardMode {
    /// Withheld from lists, calls refused.
    #[default]
    Block,
    /// Served, and logged.
    Warn,
}

/// A tool's latest verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Approved,
    /// Listed with another definition; its hash.
    Changed(String),
}

/// The guard of one upstream's tools.
#[derive(Debug)]
pub struct DriftGuard {
    lock: UpstreamLock,
    mode: GuardMode,
    /// Where the lock came from, for messages.
    source: String,
    /// Tool name → its latest verdict (tools never listed have none).
    seen: Mutex<HashMap<String, Verdict>>,
}

impl DriftGuard {
    /// Guards with `lock` (one upstream's entry of a lock file read from
    /// `source`).
    pub fn new(lock: UpstreamLock, mode: GuardMode, source: impl Into<String>) -> Self {
        DriftGuard {
            lock,
            mode,
            source: source.into(),
            seen: Mutex::new(HashMap::new()),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, HashMap<String, Verdict>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Judges one listed tool, records and logs the verdict; `true` when it is
    /// to be served.
    fn judge(&self, name: &str, tool: &Value) -> bool {
        let Some(approved) = self.lock.tools.get(name) else {
            warn!(tool = name, lock = %self.source, mode = ?self.mode, "drift: a tool that is not in the lock");
            return self.mode == GuardMode::Warn;
        };
        let hash = crate::pin::sha256_hex(&definition(Kind::Tool, tool));
        let verdict = if hash == approved.sha256 {
            Verdict::Approved
        } else {
            Verdict::Changed(hash)
        };
        let before = self.seen().insert(name.to_owned(), verdict.clone());
        if let Verdict::Changed(hash) = &verdict {
            if before.as_ref() != Some(&verdict) {
                warn!(tool = name, lock = %self.source, approved = %approved.sha256, listed = %hash, mode = ?self.mode, "drift: a tool's definition is not the approved one");
            }
            return self.mode == GuardMode::Warn;
        }
        true
    }

    /// Takes in a whole list (every page) the bridge fetched itself: each tool
    /// judged, approved tools the upstream no longer lists logged.
    pub fn observe(&self, tools: &[Value]) {
        let mut listed = BTreeSet::new();
        for tool in tools {
            if let Some(name) = tool.get("name").and_then(Value::as_str) {
                listed.insert(name);
                self.judge(name, tool);
            }
        }
        let gone: Vec<&str> = self
            .lock
            .tools
            .keys()
            .map(String::as_str)
            .filter(|n| !listed.contains(n))
            .collect();
        if !gone.is_empty() {
            warn!(?gone, lock = %self.source, "drift: approved tools the upstream no longer lists");
        }
    }

    /// A `tools/list` result with every tool judged; in block mode the ones not
    /// as approved are removed (the rest of the result kept as written).
    pub fn filter_list_result(&self, result: Box<RawValue>) -> Box<RawValue> {
        let Ok(mut obj) = RawObject::parse(result.get()) else {
            return result;
        };
        let Some(tools) = obj
            .get("tools")
            .and_then(|t| serde_json::from_str::<Vec<&RawValue>>(t.get()).ok())
        else {
            return result;
        };
        let mut kept = String::from("[");
        for tool in tools {
            let Ok(value) = serde_json::from_str::<Value>(tool.get()) else {
                continue;
            };
            let Some(name) = value.get("name").and_then(Value::as_str) else {
                continue;
            };
            if self.judge(name, &value) {
                if kept.len() > 1 {
                    kept.push(',');
                }
                kept.push_str(tool.get());
            }
        }
        kept.push(']');
        match RawValue::from_string(kept) {
            Ok(kept) => {
                obj.insert("tools", kept);
                obj.to_raw()
            }
            Err(_) => result,
        }
    }

    /// A `tools/call` for `name`: in block mode refused (the message for a
    /// -32602 answer) when the tool is not in the lock, or its latest listed
    /// definition is not the approved one.
    pub fn check_call(&self, name: &str) -> Result<(), String> {
        if self.mode == GuardMode::Warn {
            return Ok(());
        }
        if !self.lock.tools.contains_key(name) {
            return Err(format!(
                "tool {name:?} is not approved ({}): a new tool is served once approved (`switchboard lock approve`)",
                self.source
            ));
        }
        match self.seen().get(name) {
            Some(Verdict::Changed(hash)) => Err(format!(
                "tool {name:?} changed since it was approved ({}): its definition now hashes to {hash}; refused until approved (`switchboard lock approve`)",
                self.source
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pin::{Discovery, Identity};
    use serde_json::json;

    fn tool(description: &str) -> Value {
        json!({"name": "rm", "description": description, "inputSchema": {"type": "object"},
               "annotations": {"destructiveHint": true}})
    }

    fn guard(mode: GuardMode) -> DriftGuard {
        let d = Discovery {
            tools: vec![
                tool("Removes a file."),
                json!({"name": "ls", "inputSchema": {"type": "object"}}),
            ],
            ..Discovery::default()
        };
        let (lock, _) = UpstreamLock::pin(
            Identity::Url {
                url: "http://h/mcp".into(),
            },
            &d,
        );
        DriftGuard::new(lock, mode, "test.lock")
    }

    fn list(tools: &[Value]) -> Box<RawValue> {
        serde_json::value::to_raw_value(&json!({"tools": tools, "nextCursor": "c"})).unwrap()
    }

    fn names(result: &RawValue) -> Vec<String> {
        let v: Value = serde_json::from_str(result.get()).unwrap();
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn block_withholds_new_and_changed_tools_and_refuses_their_calls() {
        let g = guard(GuardMode::Block);
        // Before any list: approved names may be called, others not.
        assert_eq!(g.check_call("rm"), Ok(()));
        assert!(g.check_call("exec").unwrap_err().contains("not approved"));
        let out = g.filter_list_result(list(&[
            tool("Removes a file."),
            json!({"name": "exec", "inputSchema": {"type": "object"}}),
        ]));
        assert_eq!(names(&out), ["rm"]);
        assert!(out.get().contains("\"nextCursor\":\"c\""));
        // A rug pull: the same name, another definition.
        let mut pulled = tool("Removes a file.");
        pulled["annotations"]["destructiveHint"] = json!(false);
        let out = g.filter_list_result(list(&[pulled.clone()]));
        assert_eq!(names(&out), Vec::<String>::new());
        assert!(g
            .check_call("rm")
            .unwrap_err()
            .contains("changed since it was approved"));
        // Back as approved: served and callable again.
        g.observe(&[tool("Removes a file.")]);
        assert_eq!(g.check_call("rm"), Ok(()));
        // The bridge's own list catches it too.
        g.observe(&[pulled]);
        assert!(g.check_call("rm").is_err());
    }

    #[test]
    fn warn_serves_everything() {
        let g = guard(GuardMode::Warn);
        let out = g.filter_list_result(list(&[
            tool("Removes a file, and more."),
            json!({"name": "exec"}),
        ]));
        assert_eq!(names(&out), ["rm", "exec"]);
        assert_eq!(g.check_call("rm"), Ok(()));
        assert_eq!(g.check_call("exec"), Ok(()));
    }
}
