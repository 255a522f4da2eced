//! The `toolNames` allowlist (`--allow-tool NAME`): what a downstream client may
//! see and call is the intersection of the list with what the upstream server
//! reports (MCP "Server features → Tools": `tools/list`, `tools/call`).
//!
//! - `tools/list` results are filtered to allowed names (the rest of the result,
//!   `nextCursor` and `_meta` included, is kept);
//! - `tools/call` for a name outside the list is refused with -32602 before it
//!   reaches the upstream server;
//! - an allowed name the upstream does not report is drift: logged at start-up and
//!   whenever the list changes ([`Allowlist::drift`]).
//!
//! No allowlist ([`Allowlist::All`], no `--allow-tool` given) allows every tool;
//! [`Allowlist::Only`] allows its names and nothing else, none when it is empty.
//! The choice is a value, never read off an empty set.
//!
//! This module must not know about transports, sessions or children.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::Error;

/// Which tools clients may see and call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Allowlist {
    /// Every tool the upstream reports (no allowlist configured). Default.
    #[default]
    All,
    /// Only these names, intersected with what the upstream reports.
    Only(BTreeSet<String>),
}

/// What the policy says of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Allow,
    Deny { reason: String },
}

#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
}

/// The `name` of a `tools/call` or `prompts/get` request's params (`None`:
/// no params, not an object, or no string `name`). Only `name` is read; the
/// arguments are skipped, not kept.
pub(crate) fn params_name(params: Option<&RawValue>) -> Option<std::borrow::Cow<'_, str>> {
    params
        .and_then(|p| serde_json::from_str::<Named<'_>>(p.get()).ok())
        .and_then(|n| n.name)
}

impl Allowlist {
    /// An allowlist of exactly `names`; an empty `names` allows nothing.
    pub fn only<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Self {
        Allowlist::Only(names.into_iter().map(Into::into).collect())
    }

    /// Whether the list restricts anything.
    pub fn is_restricted(&self) -> bool {
        matches!(self, Allowlist::Only(_))
    }

    /// Whether tool `name` may be listed and called.
    pub fn permits(&self, name: &str) -> bool {
        match self {
            Allowlist::All => true,
            Allowlist::Only(names) => names.contains(name),
        }
    }

    /// The decision for a call of the tool named `name` (`None`: the params
    /// name no tool).
    pub(crate) fn decide(&self, name: Option<&str>) -> Decision {
        match (self, name) {
            (Allowlist::All, _) => Decision::Allow,
            (_, Some(name)) if self.permits(name) => Decision::Allow,
            (_, Some(name)) => Decision::Deny {
                reason: format!("tool {name:?} is not available through this bridge"),
            },
            (_, None) => Decision::Deny {
                reason: "tools/call needs params.name".to_owned(),
            },
        }
    }

    /// For the tool a `tools/call` names ([`params_name`] of its params):
    /// [`Error::Refused`] (a -32602 answer) when it is not allowed or the
    /// params name no tool.
    pub(crate) fn check_name(&self, name: Option<&str>) -> Result<(), Error> {
        match self.decide(name) {
            Decision::Allow => Ok(()),
            Decision::Deny { reason } => Err(Error::Refused(reason)),
        }
    }

    /// A `tools/list` result with the tools outside the list removed; unchanged
    /// (not even parsed) when nothing is restricted, or when it is not an object
    /// with a `tools` array.
    pub fn filter_list_result(&self, result: Box<RawValue>) -> Box<RawValue> {
        if !self.is_restricted() {
            return result;
        }
        /// A tool's name, all this needs of it.
        #[derive(serde::Deserialize)]
        struct Named<'a> {
            #[serde(borrow)]
            name: Option<std::borrow::Cow<'a, str>>,
        }
        let permitted = |tool: &RawValue| {
            serde_json::from_str::<Named>(tool.get())
                .ok()
                .and_then(|t| t.name)
                .is_some_and(|n| self.permits(&n))
        };
        crate::raw::retain_items(&result, "tools", permitted).unwrap_or(result)
    }

    /// The allowed names missing from `reported` (the names the upstream lists).
    pub fn drift<'a>(&'a self, reported: &BTreeSet<String>) -> Vec<&'a str> {
        let Allowlist::Only(names) = self else {
            return Vec::new();
        };
        names
            .iter()
            .filter(|n| !reported.contains(*n))
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::raw;
    use serde_json::Value;

    fn check_call(a: &Allowlist, params: Option<&RawValue>) -> Result<(), Error> {
        a.check_name(params_name(params).as_deref())
    }

    #[test]
    fn no_list_allows_everything_and_leaves_results_alone() {
        let a = Allowlist::default();
        assert_eq!(a, Allowlist::All);
        assert!(a.permits("anything"));
        let text = r#"{"tools":[{"name":"a"}],"nextCursor":"c"}"#;
        assert_eq!(a.filter_list_result(raw(text)).get(), text);
        assert!(check_call(&a, Some(&raw(r#"{"name":"zzz"}"#))).is_ok());
    }

    #[test]
    fn lists_are_intersected_and_calls_refused() {
        let a = Allowlist::only(["echo", "missing"]);
        let out = a.filter_list_result(raw(
            r#"{"tools":[{"name":"echo","inputSchema":{}},{"name":"rm"}],"nextCursor":"c"}"#,
        ));
        let v: Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(v["tools"].as_array().unwrap().len(), 1);
        assert_eq!(v["tools"][0]["name"], "echo");
        assert_eq!(v["nextCursor"], "c");
        assert!(check_call(&a, Some(&raw(r#"{"name":"echo","arguments":{}}"#))).is_ok());
        let err = check_call(&a, Some(&raw(r#"{"name":"rm"}"#))).unwrap_err();
        assert!(err.to_string().contains("rm"));
        assert!(check_call(&a, None).is_err());
        let reported: BTreeSet<String> = ["echo".to_owned(), "rm".to_owned()].into();
        assert_eq!(a.drift(&reported), vec!["missing"]);
    }

    /// An empty `Only` is a list of nothing, not a list of everything.
    #[test]
    fn an_empty_only_list_allows_nothing() {
        let a = Allowlist::only(Vec::<String>::new());
        assert!(!a.permits("echo"));
        assert_eq!(
            a.filter_list_result(raw(r#"{"tools":[{"name":"echo"}]}"#))
                .get(),
            r#"{"tools":[]}"#
        );
        let err = check_call(&a, Some(&raw(r#"{"name":"echo"}"#))).unwrap_err();
        assert_eq!(err.code(), -32602);
        let table = [
            (Allowlist::All, Some("x"), true),
            (Allowlist::All, None, true),
            (Allowlist::only(["x"]), Some("x"), true),
            (Allowlist::only(["x"]), Some("y"), false),
            (Allowlist::only(["x"]), None, false),
        ];
        for (list, name, allowed) in table {
            assert_eq!(
                list.decide(name) == Decision::Allow,
                allowed,
                "{list:?} {name:?}"
            );
        }
    }

    /// The tools kept and the other members are the child's own text: numbers
    /// beyond `f64`, `-0`, escapes; a tool without a readable name goes.
    #[test]
    fn a_filtered_list_keeps_what_it_keeps_as_written() {
        let a = Allowlist::only(["écho", "big"]);
        let text = r#"{"tools":[{"name":"\u00e9cho","x":1.50},{"name":"rm"},{"name":"big","inputSchema":{"maximum":123456789012345678901234567890}},7,{"name":3}],"nextCursor":-0,"_meta":{"n":1e400}}"#;
        assert_eq!(
            a.filter_list_result(raw(text)).get(),
            r#"{"tools":[{"name":"\u00e9cho","x":1.50},{"name":"big","inputSchema":{"maximum":123456789012345678901234567890}}],"nextCursor":-0,"_meta":{"n":1e400}}"#
        );
    }
}
